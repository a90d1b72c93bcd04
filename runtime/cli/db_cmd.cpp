// runtime/cli/db_cmd.cpp: `ltrun db merge OUT.db IN.db ...`: run stores of shards (a job
// array, several nodes, a colleague's runs) merged into one (runtime/store/merge.h).
#include <fmt/format.h>

#include <cstdio>

#include "runtime/cli/cli.h"
#include "runtime/core/env.h"
#include "runtime/core/error.h"
#include "runtime/store/merge.h"

namespace ltrun::cli {
namespace {

const char kDbUsage[] = R"(usage:
  ltrun db merge [--include-running] OUT.db IN.db ...
      copy the runs of each IN into OUT (created if missing): new ids, parent/rerun links
      and every run's rows kept. A run OUT already holds (same uuid) is skipped and counted;
      a copy OUT holds of a run that was still running then is completed. The inputs are only
      read (never migrated or switched to WAL; read-only files and folders are fine).
      A run still running in an input is not copied, nor the runs under it (merge again when
      it has ended); one whose process is gone is copied as crashed.
  --include-running   copy running runs too, as they are now (a partial copy, said so in
                      its error text; a later merge completes it)
)";

}  // namespace

int cmd_db(const Globals&, const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kDbUsage, args.empty() ? stderr : stdout);
    return args.empty() ? kExitUsage : kExitOk;
  }
  LT_CHECK(args[0] == "merge", "db: unknown subcommand '{}' (merge)", args[0]);
  store::MergeOptions opt;
  std::vector<std::string> stores;
  for (size_t i = 1; i < args.size(); i++) {
    if (args[i] == "--include-running") opt.include_running = true;
    else if (args[i].rfind("--", 0) == 0) fail("db merge: unknown option {} (see ltrun db --help)", args[i]);
    else stores.push_back(args[i]);
  }
  LT_CHECK(stores.size() >= 2, "usage: ltrun db merge OUT.db IN.db ... [--include-running] (got {} store(s))",
           stores.size());
  const std::string out = stores[0];
  const std::vector<std::string> inputs(stores.begin() + 1, stores.end());
  std::function<void(size_t, size_t)> progress;
  if (stderr_is_terminal())
    progress = [](size_t i, size_t n) { fmt::print(stderr, "\rmerging: {}/{} stores", i, n); if (i == n) fmt::print(stderr, "\n"); };
  // run names, uuids, table names and paths come from the stores: escaped, in the report and
  // in errors, so that they cannot drive the terminal
  auto safe = [](const std::string& s) { return escape_controls(s, false); };
  std::vector<store::MergeInput> report;
  try {
    report = store::merge_stores(out, inputs, opt, progress);
  } catch (const std::exception& e) {
    throw Error(escape_controls(e.what(), true));
  }
  const std::string o = safe(out);
  int64_t added = 0, already = 0, completed = 0, running = 0;
  for (const auto& r : report) {
    const std::string p = safe(r.path);
    if (r.added)
      fmt::print("{}: {} of {} runs added as runs {}..{} ({} rows)", p, r.added, r.runs, r.first_id, r.last_id, r.rows);
    else
      fmt::print("{}: none of {} runs added", p, r.runs);
    if (r.completed) fmt::print(", {} completed (copied before while running)", r.completed);
    if (r.already) fmt::print(", {} already in {} (merged before)", r.already, o);
    if (r.running) fmt::print(", {} still running: not copied", r.running);
    fmt::print("\n  read as: {}\n", safe(r.read_as));
    if (r.crashed)
      fmt::print("  {} run(s) left running by a process that is gone: copied as crashed\n", r.crashed);
    if (r.partial)
      fmt::print("  {} run(s) still running: copied as they are now (--include-running), a partial copy; "
                 "merge {} again after they have ended to complete them\n", r.partial, p);
    for (const auto& n : r.still_running) fmt::print("  still running, not copied: {}\n", safe(n));
    if (!r.still_running.empty())
      fmt::print("  merge {} again after they have ended, or pass --include-running to copy what they "
                 "have so far\n", p);
    for (const auto& n : r.notes) fmt::print("  note: {}\n", safe(n));
    added += r.added;
    already += r.already;
    completed += r.completed;
    running += r.running;
  }
  fmt::print("{}: {} runs added, {} completed, {} already present, {} still running (not copied)\n", o, added,
             completed, already, running);
  return kExitOk;
}

}  // namespace ltrun::cli
