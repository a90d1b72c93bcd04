// runtime/cli/main.cpp: the `ltrun` command line (cli::main; the program's main() is
// bindings/cli/main.cpp): global options, then a script, -e CODE, a subcommand, or the REPL
// when nothing is given.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/cli/cli.h"
#include "runtime/core/crash.h"
#include "runtime/core/device.h"
#include "runtime/core/env.h"
#include "runtime/core/error.h"
#include "runtime/core/fs.h"

namespace {

const char kUsage[] = R"(ltrun: layer-wise experiments on LLMs, scripted in Lua, logged to SQLite.

usage:
  ltrun SCRIPT.lua [--key=value ...]   run a study; the run, its script, args and metrics go to the DB
                                       (a study folder DIR/ or DIR.lua runs DIR/NAME.lua, NAME its name)
  ltrun -e CODE [--key=value ...]      run one Lua chunk (stored as a run with --log)
  ltrun                                interactive Lua (REPL; stored as a run with --log): `=expr`
                                       prints a value, `?x` shows help, `%time EXPR` times it
  ltrun runs [--name TEXT] [--status S,...] [--parent RUN | --all] [--limit N]   the latest runs (20):
                                       top-level ones with their number of children (--parent RUN:
                                       RUN's children; --all: every run); --name: a part of the name
                                       or a glob (lr=*); --status: running, ok, failed, interrupted,
                                       crashed; "N more" when the limit cut (--limit 0: no limit)
  ltrun show RUN [--script|--sources]  one run: fields, params, metrics (on a terminal each one's curve),
                                       layers, artifacts, children; --script: the stored script text;
                                       --sources: the Lua sources it executed and the model and data
                                       files it read (hashes)
  ltrun rm RUN... [--yes]              remove runs for good, with the runs under them, their rows and the
                                       store's copies of their artifacts (asks first; --yes: doesn't);
                                       refuses a run that is still running
  ltrun mark RUN... STATUS             set by hand the status of a run that cannot close itself (its
                                       process gone, or on another host): interrupted, failed, crashed
                                       or ok; the runs under it left running or crashed too; refuses
                                       a run whose process is alive
  ltrun sql "SELECT ..." [--csv|--json]   SQL over the run store, read-only (--write to change it)
  ltrun sql @NAME [--queries DIR]      a named query: ltrun's (db/queries/, experiments/STUDY/), else DIR/NAME.sql
  ltrun rerun [--models DIR] [--data DIR] RUN|FILE.ltrun[:RUN] [--yes] [--sources=stored|current]
        [--allow-changed-inputs] [--sandbox] [--tolerance X] [--key=value ...]
                                       replay a run (imported first from FILE) as a new run: its stored
                                       script, modules (--sources=current: today's), args and seed,
                                       after checking hashes and inputs and asking (--yes: don't ask;
                                       --sandbox: inside bubblewrap, no network, read-only FS but
                                       for the store's folder);
                                       ends with "reproduced: N of M metrics equal"
  ltrun export RUN [--children] [--artifacts] [--with-inputs] -o FILE.ltrun   one run (and the runs
                                       under it) as one file; --with-inputs: with the data files it read
                                       (--max-input-mb N, default 256)
  ltrun import FILE.ltrun [--max-input-mb N]   merge an exported file into the store, checked, all or
                                       nothing; carried input files go to STORE.inputs/
  ltrun compare A B [--tolerance X] [--no-diff]   params, sources (diffs), inputs, metrics of two runs
  ltrun model new [options] OUT        make a tiny random model in the HF layout (+ tokenizer)
  ltrun model info PATH                describe a checkpoint folder
  ltrun data pack --tokenizer T --out DIR INPUT...   tokenize a corpus into token shards
  ltrun data info DIR                  describe a packed corpus
  ltrun serve [--port 8080] [--host H] web view of the run store (read-only; loopback unless --host)
  ltrun db merge OUT.db IN.db ...      merge run stores (shards of a scan) into one
  ltrun doc api [--out FILE]           the Lua API reference (docs/reference/lua-api.md) from the
                                       option declarations the runtime checks
  ltrun launch --nproc-per-node N [--timeout S] [--nnodes M --node-rank R --master-addr A
               --master-port P] SCRIPT.lua [--key=value ...]   run SCRIPT on N ranks (lt.dist,
               data parallel; --timeout: seconds a collective waits for a rank, default 300)

global options (anywhere on the line):
  --db PATH        run store (default $LTRUN_DB, else ./ltrun.db)
  --device D       auto | cpu | cuda | cuda:N (default auto)
  --seed N         the run's seed (default 1; `--seed fresh`: a fresh one; recorded in the run):
                   LibTorch, Lua's math.random and every seed stream (lt.run.seed(NAME))
  --parent-run RUN the script's run becomes a child of run RUN (worker processes of a scan)
  --run-name NAME  the script's run name (default: the script's file name)
  --log            store a REPL or -e session as a run, as a script's always is
  -h, --help       this text
  --version        versions of ltrun and LibTorch
)";

bool take_value(int& i, int argc, char** argv, const char* name, std::string& out) {
  const std::string a = argv[i];
  const std::string eq = std::string(name) + "=";
  if (a.rfind(eq, 0) == 0) {
    out = a.substr(eq.size());
    return true;
  }
  if (a == name) {
    if (i + 1 >= argc) ltrun::fail("{} needs a value", name);
    out = argv[++i];
    return true;
  }
  return false;
}

// `ltrun CMD --help`: CMD's lines of kUsage (each "  ltrun CMD ..." line and the lines indented
// under it), so the usage is written once
std::string command_usage(const std::string& cmd) {
  std::string out, line;
  bool in = false;
  for (const char* p = kUsage; *p; p++) {
    if (*p != '\n') {
      line += *p;
      continue;
    }
    const bool head = line.rfind("  ltrun ", 0) == 0;
    if (head) in = line.substr(8).rfind(cmd + " ", 0) == 0;
    else if (line.rfind("   ", 0) != 0) in = false;  // a blank line or a heading ends a command's lines
    if (in) out += line + "\n";
    line.clear();
  }
  return "usage:\n" + out + "(global options such as --db PATH go anywhere on the line: ltrun --help)\n";
}

// A study is a folder experiments/NAME/ whose script is NAME/NAME.lua: `ltrun DIR` (the
// folder's path) and `ltrun DIR.lua` (the path the study had as one file, still on the study
// cards) both run DIR/NAME.lua. Any other path is the script itself; the run records the
// resolved file, so rerun, share and the workers a scan starts (arg[0]) name it directly.
std::string study_script(const std::string& cmd) {
  std::string dir = cmd;
  if (!ltrun::fs::is_dir(dir)) {
    const bool lua = cmd.size() > 4 && cmd.substr(cmd.size() - 4) == ".lua";
    if (ltrun::file_exists(cmd) || !lua) return cmd;
    dir = cmd.substr(0, cmd.size() - 4);
    if (!ltrun::fs::is_dir(dir)) return cmd;
  }
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const std::string file = dir + "/" + ltrun::base_name(dir) + ".lua";
  LT_CHECK(ltrun::file_exists(file),
           "{}: a folder without its study script {} (a study folder NAME/ holds NAME/NAME.lua)", cmd, file);
  return file;
}

// whether a subcommand's args ask for its usage: -h or --help among them (for launch, only
// before its script, whose own args follow)
bool wants_help(const std::string& cmd, const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "-h" || a == "--help") return true;
    if (cmd == "launch" && a.rfind("-", 0) != 0 &&
        ((a.size() > 4 && a.substr(a.size() - 4) == ".lua") || ltrun::fs::is_dir(a)))
      return false;
  }
  return false;
}

}  // namespace

namespace ltrun::cli {

int main(int argc, char** argv, const HostFactory& make_host) {
  install_crash_handler();  // a crash names where (crash.h)
  tune_allocator();  // before the first tensor: training reuses freed buffers (env.h)
  Globals g;
  g.make_host = make_host;
  const char* env_db = std::getenv("LTRUN_DB");
  g.db = env_db && *env_db ? env_db : "ltrun.db";
  try {
    std::vector<std::string> rest;
    std::string code;
    bool have_code = false;
    for (int i = 1; i < argc; i++) {
      std::string v;
      const std::string a = argv[i];
      if (take_value(i, argc, argv, "--db", v)) g.db = v;
      else if (take_value(i, argc, argv, "--device", v)) g.device = v;
      else if (take_value(i, argc, argv, "--seed", v)) {
        if (v == "fresh") {
          g.seed = fresh_seed();
        } else {
          LT_CHECK(!v.empty() && v.size() <= 16 && v.find_first_not_of("0123456789") == std::string::npos &&
                       std::stoull(v) < (uint64_t(1) << 53),
                   "--seed {}: expected an integer in [0, 2^53) or `fresh`", v);
          g.seed = std::stoull(v);
        }
      } else if (take_value(i, argc, argv, "--parent-run", v)) {
        LT_CHECK(!v.empty() && v.find_first_not_of("0123456789") == std::string::npos,
                 "--parent-run {}: expected a run id", v);
        g.parent = std::stoll(v);
      } else if (take_value(i, argc, argv, "--run-name", v)) {
        LT_CHECK(!v.empty(), "--run-name needs a run name");
        g.name = v;
      } else if (a == "--log") {
        g.log = true;
      } else if (rest.empty() && !have_code && (a == "-h" || a == "--help")) {
        std::fputs(kUsage, stdout);
        return kExitOk;
      } else if (rest.empty() && !have_code && a == "--version") {
        std::printf("ltrun %s (LibTorch %s, CUDA %s)\n", LTRUN_VERSION, torch_version().c_str(),
                    cuda_available() ? "available" : "not available");
        return kExitOk;
      } else if (rest.empty() && !have_code && a == "-e") {
        LT_CHECK(i + 1 < argc, "-e needs a chunk of Lua code");
        code = argv[++i];
        have_code = true;
      } else {
        rest.push_back(a);
      }
    }
    parse_device(g.device);  // fail early and clearly on a bad or unavailable device
    // (SQLite's own word for a folder is "disk I/O error" or "unable to open database file")
    LT_CHECK(!fs::is_dir(g.db), "{} {}: is a folder; the run store is a file (e.g. {}/ltrun.db)",
             g.db == (env_db ? env_db : "") ? "$LTRUN_DB" : "--db", g.db, g.db);

    if (have_code) {
      ScriptRun r{"-e", "", code, "=(command line)", rest, {}, {}};
      return run_script(g, r);
    }
    if (rest.empty()) return run_repl(g);
    const std::string cmd = rest[0];
    const std::vector<std::string> args(rest.begin() + 1, rest.end());
    if (wants_help(cmd, args)) {
      // model, data and db have usage texts of their own, with every option
      if (cmd == "model") return cmd_model(g, {"--help"});
      if (cmd == "data") return cmd_data(g, {"--help"});
      if (cmd == "db") return cmd_db(g, {"--help"});
      const std::string u = command_usage(cmd);
      if (u.find("  ltrun " + cmd) != std::string::npos) {
        std::fputs(u.c_str(), stdout);
        return kExitOk;
      }
    }
    if (cmd == "runs") return cmd_runs(g, args);
    if (cmd == "show") return cmd_show(g, args);
    if (cmd == "sql") return cmd_sql(g, args);
    if (cmd == "rerun") return cmd_rerun(g, args);
    if (cmd == "model") return cmd_model(g, args);
    if (cmd == "data") return cmd_data(g, args);
    if (cmd == "serve") return cmd_serve(g, args);
    if (cmd == "db") return cmd_db(g, args);
    if (cmd == "rm") return cmd_rm(g, args);
    if (cmd == "mark") return cmd_mark(g, args);
    if (cmd == "launch") return cmd_launch(g, args);
    if (cmd == "export") return cmd_export(g, args);
    if (cmd == "import") return cmd_import(g, args);
    if (cmd == "compare") return cmd_compare(g, args);
    if (cmd == "doc") return cmd_doc(g, args);
    if (cmd.rfind("--", 0) == 0) fail("unknown option {} (see ltrun --help)", cmd);
    const std::string file = study_script(cmd);
    if (!file_exists(file))
      fail("{}: no such script (and not a command: runs, show, sql, rerun, rm, mark, export, import, compare, model, data, serve, db, launch, doc; see ltrun --help)", cmd);
    ScriptRun r;
    r.script_path = absolute_path(file);
    r.code = read_file(file);
    r.name = base_name(file);
    if (r.name.size() > 4 && r.name.substr(r.name.size() - 4) == ".lua") r.name.resize(r.name.size() - 4);
    r.chunk_name = "@" + file;
    r.args = args;
    return run_script(g, r);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ltrun: %s\n", e.what());
    return kExitUsage;
  }
}

}  // namespace ltrun::cli
