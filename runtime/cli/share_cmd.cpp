// runtime/cli/share_cmd.cpp: runs shared among researchers: `ltrun rerun` (a run of this store
// or of an exported file, with its stored sources), `export`, `import`, `compare`, and
// `show RUN --sources`. The store side is runtime/store/{capture,share,compare}.h.
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>

#include "runtime/cli/cli.h"
#include "runtime/cli/replay_sandbox.h"
#include "runtime/core/fs.h"
#include "runtime/core/env.h"
#include "runtime/core/error.h"
#include "runtime/core/inputs.h"
#include "runtime/core/process.h"
#include "runtime/core/sha256.h"
#include "runtime/store/capture.h"
#include "runtime/store/compare.h"
#include "runtime/store/share.h"
#include "runtime/store/views.h"

namespace ltrun::cli {
namespace {

namespace fs = std::filesystem;

bool is_id(const std::string& s) {
  return !s.empty() && s.size() <= 18 && s.find_first_not_of("0123456789") == std::string::npos;
}
int64_t run_id_arg(const std::string& s, const char* cmd) {
  LT_CHECK(is_id(s), "{}: expected a run id (a number), got '{}'", cmd, s);
  return std::stoll(s);
}

double tolerance_arg(const std::string& v) {
  char* end = nullptr;
  const double t = std::strtod(v.c_str(), &end);
  LT_CHECK(!v.empty() && end && *end == '\0' && t >= 0 && t < 1, "--tolerance {}: expected a number in [0, 1)", v);
  return t;
}

// Runs `f`; an error it raises (which may quote a bundle's or store's strings) comes out with
// its control characters escaped, so that a file cannot send escape sequences to a terminal.
template <class F>
void escaped_errors(F&& f) {
  try {
    f();
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(escape_controls(e.what(), false));
  }
}

// A stored args_json as the script's arguments; an error naming the run and the field.
std::vector<std::string> stored_args(int64_t id, const store::Value& v) {
  std::optional<std::vector<std::string>> args;
  if (std::holds_alternative<std::string>(v)) {
    try {
      const auto j = nlohmann::json::parse(std::get<std::string>(v));
      if (j.is_array() && std::all_of(j.begin(), j.end(), [](const nlohmann::json& a) { return a.is_string(); }))
        args = j.get<std::vector<std::string>>();
    } catch (const std::exception&) {
    }
  }
  const std::string text = store::to_text(v);
  if (!args)
    fail("rerun: run {}: args_json is '{}'; expected a JSON array of strings (the script's arguments, as ltrun "
         "stores them, e.g. [\"--lr=0.1\"])",
         id, escape_controls(text.size() > 80 ? text.substr(0, 80) + "..." : text, false));
  return *args;
}

// FILE.ltrun[:RUN] imported into the store: the run's id there; a plain RUN as it is
int64_t resolve_target(const Globals& g, const std::string& target) {
  if (is_id(target)) return std::stoll(target);
  std::string file = target;
  std::optional<int64_t> in_file;
  const auto colon = target.rfind(':');
  if (colon != std::string::npos && is_id(target.substr(colon + 1)) && !file_exists(target)) {
    file = target.substr(0, colon);
    in_file = std::stoll(target.substr(colon + 1));
  }
  LT_CHECK(file_exists(file), "rerun: '{}' is neither a run id nor a file (FILE.ltrun or FILE.ltrun:RUN)", target);
  int64_t run = 0, id = 0;
  store::MergeInput m;
  escaped_errors([&] {
    store::check_export(file);  // first: a file whose runs are no tree has no top run
    run = in_file ? *in_file : store::export_top_run(file);
    store::export_run_uuid(file, run);  // the run is in the file, before anything is imported
    m = store::import_file(g.db, file);
    id = store::imported_id(g.db, file, run);
  });
  std::fprintf(stderr, "ltrun: imported %s into %s: %lld run(s) added, %lld already there; its run %lld is run %lld here\n",
               file.c_str(), g.db.c_str(), (long long)m.added, (long long)m.already, (long long)run, (long long)id);
  return id;
}

struct InputRow {
  std::string kind, path, root, rel, sha256;
};

// Where a replay will find a recorded input: one that lay below a root is looked for below
// that root here (--models DIR, else $LTRUN_MODELS or ./models; --data DIR, else $LTRUN_DATA;
// this folder), never at the author's absolute path; any other at its recorded path.
std::vector<std::string> candidates(const InputRow& in, const std::string& models, const std::string& data) {
  std::vector<std::string> c;
  auto env = [](const char* n, const char* d) {
    const char* v = std::getenv(n);
    return std::string(v && *v ? v : d);
  };
  if (!in.rel.empty()) {
    if (in.root == "data" && data.empty() && env("LTRUN_DATA", "").empty()) return {in.path};
    if (in.root == "models") c.push_back((models.empty() ? env("LTRUN_MODELS", "models") : models) + "/" + in.rel);
    if (in.root == "data" && !(data.empty() && env("LTRUN_DATA", "").empty()))
      c.push_back((data.empty() ? env("LTRUN_DATA", "") : data) + "/" + in.rel);
    if (in.root == "workdir") c.push_back(in.rel);
    return c;
  }
  return {in.path};
}

// Under `dir` (3 levels), something with the content `want`: a hint for a missing input.
std::string find_by_hash(const std::string& dir, const InputRow& in) {
  if (dir.empty() || !fs::is_directory(dir)) return "";
  std::vector<ltrun::fs::TreeEntry> entries;
  try {
    entries = ltrun::fs::walk(dir, 2);  // entries 0..3 levels below dir
  } catch (const std::exception&) {  // an unreadable folder: no hint
  }
  for (const auto& e : entries) {
    const bool fits = in.kind == "model" ? e.is_dir && fs::exists(fs::path(e.path) / "config.json") : e.is_file;
    if (!fits) continue;
    try {
      if (store::hash_input(in.kind, e.path, nullptr).sha256 == in.sha256) return e.path;
    } catch (const std::exception&) {
    }
  }
  return "";
}

}  // namespace

int show_sources(store::Store& st, int64_t run) {
  int64_t root = run;
  try {
    root = store::top_run(store::query_of(st), run);  // each run once: a cycle of parents is named
  } catch (const Error& e) {
    fail("{}: {}", st.path(), e.what());
  }
  LT_CHECK(st.schema_version() >= 6, "{}: schema version {} records no sources yet (db/migrations/0006): its runs "
           "ran before ltrun recorded them", st.path(), st.schema_version());
  const store::Table v = st.query("SELECT ltrun_version, torch_version, host FROM runs WHERE id = ?", {store::Value(root)});
  std::printf("run %lld%s: ltrun %s, LibTorch %s, host %s\n", (long long)run,
              root == run ? "" : fmt::format(" (sources and inputs of its top run {})", root).c_str(),
              escape_controls(store::to_text(v.rows[0][0]), false).c_str(),
              escape_controls(store::to_text(v.rows[0][1]), false).c_str(),
              escape_controls(store::to_text(v.rows[0][2]), false).c_str());
  const store::Table s = st.query(
      "SELECT r.seq, r.kind, r.name, r.origin, coalesce(r.rel, r.path, '') AS file, substr(r.sha256, 1, 16) AS sha256, "
      "length(s.text) AS bytes FROM run_sources r LEFT JOIN sources s ON s.sha256 = r.sha256 WHERE r.run_id = ? "
      "ORDER BY r.seq", {store::Value(root)});
  std::printf("\nsources (%zu)\n%s", s.rows.size(),
              s.rows.empty() ? "(none recorded: a run from before ltrun recorded them)\n"
                             : format_table(s, TableFormat::aligned).c_str());
  const store::Table in = st.query(
      "SELECT kind, coalesce(root, '') AS root, coalesce(rel, '') AS rel, path, size, substr(sha256, 1, 16) AS sha256, "
      "CASE WHEN made THEN 'yes' ELSE '' END AS made_by_run FROM run_inputs WHERE run_id = ? ORDER BY rowid",
      {store::Value(root)});
  std::printf("\ninputs (%zu)\n%s", in.rows.size(), in.rows.empty() ? "(none recorded)\n" : format_table(in, TableFormat::aligned).c_str());
  return kExitOk;
}

std::string replay_line(store::Store& st, int64_t orig, int64_t new_run, double tol) {
  const store::Status status = st.run_status(new_run);
  if (status != store::Status::ok)  // its metrics stop midway: "0 of 46 equal" would say the wrong thing
    return fmt::format("run {} (the replay of run {}) {}: the replay failed, so it is not compared "
                       "(ltrun show {}; ltrun compare {} {} shows what it logged)",
                       new_run, orig, store::status_name(status), new_run, orig, new_run);
  const store::Comparison c = store::compare_runs(st, orig, new_run, tol, false);
  return fmt::format("run {} against run {}: {}{}", new_run, orig, escape_controls(store::reproduced_line(c, tol), false),
                     c.sources_changed ? fmt::format(" ({} sources differ: ltrun compare {} {})", c.sources_changed,
                                                     orig, new_run) : "");
}

int cmd_rerun(const Globals& g, const std::vector<std::string>& args_in) {
  const char* usage =
      "usage: ltrun rerun [--models DIR] [--data DIR] RUN|FILE.ltrun[:RUN] [--yes] [--sources=stored|current] "
      "[--allow-changed-inputs] [--sandbox [--memory-mb N] [--nproc N] [--disk-mb N] [--timeout S]] [--tolerance X] "
      "[--key=value ...]";
  LT_CHECK(!args_in.empty(), "{}", usage);
  bool yes = false, allow_changed = false, sandbox = false;
  // the inner rerun of `rerun --sandbox` (replay_sandbox.cpp): the outer one has shown what
  // runs, and merges and compares the new run itself
  const bool sandboxed = std::getenv("LTRUN_SANDBOXED") != nullptr;
  std::string sources = "stored", models, data, target;
  double tol = 0;
  std::vector<std::string> extra;  // after RUN, for the script
  sandbox::CommandBounds bounds;     // the replay's, with --sandbox
  bool bounded = false;
  // a whole number in [1, 10^9]: the bound's own range is checked by sandbox::validate
  auto bound_arg = [&](const char* key, const std::string& v) {
    bounded = true;
    LT_CHECK(!v.empty() && v.size() <= 9 && v.find_first_not_of("0123456789") == std::string::npos && std::stoll(v) > 0,
             "rerun: {} {}: expected a whole number above 0", key, escape_controls(v, false));
    return int64_t(std::stoll(v));
  };
  for (size_t i = 0; i < args_in.size(); i++) {
    const std::string& a = args_in[i];
    auto value = [&](const std::string& key) {
      if (a.size() > key.size() && a.compare(0, key.size() + 1, key + "=") == 0) return a.substr(key.size() + 1);
      LT_CHECK(i + 1 < args_in.size(), "rerun: {} needs a value", key);
      return args_in[++i];
    };
    auto is = [&](const std::string& key) { return a == key || a.rfind(key + "=", 0) == 0; };
    if (a == "--yes" || a == "-y") yes = true;
    else if (a == "--allow-changed-inputs") allow_changed = true;
    else if (a == "--sandbox") sandbox = true;
    else if (is("--sources")) sources = value("--sources");
    else if (is("--tolerance")) tol = tolerance_arg(value("--tolerance"));
    else if (is("--memory-mb")) bounds.memory_mb = bound_arg("--memory-mb", value("--memory-mb"));
    else if (is("--nproc")) bounds.nproc = int(bound_arg("--nproc", value("--nproc")));
    else if (is("--disk-mb")) bounds.disk_mb = bound_arg("--disk-mb", value("--disk-mb"));
    else if (is("--timeout")) bounds.timeout = double(bound_arg("--timeout", value("--timeout")));
    else if (target.empty() && is("--models")) models = value("--models");
    else if (target.empty() && is("--data")) data = value("--data");
    else if (target.empty() && a.rfind("--", 0) == 0) fail("rerun: unknown option '{}' before the run ({})", a, usage);
    else if (target.empty()) target = a;
    else extra.push_back(a);
  }
  LT_CHECK(!target.empty(), "{}", usage);
  if (bounded) {
    LT_CHECK(sandbox, "rerun: --memory-mb, --nproc, --disk-mb and --timeout bound a replay in the sandbox: add "
             "--sandbox ({})", usage);
    sandbox::validate(bounds);
  }
  LT_CHECK(sources == "stored" || sources == "current", "rerun: --sources={}: expected stored or current", sources);
  const int64_t id = resolve_target(g, target);

  ScriptRun r;
  std::vector<std::string> changed;  // inputs that differ, when allowed
  std::vector<ReplayInput> replay_inputs;
  std::map<std::string, std::string> redirects;  // inputs read from their restored copies
  size_t n_sources = 0;
  {
    auto st = store::Store::open(g.db);  // writable: the input-hash cache (input_hashes)
    store::Table t = st->query(
        "SELECT name, script_path, script_text, args_json, seed, parent_id, script_sha256, host, git_rev, "
        "started_at, coalesce(workdir, '') FROM runs WHERE id = ?",
        {store::Value(id)});
    LT_CHECK(!t.rows.empty(), "{}: no run with id {}", g.db, id);
    const auto& row = t.rows[0];
    if (!std::holds_alternative<std::monostate>(row[5])) {
      // a child run: its top run is the one to replay (a walk that names a cycle of parents)
      LT_CHECK(!(std::holds_alternative<int64_t>(row[5]) && std::get<int64_t>(row[5]) == id),
               "rerun: run {} is its own parent (its parent_id is its own id: a store edited by hand?); it cannot "
               "be replayed", id);
      int64_t top = 0;
      escaped_errors([&] { top = store::top_run(store::query_of(*st), id); });
      fail("rerun: run {} is a child run of run {}: rerun its top run {} instead", id,
           escape_controls(store::to_text(row[5]), false), top);
    }
    LT_CHECK(std::holds_alternative<std::string>(row[2]),
             "rerun: run {} has no stored script text (script_text is {}): there is nothing to replay", id,
             std::holds_alternative<std::monostate>(row[2]) ? "NULL" : "not text");
    LT_CHECK(std::holds_alternative<std::monostate>(row[4]) || std::holds_alternative<int64_t>(row[4]),
             "rerun: run {}: seed is '{}'; expected an integer (the run's seed) or NULL", id,
             escape_controls(store::to_text(row[4]), false));
    // The text must be what ran: a row edited afterwards (by anyone who can write the store)
    // would otherwise run as this run's script.
    const std::string& text = std::get<std::string>(row[2]);
    const std::string stored_hash = store::to_text(row[6]), hash = sha256_hex(text);
    if (stored_hash != hash)
      fail("rerun: run {}: the stored script text does not match its script_sha256 (stored {}, the text "
           "hashes to {}): the row was changed after the run; refusing to run it",
           id, stored_hash.empty() ? "none" : escape_controls(stored_hash, false), hash);
    const std::vector<std::string> stored_arguments = stored_args(id, row[3]);
    if (sources == "stored") {
      std::vector<store::SourceFile> stored;
      escaped_errors([&] { stored = store::stored_sources(*st, id); });  // each text checked against its hash
      n_sources = stored.size();
      if (stored.empty()) {
        std::fprintf(stderr, "ltrun rerun: run %lld has no stored sources (it ran before ltrun recorded them): "
                     "its script runs with today's modules\n", (long long)id);
        sources = "current";
      } else {
        r.stored_sources = std::move(stored);
      }
    }
    // the inputs it read, where this replay will find them, before anything runs
    std::vector<std::string> problems, restored;
    for (const auto& in_row : st->query("SELECT kind, path, coalesce(root, ''), coalesce(rel, ''), sha256 FROM "
                                        "run_inputs WHERE run_id = ? AND made = 0 ORDER BY rowid", {store::Value(id)}).rows) {
      const InputRow in{store::to_text(in_row[0]), store::to_text(in_row[1]), store::to_text(in_row[2]),
                        store::to_text(in_row[3]), store::to_text(in_row[4])};
      const std::string name = escape_controls(in.rel.empty() ? in.path : in.root + ":" + in.rel, false);
      ReplayInput ri{in.kind, name, in.rel.empty() ? "" : in.root, "", false};
      if (!in.rel.empty() && !store::is_clean_relative_path(in.rel)) {  // a store edited by hand
        problems.push_back(fmt::format("{} {}: its path below {} is not a plain relative path: not looked for",
                                       escape_controls(in.kind, false), name, escape_controls(in.root, false)));
        replay_inputs.push_back(ri);
        continue;
      }
      std::string found_at, found_hash;
      const auto cands = candidates(in, models, data);
      for (const auto& c : cands) {
        if (!fs::exists(c)) continue;
        found_at = c;
        escaped_errors([&] { found_hash = store::hash_input(in.kind, c, st.get()).sha256; });
        break;
      }
      // not where it lay: a copy restored from a bundle (ltrun import of an export --with-inputs),
      // by its recorded hash, checked again here; the script reads it there (set_input_redirects)
      if (found_at.empty() && !cands.empty()) {
        const std::string copy = store::input_copy_path(g.db, in.kind, in.sha256);
        bool same = false;
        escaped_errors([&] {
          same = !copy.empty() && (in.kind == "model" ? fs::is_directory(copy) : file_exists(copy)) &&
                 store::hash_input(in.kind, copy, st.get()).sha256 == in.sha256;
        });
        if (same) {
          found_at = cands.front();
          found_hash = in.sha256;
          ri.read_from = copy;
          redirects[absolute_path(found_at)] = copy;
          restored.push_back(escape_controls(in.kind, false) + " " + name);
        }
      }
      if (found_at.empty()) {
        const std::string hint = find_by_hash(in.kind == "model" ? models : data, in);
        problems.push_back(fmt::format("{} {} is missing (expected sha256 {}; looked at {}){}",
                                       escape_controls(in.kind, false), name, escape_controls(in.sha256, false),
                                       escape_controls(fmt::format("{}", fmt::join(cands, ", ")), false),
                                       hint.empty() ? "" : "; the same content is at " + escape_controls(hint, false)));
      } else if (found_hash != in.sha256) {
        problems.push_back(fmt::format("{} {} changed: expected sha256 {}, found {} at {}",
                                       escape_controls(in.kind, false), name, escape_controls(in.sha256, false),
                                       found_hash, escape_controls(found_at, false)));
      }
      ri.found_at = found_at;
      ri.same = !found_at.empty() && found_hash == in.sha256;
      replay_inputs.push_back(ri);
    }
    // one line: what differs, for each input (none of it ran, nothing of it is stored). Inside
    // `rerun --sandbox` the outer rerun has checked them where they lie and listed those the
    // sandbox does not mount (/etc/passwd, a file in the home): reading one fails there, as meant
    if (!problems.empty() && !allow_changed && !sandboxed)
      fail("rerun: run {} did not start: {} (--models DIR / --data DIR: where inputs lie; --allow-changed-inputs: "
           "run anyway, recorded with the new run)", id, fmt::join(problems, "; "));
    if (allow_changed) changed = problems;

    std::vector<std::string> all_args = stored_arguments;
    all_args.insert(all_args.end(), extra.begin(), extra.end());
    auto field = [](const store::Value& v) {
      const std::string s = store::to_text(v);
      return s.empty() ? std::string("(unknown)") : escape_controls(s, false);
    };
    if (!sandboxed) {
      std::fprintf(stderr,
                   "ltrun rerun: run %lld (%s) will run its stored script again as a new run:\n"
                   "  script     %s (%zu bytes, sha256 %s, verified)\n"
                   "  modules    %s\n"
                   "  from       host %s, git revision %s, started %s\n"
                   "  arguments  %s\n"
                   "  see it     ltrun show %lld --script; ltrun show %lld --sources\n",
                   (long long)id, escape_controls(store::to_text(row[0]), false).c_str(), field(row[1]).c_str(),
                   text.size(), hash.c_str(),
                   sources == "stored" ? fmt::format("{} stored sources of the run (verified), not today's files",
                                                     n_sources).c_str()
                                       : "today's files (--sources=current)",
                   field(row[7]).c_str(), field(row[8]).c_str(), field(row[9]).c_str(),
                   escape_controls(nlohmann::json(all_args).dump(), false).c_str(), (long long)id, (long long)id);
      for (const auto& p : changed) std::fprintf(stderr, "  CHANGED    %s\n", p.c_str());
      for (const auto& n : restored)
        std::fprintf(stderr, "  input      %s: not here; read from its copy restored from a bundle (verified) in %s\n",
                     n.c_str(), store::input_store_dir(g.db).c_str());
    }
    if (sandbox && !sandboxed) {
      // again inside bubblewrap; what it runs has been shown, and the sandbox stands for asking
      ReplayPlan plan;
      plan.db = g.db;
      plan.run = id;
      plan.device = g.device;
      plan.seed = g.seed;
      plan.models = models;
      plan.data = data;
      plan.rerun_args = {"--sources=" + sources};
      plan.rerun_args.insert(plan.rerun_args.end(), extra.begin(), extra.end());
      plan.inputs = replay_inputs;
      plan.allow_changed = allow_changed;
      plan.tolerance = tol;
      plan.bounds = bounds;
      st.reset();  // the replay's store is seeded from this one by a merge, which reads it alone
      return rerun_sandboxed(plan);
    }
    if (!sandboxed) {
      const std::string unsandboxed = fmt::format(
          "it runs UNSANDBOXED, with the full rights of this user (your files, your network, your home); "
          "`ltrun rerun {} --sandbox` runs it inside bubblewrap instead", id);
      if (yes) {
        std::fprintf(stderr, "ltrun rerun: %s\n", unsandboxed.c_str());
      } else {
        LT_CHECK(isatty(STDIN_FILENO) == 1,
                 "rerun: not asking without a terminal: pass --yes to run the stored script of run {} (shown "
                 "above); {}", id, unsandboxed);
        std::fprintf(stderr, "ltrun rerun: %s.\nRun it unsandboxed? [y/N] ", unsandboxed.c_str());
        std::string answer;
        std::getline(std::cin, answer);
        if (answer != "y" && answer != "Y" && answer != "yes") {
          std::fprintf(stderr, "ltrun rerun: not run\n");
          return kExitUsage;
        }
      }
    }
    r.name = store::to_text(row[0]);
    r.script_path = store::to_text(row[1]);
    r.code = text;
    // today's modules beside the script: the same place below the folder this rerun runs in as
    // below the folder the run started in (never the recorded folder, which may still hold the
    // author's older or newer files)
    const std::string workdir = store::to_text(row[10]);
    if (sources == "current" && !r.script_path.empty() && !workdir.empty() &&
        r.script_path.rfind(workdir + "/", 0) == 0) {
      const std::string here = absolute_path(r.script_path.substr(workdir.size() + 1));
      if (here != r.script_path)
        std::fprintf(stderr, "ltrun rerun: --sources=current: today's modules beside the script come from %s%s\n",
                     dir_name(here).c_str(), fs::exists(dir_name(here)) ? "" : " (not here: only lib/lt's are found)");
      r.script_path = here;
    }
    r.chunk_name = r.script_path.empty() ? "=(rerun " + std::to_string(id) + ")" : "@" + r.script_path;
    r.args = stored_arguments;
    if (std::holds_alternative<int64_t>(row[4])) r.seed = uint64_t(std::get<int64_t>(row[4]));
    r.rerun_of = id;
  }
  // extra arguments come after the stored ones, so --key=value overrides
  r.args.insert(r.args.end(), extra.begin(), extra.end());
  r.params.emplace_back("rerun.sources", sources);
  if (sandboxed)
    r.params.emplace_back("rerun.sandbox", "bubblewrap: a fresh working folder, read-only system folders and inputs, "
                                           "a store of its own; no network, no home");
  if (!changed.empty()) r.params.emplace_back("rerun.changed_inputs", fmt::format("{}", fmt::join(changed, "\n")));
  if (!models.empty()) setenv("LTRUN_MODELS", models.c_str(), 1);
  if (!data.empty()) setenv("LTRUN_DATA", data.c_str(), 1);
  int64_t new_run = 0;
  r.new_run = &new_run;
  set_input_redirects(redirects);
  const int rc = run_script(g, r);
  set_input_redirects({});
  if (new_run > 0 && !sandboxed) {
    auto st = store::Store::open_readonly(g.db);
    std::fprintf(stderr, "ltrun rerun: %s\n", replay_line(*st, id, new_run, tol).c_str());
  }
  return rc;
}

int cmd_export(const Globals& g, const std::vector<std::string>& args) {
  const char* usage = "usage: ltrun export RUN [--children] [--artifacts] [--max-artifact-mb N] [--with-inputs] "
                      "[--max-input-mb N] -o FILE.ltrun";
  std::optional<int64_t> run;
  std::string out;
  store::ExportOptions o;
  ArgReader a(args, 0, "export");
  while (a.next()) {
    if (a.key() == "--children") o.children = true;
    else if (a.key() == "--artifacts") o.artifacts = true;
    else if (a.key() == "--max-artifact-mb") o.max_artifact_bytes = a.integer() << 20;
    else if (a.key() == "--with-inputs") o.with_inputs = true;
    else if (a.key() == "--max-input-mb") o.max_input_bytes = a.integer() << 20;
    else if (a.key() == "-o" || a.key() == "--out") out = a.value();
    else if (!a.is_option() && !run) run = run_id_arg(a.key(), "export");
    else fail("export: unexpected argument '{}' ({})", a.key(), usage);
  }
  LT_CHECK(run && !out.empty(), "{}", usage);
  const store::ExportResult r = store::export_run(g.db, *run, out, o);
  std::printf("exported run %lld%s to %s: %lld run(s), %lld sources, %lld inputs, %lld artifact files (%lld bytes); "
              "%lld bytes\n", (long long)*run, o.children ? " with the runs under it" : "", out.c_str(),
              (long long)r.runs, (long long)r.sources, (long long)r.inputs, (long long)r.artifact_files,
              (long long)r.artifact_bytes, (long long)r.bytes);
  if (o.with_inputs)
    std::printf("  with the bytes of %lld input file(s) (%lld bytes)\n", (long long)r.input_files,
                (long long)r.input_bytes);
  for (const auto& n : r.notes) std::printf("  note: %s\n", escape_controls(n, false).c_str());
  return kExitOk;
}

int cmd_import(const Globals& g, const std::vector<std::string>& args) {
  const char* usage = "usage: ltrun import FILE.ltrun [--max-input-mb N]";
  std::string file;
  int64_t max_input = store::kMaxInputBytes;
  ArgReader a(args, 0, "import");
  while (a.next()) {
    if (a.key() == "--max-input-mb") max_input = a.integer() << 20;
    else if (!a.is_option() && file.empty()) file = a.key();
    else fail("import: unexpected argument '{}' ({})", a.key(), usage);
  }
  LT_CHECK(!file.empty(), "{}", usage);
  store::MergeInput m;
  escaped_errors([&] { m = store::import_file(g.db, file, max_input); });
  std::printf("imported %s into %s: %lld run(s) added%s, %lld already there, %lld rows\n", file.c_str(), g.db.c_str(),
              (long long)m.added,
              m.added ? fmt::format(" (ids {}..{})", m.first_id, m.last_id).c_str() : "", (long long)m.already,
              (long long)m.rows);
  for (const auto& n : m.notes) std::printf("  note: %s\n", escape_controls(n, false).c_str());
  return kExitOk;
}

int cmd_compare(const Globals& g, const std::vector<std::string>& args) {
  const char* usage = "usage: ltrun compare RUN_A RUN_B [--tolerance X] [--no-diff]";
  std::vector<int64_t> ids;
  double tol = 0;
  bool diffs = true;
  ArgReader a(args, 0, "compare");
  while (a.next()) {
    if (a.key() == "--tolerance") tol = tolerance_arg(a.value());
    else if (a.key() == "--no-diff") diffs = false;
    else if (!a.is_option() && ids.size() < 2) ids.push_back(run_id_arg(a.key(), "compare"));
    else fail("compare: unexpected argument '{}' ({})", a.key(), usage);
  }
  LT_CHECK(ids.size() == 2, "{}", usage);
  auto st = store::Store::open_readonly(g.db);
  store::Comparison c;
  escaped_errors([&] { c = store::compare_runs(*st, ids[0], ids[1], tol, diffs); });
  std::fputs(isatty(STDOUT_FILENO) ? escape_controls(c.report, true).c_str() : c.report.c_str(), stdout);
  return kExitOk;
}

}  // namespace ltrun::cli
