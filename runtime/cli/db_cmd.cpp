// runtime/cli/db_cmd.cpp: the commands that change runs in the store: `ltrun db merge OUT.db
// IN.db ...` (run stores of shards, a job array, several nodes, a colleague's runs, merged into
// one: runtime/store/merge.h), `ltrun rm RUN...` (runs with the runs under them, their rows
// and artifact copies) and `ltrun mark RUN... STATUS` (a stale run's status set by hand:
// runtime/store/run_admin.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <set>

#include "runtime/cli/cli.h"
#include "runtime/core/env.h"
#include "runtime/core/error.h"
#include "runtime/store/artifact.h"
#include "runtime/store/merge.h"
#include "runtime/store/run_admin.h"

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

namespace {

// "12 'freeze_deep' (ok)": a run as rm and mark name it
std::string run_text(store::Store& st, int64_t id) {
  const auto t = st.query("SELECT name, status FROM runs WHERE id = ?", {store::Value(id)});
  return fmt::format("{} '{}' ({})", id, escape_controls(store::to_text(t.rows.at(0)[0]), false),
                     store::to_text(t.rows.at(0)[1]));
}

// the runs of `runs` still running by a process that is alive (or, unless `alive_only`, may
// be: one on another host is not known), each with why, for the refusal of rm and mark
std::vector<std::string> live_runs(store::Store& st, const std::vector<int64_t>& runs, bool alive_only) {
  std::vector<std::string> out;
  for (const int64_t id : runs) {
    if (st.run_status(id) != store::Status::running) continue;
    const store::Liveness l = store::run_liveness(st, id);
    if (l.state == store::Liveness::alive || (!alive_only && l.state == store::Liveness::unknown))
      out.push_back(fmt::format("run {}: {}", run_text(st, id), l.why));
  }
  return out;
}

}  // namespace

int cmd_rm(const Globals& g, const std::vector<std::string>& args) {
  const char* usage = "usage: ltrun rm RUN... [--yes]";
  std::vector<int64_t> ids;
  bool yes = false;
  ArgReader a(args, 0, "rm");
  while (a.next()) {
    if (a.key() == "--yes" || a.key() == "-y") yes = true;
    else if (a.is_option()) fail("rm: unknown option '{}' ({})", a.key(), usage);
    else ids.push_back(parse_run_id(a.key()));
  }
  LT_CHECK(!ids.empty(), "{}", usage);
  LT_CHECK(file_exists(g.db), "rm: {}: no such run store", g.db);
  auto st = store::Store::open(g.db);  // (marks runs whose process is gone as crashed first)
  const std::vector<int64_t> family = store::run_family(*st, ids);
  if (const auto live = live_runs(*st, family, false); !live.empty())
    fail("rm: {} still running, nothing removed: {} (stop it first; a run whose process is gone elsewhere: "
         "ltrun mark RUN crashed)", live.size() == 1 ? "a run is" : "runs are", fmt::join(live, "; "));
  const size_t under = family.size() - std::set<int64_t>(ids.begin(), ids.end()).size();
  const auto n_artifacts = store::to_text(
      st->query(fmt::format("SELECT count(*) FROM artifacts WHERE run_id IN ({})", fmt::join(family, ",")))
          .rows.at(0)[0]);
  std::string what;
  for (const int64_t id : ids) what += fmt::format("  run {}\n", run_text(*st, id));
  const std::string summary =
      fmt::format("{}  {} run{} under {}, {} artifact{}", what, under, under == 1 ? "" : "s",
                  ids.size() == 1 ? "it" : "them", n_artifacts, n_artifacts == "1" ? "" : "s");
  if (!yes) {
    LT_CHECK(isatty(STDIN_FILENO) == 1, "rm: not asking without a terminal: pass --yes to remove\n{}", summary);
    fmt::print(stderr, "ltrun rm: from {}:\n{}\nRemove {} run{} for good? [y/N] ", g.db, summary, family.size(),
               family.size() == 1 ? "" : "s");
    std::string answer;
    std::getline(std::cin, answer);
    if (answer != "y" && answer != "Y" && answer != "yes") {
      fmt::print(stderr, "ltrun rm: nothing removed\n");
      return kExitUsage;
    }
  }
  const std::vector<std::string> gone = store::remove_runs(*st, family);
  size_t copies = 0;
  for (const auto& h : gone) {  // the store's own copies (artifact_store_dir); the files a run wrote stay
    const std::string p = store::artifact_copy_path(g.db, h);
    std::error_code ec;
    if (!p.empty() && std::filesystem::remove(p, ec)) copies++;
  }
  fmt::print("removed {} run{} from {} ({} under the named ones), {} artifact cop{} beside it\n", family.size(),
             family.size() == 1 ? "" : "s", g.db, under, copies, copies == 1 ? "y" : "ies");
  return kExitOk;
}

int cmd_mark(const Globals& g, const std::vector<std::string>& args) {
  const std::string usage = "usage: ltrun mark RUN... STATUS (STATUS: " + store::status_names() + ")";
  std::vector<std::string> words;
  ArgReader a(args, 0, "mark");
  while (a.next()) {
    if (a.is_option()) fail("mark: unknown option '{}' ({})", a.key(), usage);
    words.push_back(a.key());
  }
  LT_CHECK(words.size() >= 2, "{}", usage);
  const auto status = store::parse_status(words.back());
  LT_CHECK(status && *status != store::Status::running, "mark: '{}' is not a status a run can be marked ({})",
           words.back(), usage);
  std::vector<int64_t> ids;
  for (size_t i = 0; i + 1 < words.size(); i++) ids.push_back(parse_run_id(words[i]));
  LT_CHECK(file_exists(g.db), "mark: {}: no such run store", g.db);
  auto st = store::Store::open(g.db);
  // the named runs, and the runs under them that did not end by themselves: still running, or
  // found crashed (opening the store marks a run whose process is gone so)
  std::vector<int64_t> marked = ids;
  for (const int64_t id : store::run_family(*st, ids)) {
    if (std::find(ids.begin(), ids.end(), id) != ids.end()) continue;
    const store::Status s = st->run_status(id);
    if (s == store::Status::running || s == store::Status::crashed) marked.push_back(id);
  }
  if (const auto live = live_runs(*st, marked, true); !live.empty())
    fail("mark: {} still running, nothing marked: {} (its own end sets its status)",
         live.size() == 1 ? "a run is" : "runs are", fmt::join(live, "; "));
  const std::string note = fmt::format("marked {} by ltrun mark ({})", store::status_name(*status), utc_timestamp());
  for (const int64_t id : marked) {
    const std::string before = run_text(*st, id);
    store::mark_run(*st, id, *status, note);
    fmt::print("run {} → {}\n", before, store::status_name(*status));
  }
  return kExitOk;
}

}  // namespace ltrun::cli
