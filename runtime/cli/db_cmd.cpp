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
  ltrun db merge OUT.db IN.db ...   copy the runs of each IN into OUT (created if missing):
                                    new ids, parent/rerun links and every run's rows kept;
                                    a run OUT already holds (same uuid) is skipped and counted
)";

}  // namespace

int cmd_db(const Globals&, const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kDbUsage, args.empty() ? stderr : stdout);
    return args.empty() ? kExitUsage : kExitOk;
  }
  LT_CHECK(args[0] == "merge", "db: unknown subcommand '{}' (merge)", args[0]);
  LT_CHECK(args.size() >= 3, "usage: ltrun db merge OUT.db IN.db ... (got {} store(s))", args.size() - 1);
  for (size_t i = 1; i < args.size(); i++)
    LT_CHECK(args[i].rfind("--", 0) != 0, "db merge: unknown option {} (see ltrun db --help)", args[i]);
  const std::string out = args[1];
  const std::vector<std::string> inputs(args.begin() + 2, args.end());
  std::function<void(size_t, size_t)> progress;
  if (stderr_is_terminal())
    progress = [](size_t i, size_t n) { fmt::print(stderr, "\rmerging: {}/{} stores", i, n); if (i == n) fmt::print(stderr, "\n"); };
  const auto report = store::merge_stores(out, inputs, progress);
  int64_t added = 0, already = 0;
  for (const auto& r : report) {
    if (r.added)
      fmt::print("{}: {} of {} runs added as runs {}..{} ({} rows)", r.path, r.added, r.runs, r.first_id, r.last_id, r.rows);
    else
      fmt::print("{}: none of {} runs added", r.path, r.runs);
    if (r.already) fmt::print(", {} already in {} (merged before)", r.already, out);
    fmt::print("\n");
    for (const auto& n : r.notes) fmt::print("  note: {}\n", n);
    added += r.added;
    already += r.already;
  }
  fmt::print("{}: {} runs added, {} already present\n", out, added, already);
  return kExitOk;
}

}  // namespace ltrun::cli
