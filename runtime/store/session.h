// runtime/store/session.h: the runs of this process: the top-level run and the stack of
// child runs under it, so that anything (Lua or C++) can log to "the current run".
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/store/store.h"

namespace ltrun::store {

class Session {
 public:
  Session(std::shared_ptr<Store> store, RunStart top);
  ~Session();  // a run still open here ends as `failed` ("not closed")

  Store& store() { return *store_; }
  const RunStart& top() const { return top_; }
  int64_t current() const;  // innermost open run
  int64_t root() const { return runs_.front(); }
  size_t depth() const { return runs_.size(); }

  // A nested run: same script and seed, parent = current(); pushed until end().
  int64_t begin_child(const std::string& name);
  // Ends the innermost run (must be `run`) with a final status.
  void end(int64_t run, Status s, const std::string& error = "");

  static Session* active();  // the process's session, or nullptr

 private:
  std::shared_ptr<Store> store_;
  RunStart top_;
  std::vector<int64_t> runs_;
};

}  // namespace ltrun::store
