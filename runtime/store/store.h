// runtime/store/store.h: the SQLite run store. One connection per process, WAL, a busy
// timeout, schema by PRAGMA user_version from db/migrations; metric-like rows are buffered
// and written in one transaction at least every second, before a run ends, and on close.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace ltrun::store {

enum class Status { running, ok, failed, interrupted, crashed };
const char* status_name(Status s);

struct RunStart {
  std::optional<int64_t> parent_id, rerun_of;
  std::string name, script_path, script_sha256, script_text, args_json = "[]";
  std::string device, git_rev, torch_version;
  std::optional<int64_t> seed;
};

struct EvalItem {
  std::string bench, item_id, category, protocol, prediction, answer;
  std::optional<bool> correct;
};

using Value = std::variant<std::monostate, int64_t, double, std::string>;
struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<Value>> rows;
};
std::string to_text(const Value& v);  // NULL → ""

class Store {
 public:
  // Opens (creating if needed) and migrates; marks `running` rows of this host whose process
  // is gone as `crashed`. A file that is not an ltrun store is an error naming the file.
  static std::shared_ptr<Store> open(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::string& path() const;
  int schema_version() const;

  int64_t begin_run(const RunStart& r);
  void end_run(int64_t run, Status s, const std::string& error = "");
  Status run_status(int64_t run);

  void param(int64_t run, const std::string& key, const std::string& value);
  // step defaults to one more than the last step this process logged for (run, name), from 0
  void metric(int64_t run, const std::string& name, double value, std::optional<int64_t> step = {});
  void layer_metric(int64_t run, const std::string& name, int64_t layer, const std::string& grp,
                    double value, std::optional<int64_t> step = {});
  void eval_item(int64_t run, const EvalItem& item);
  void artifact(int64_t run, const std::string& kind, const std::string& path, const std::string& sha256);
  void flush();
  size_t pending() const;

  Table query(const std::string& sql, const std::vector<Value>& binds = {});

  struct Impl;

 private:
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A named query for `ltrun sql @name`: ./db/queries/NAME.sql, then the source tree's, then
// the copy compiled into the binary. Error lists the names that exist.
std::string named_query(const std::string& name);
std::vector<std::string> named_query_names();

}  // namespace ltrun::store
