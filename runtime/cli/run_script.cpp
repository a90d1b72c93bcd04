// runtime/cli/run_script.cpp: running a script (or -e chunk, or rerun) as a run in the store:
// the run row is opened first, the script's outcome closes it as ok/failed/interrupted, or
// removes it when the script stopped at a mistake in its args (is_usage_error).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <map>

#include "runtime/cli/cli.h"
#include "runtime/core/device.h"
#include "runtime/core/env.h"
#include "runtime/core/error.h"
#include "runtime/core/inputs.h"
#include "runtime/core/sha256.h"
#include "runtime/dist/dist.h"
#include "runtime/io/atomic_file.h"
#include "runtime/store/run_admin.h"
#include "runtime/store/session.h"

namespace ltrun::cli {

namespace {

// A mistake in the script's args (lt.study.args.usage_error, lib/lt/study/args.lua): its error
// object prints as one line that starts with kUsageErrorPrefix, without a traceback (the
// interpreter shows an error object by its __tostring, bindings/interp.cpp). A string error always
// carries a traceback, so one line with the prefix comes from such an object only.
bool is_usage_error(const Outcome& o) {
  return o.kind == Outcome::error && o.message.rfind(kUsageErrorPrefix, 0) == 0 &&
         o.message.find('\n') == std::string::npos;
}

bool is_help_shown(const Outcome& o) { return o.kind == Outcome::error && o.message == kHelpShown; }

// whether run `run` began anything: a child run or a metric (a usage error after that is a
// failure of a run that did work, kept as such)
bool began_work(store::Store& st, int64_t run) {
  const auto t = st.query("SELECT (SELECT count(*) FROM runs WHERE parent_id = ?1) + "
                          "(SELECT count(*) FROM metrics WHERE run_id = ?1)", {store::Value(run)});
  return !t.rows.empty() && store::to_text(t.rows[0][0]) != "0";
}

}  // namespace

std::string capture_lib_dir() {
  const char* env = std::getenv("LTRUN_LIB");
  return env && *env ? env : LTRUN_LIB_DIR;
}

int run_script(const Globals& g, const ScriptRun& r) {
  c10::Device device = parse_device(g.device);
  const uint64_t seed = g.seed ? *g.seed : r.seed ? *r.seed : kDefaultSeed;
  // several ranks (ltrun launch, Slurm): one group per process, cuda:LOCAL_RANK on GPUs, and
  // one run in the store, written by rank 0 (the other ranks log into a store in memory)
  const dist::Env denv = dist::env_from_environment();
  // (--device auto or cuda: the rank's own GPU; cuda:N names one GPU for every rank)
  if (denv.world_size > 1 && device.is_cuda() && g.device.find(':') == std::string::npos) {
    const int n = cuda_device_count();
    LT_CHECK(denv.local_rank < n,
             "rank {} (local rank {}) needs cuda:{}, and {} GPU(s) are visible: launch at most {} rank(s) per node, "
             "or run on --device cpu",
             denv.rank, denv.local_rank, denv.local_rank, n, n);
    device = c10::Device(c10::kCUDA, c10::DeviceIndex(denv.local_rank));
  }
  struct DistGuard {
    ~DistGuard() { dist::shutdown(); }
  } dist_guard;
  if (denv.world_size > 1) dist::init(denv, "auto", device.str());
  // a -e chunk is kept only with --log (a study always is)
  const bool kept = denv.rank == 0 && (!r.script_path.empty() || r.rerun_of || g.parent || g.log);
  auto store = store::Store::open(kept ? g.db : ":memory:");

  store::RunStart start;
  start.name = g.name.empty() ? r.name : g.name;
  start.parent_id = g.parent;
  start.script_path = r.script_path;
  start.script_text = r.code;
  start.script_sha256 = sha256_hex(r.code);
  start.args_json = nlohmann::json(r.args).dump();
  start.device = device.str();
  start.seed = int64_t(seed);
  start.rerun_of = r.rerun_of;
  start.torch_version = torch_version();
  if (!r.script_path.empty()) start.git_rev = git_revision(dir_name(r.script_path));

  store::Session session(store, start);
  // an -e chunk without --log (rank 0; other ranks keep to their memory store, whose rank 0 may be
  // creating the file) reads the --db store
  if (!kept && denv.rank == 0 && file_exists(g.db)) session.read_from(store::Store::open_readonly(g.db));
  const int64_t run_id = session.root();
  if (r.new_run) *r.new_run = run_id;
  for (const auto& [k, v] : r.params) store->param(run_id, k, v);
  // what the run executes and reads (runtime/store/capture.h); LTRUN_CAPTURE=0 turns it off
  // (the capture bench's baseline), except in a replay, which needs it to serve the sources
  const char* cap_env = std::getenv("LTRUN_CAPTURE");
  // (ranks other than 0 log into a store in memory: nothing of theirs is kept)
  const bool capture_on = r.stored_sources || (denv.rank == 0 && !(cap_env && std::string(cap_env) == "0"));
  store::Capture capture(store, run_id, r.script_path, capture_lib_dir());
  struct CaptureGuard {
    bool on;
    ~CaptureGuard() {
      if (!on) return;
      set_input_listener({});
      store::set_current_capture(nullptr);
    }
  } capture_guard{capture_on};
  if (capture_on) {
    capture.script(start.name, r.code);
    if (r.stored_sources) {
      std::map<std::string, store::SourceFile> by_name;
      for (const auto& f : *r.stored_sources)
        if (f.kind == "module") by_name.emplace(f.name, f);
      capture.serve(std::move(by_name), r.rerun_of.value_or(0));
    }
    store::set_current_capture(&capture);
    set_input_listener([&capture](const std::string& kind, const std::string& path) { capture.input(kind, path); });
  }
  if (dist::Group* dg = dist::active()) {
    store->param(run_id, "world_size", std::to_string(dg->world_size()));
    store->param(run_id, "dist_backend", dg->backend());
    // `ltrun launch` closes this run as failed should rank 0 be killed (runtime/cli/launch.cpp)
    if (const char* ld = std::getenv("LTRUN_LAUNCH_DIR"); ld && dg->is_main())
      io::write_file_atomic(std::string(ld) + "/run", std::to_string(run_id) + "\n");
  }
  seed_all(seed);
  Outcome o;
  {
    const std::unique_ptr<ScriptHost> host = g.make_host();
    RunContext ctx;
    ctx.seed = seed;
    ctx.device = device.str();
    ctx.sink = &session;
    ctx.session = &session;
    host->set_run(ctx);
    host->set_script(r.script_path.empty() ? r.chunk_name : r.script_path, r.args);
    o = host->run(r.code, r.chunk_name);
  }
  if (capture_on && std::getenv("LTRUN_CAPTURE_STATS"))  // experiments/bench/capture.lua reads it
    std::fprintf(stderr, "ltrun capture: %.6f s, %lld files hashed\n", capture.seconds(),
                 (long long)capture.files_hashed());
  const bool help = is_help_shown(o);
  if ((help || is_usage_error(o)) && !began_work(*store, run_id)) {
    const std::vector<std::string> errors = session.end_all(help ? store::Status::ok : store::Status::failed,
                                                            help ? "" : o.message);
    if (!help) std::fprintf(stderr, "%s\n", o.message.c_str());
    if (r.new_run) *r.new_run = 0;
    for (const auto& e : errors) std::fprintf(stderr, "ltrun: closing the run failed: %s\n", e.c_str());
    if (!errors.empty()) return kExitUsage;  // (the row stays, for `ltrun runs` to show)
    // The run row had to exist while the script started (its sources are recorded as it loads
    // them), and the study's args are known only once the script has declared them.
    try {
      store::remove_runs(*store, {run_id});
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ltrun: run %lld stays in %s as failed: removing it failed: %s\n", (long long)run_id,
                   g.db.c_str(), e.what());
    }
    return help ? kExitOk : kExitUsage;
  }
  // child runs a failing script left open end with it
  const store::Status status = o.kind == Outcome::ok            ? store::Status::ok
                               : o.kind == Outcome::interrupted ? store::Status::interrupted
                                                                     : store::Status::failed;
  // A store error while closing (a flush that fails: disk full, a dropped table) is reported
  // beside the script's own error, never instead of it; the runs still close (as failed).
  const std::vector<std::string> store_errors = session.end_all(status, o.message);
  if (o.kind == Outcome::ok && store_errors.empty()) return kExitOk;
  if (!o.message.empty()) std::fprintf(stderr, "%s\n", o.message.c_str());
  for (const auto& e : store_errors) std::fprintf(stderr, "ltrun: closing the run failed: %s\n", e.c_str());
  const bool interrupted = status == store::Status::interrupted;
  if (kept)
    std::fprintf(stderr, "ltrun: run %lld %s (%s)\n", (long long)run_id, interrupted ? "interrupted" : "failed",
                 g.db.c_str());
  else if (denv.rank == 0)
    std::fprintf(stderr, "ltrun: %s (not stored; --log stores it)\n", interrupted ? "interrupted" : "failed");
  else  // its run lives in memory; rank 0's is the one in the store
    std::fprintf(stderr, "ltrun: rank %d %s\n", denv.rank, interrupted ? "interrupted" : "failed");
  return interrupted ? kExitInterrupted : kExitFailed;
}

}  // namespace ltrun::cli
