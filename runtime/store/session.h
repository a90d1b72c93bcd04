// runtime/store/session.h: the runs of this process: the top-level run and the stack of
// child runs under it. It is the run context's sink (runtime/core/run_context.h): what is
// logged goes to "the current run", the innermost open one.
// A watchdog ends the process as `interrupted` when a Ctrl-C is not honoured within a few
// seconds (code that never checks, such as a JIT-compiled Lua loop, which skips hooks).
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/core/run_context.h"
#include "runtime/store/store.h"

namespace ltrun::store {

class Session : public RunSink {
 public:
  Session(std::shared_ptr<Store> store, RunStart top);
  ~Session() override;  // a run still open here ends as `failed` ("not closed")

  Store& store() { return *store_; }
  const RunStart& top() const { return top_; }
  int64_t current() const;  // innermost open run
  int64_t root() const { return runs_.front(); }
  size_t depth() const { return runs_.size(); }

  // A nested run: same script and seed, parent = current(); pushed until end().
  int64_t begin_child(const std::string& name);
  // Ends the innermost run (must be `run`) with a final status. Store::end_run's errors
  // (a failed flush) are thrown after the run is closed and popped.
  void end(int64_t run, Status s, const std::string& error = "");
  // Ends every open run, innermost first, with status s and the same error text; returns the
  // errors of the closings that failed (each run is still closed as far as the store allows).
  std::vector<std::string> end_all(Status s, const std::string& error = "");

  // Reads (SQL over the store, or over `reads` when set) and a scan's job leases taken for
  // current() (Store::take_lease).
  Table query(const std::string& sql, const std::vector<Value>& binds) {
    return (reads_ ? reads_ : store_)->query(sql, binds);
  }
  // Queries read `reads` (a read-only opener of the user's store) instead of the session's own
  // store: a REPL or -e session that is not kept (no --log) writes to memory and still reads
  // the --db store.
  void read_from(std::shared_ptr<Store> reads) { reads_ = std::move(reads); }
  std::optional<Lease> take_lease(const std::string& key, const std::string& job, int64_t pid) {
    return store_->take_lease(key, job, pid, current());
  }
  void release_lease(const std::string& key, const std::string& job, int64_t pid) {
    store_->release_lease(key, job, pid);
  }

  // RunSink: writes to current()
  int64_t run_id() const override { return current(); }
  void metric(const std::string& name, double value, std::optional<int64_t> step = std::nullopt) override;
  void layer_metric(const std::string& name, int64_t layer, const std::string& grp, double value,
                    std::optional<int64_t> step = std::nullopt) override;
  void param(const std::string& key, const std::string& value) override;
  void eval_item(const EvalRecord& e) override;
  std::string artifact(const std::string& path, const std::string& kind) override;
  void flush() override;

 private:
  std::shared_ptr<Store> reads_;
  void watch_interrupt();

  std::shared_ptr<Store> store_;
  RunStart top_;
  mutable std::mutex mu_;
  std::vector<int64_t> runs_;
  std::atomic<bool> stopping_{false};
  std::thread watchdog_;
};

}  // namespace ltrun::store
