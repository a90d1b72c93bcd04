// runtime/store/session.cpp: run stack over the store (see session.h).
#include "runtime/store/session.h"

#include <cstdio>

#include "runtime/core/error.h"

namespace ltrun::store {
namespace {
Session* g_active = nullptr;
}

Session::Session(std::shared_ptr<Store> store, RunStart top) : store_(std::move(store)), top_(std::move(top)) {
  runs_.push_back(store_->begin_run(top_));
  g_active = this;
}

Session::~Session() {
  try {
    while (!runs_.empty()) end(runs_.back(), Status::failed, "run was not closed");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ltrun: %s\n", e.what());
  }
  if (g_active == this) g_active = nullptr;
}

int64_t Session::current() const {
  LT_CHECK(!runs_.empty(), "no run is open");
  return runs_.back();
}

int64_t Session::begin_child(const std::string& name) {
  RunStart r = top_;
  r.parent_id = current();
  r.rerun_of.reset();
  r.name = name;
  r.script_text.clear();  // the root run holds the text; children point to it by parent_id
  r.args_json = "[]";
  runs_.push_back(store_->begin_run(r));
  return runs_.back();
}

void Session::end(int64_t run, Status s, const std::string& error) {
  LT_CHECK(!runs_.empty() && runs_.back() == run, "run {} is not the innermost open run", run);
  runs_.pop_back();
  store_->end_run(run, s, error);
}

Session* Session::active() { return g_active; }

}  // namespace ltrun::store
