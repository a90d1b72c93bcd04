// runtime/store/session.cpp: run stack over the store (see session.h).
#include "runtime/store/session.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "runtime/core/error.h"
#include "runtime/core/interrupt.h"
#include "runtime/store/artifact.h"

namespace ltrun::store {
namespace {
constexpr auto kGrace = std::chrono::seconds(3);  // time a Ctrl-C gets to be honoured
constexpr auto kPoll = std::chrono::milliseconds(100);
}

Session::Session(std::shared_ptr<Store> store, RunStart top) : store_(std::move(store)), top_(std::move(top)) {
  runs_.push_back(store_->begin_run(top_));
  watchdog_ = std::thread([this] { watch_interrupt(); });
}

void Session::watch_interrupt() {
  auto since = std::chrono::steady_clock::time_point::max();
  while (!stopping_) {
    std::this_thread::sleep_for(kPoll);
    if (!interrupt_pending() || interrupt_checked()) {  // C++ code that stops by itself runs
      since = std::chrono::steady_clock::time_point::max();
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    if (since == std::chrono::steady_clock::time_point::max()) since = now;
    if (now - since < kGrace) continue;
    // The script ignores Ctrl-C: close its runs as interrupted, keeping what they logged.
    std::lock_guard<std::mutex> lock(mu_);
    try {
      while (!runs_.empty()) {
        store_->end_run(runs_.back(), Status::interrupted,
                        "interrupted (Ctrl-C); the script did not stop by itself and was ended");
        runs_.pop_back();
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ltrun: %s\n", e.what());
    }
    std::fprintf(stderr, "ltrun: interrupted (the script did not stop within %lld s)\n",
                 (long long)std::chrono::duration_cast<std::chrono::seconds>(kGrace).count());
    _exit(130);
  }
}

Session::~Session() {
  stopping_ = true;
  if (watchdog_.joinable()) watchdog_.join();
  for (const auto& e : end_all(Status::failed, "run was not closed")) std::fprintf(stderr, "ltrun: %s\n", e.c_str());
}

int64_t Session::current() const {
  std::lock_guard<std::mutex> lock(mu_);
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
  const int64_t id = store_->begin_run(r);
  std::lock_guard<std::mutex> lock(mu_);
  runs_.push_back(id);
  return id;
}

void Session::end(int64_t run, Status s, const std::string& error) {
  std::lock_guard<std::mutex> lock(mu_);
  LT_CHECK(!runs_.empty() && runs_.back() == run, "run {} is not the innermost open run", run);
  runs_.pop_back();
  store_->end_run(run, s, error);
}

std::vector<std::string> Session::end_all(Status s, const std::string& error) {
  std::vector<std::string> errors;
  for (;;) {
    int64_t run;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (runs_.empty()) break;
      run = runs_.back();
    }
    try {
      end(run, s, error);
    } catch (const std::exception& e) {
      errors.push_back(e.what());
    }
  }
  return errors;
}

void Session::metric(const std::string& name, double value, std::optional<int64_t> step) {
  store_->metric(current(), name, value, step);
}

void Session::layer_metric(const std::string& name, int64_t layer, const std::string& grp, double value,
                           std::optional<int64_t> step) {
  store_->layer_metric(current(), name, layer, grp, value, step);
}

void Session::param(const std::string& key, const std::string& value) { store_->param(current(), key, value); }

void Session::eval_item(const EvalRecord& e) { store_->eval_item(current(), e); }

std::string Session::artifact(const std::string& path, const std::string& kind) {
  return register_artifact(*store_, current(), path, kind);
}

void Session::flush() { store_->flush(); }

}  // namespace ltrun::store
