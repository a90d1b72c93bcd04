// runtime/cli/cli.h: the `ltrun` command line. main.cpp parses global options and picks a
// command; scripts and the REPL run in a ScriptHost (host.h: the Lua interpreter of bindings/,
// handed in by bindings/cli/main.cpp), so runtime/cli holds no Lua.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/cli/host.h"
#include "runtime/store/capture.h"
#include "runtime/store/store.h"

namespace ltrun::cli {

struct Globals {
  std::string db;                 // --db, $LTRUN_DB, ./ltrun.db
  std::string device = "auto";    // --device
  std::optional<uint64_t> seed;   // --seed N, or a fresh one for --seed fresh; unset: kDefaultSeed
  std::optional<int64_t> parent;  // --parent-run RUN: the script's run is a child of RUN (scan workers)
  std::string name;               // --run-name NAME: the script's run name (default: the script's)
  bool log = false;               // --log: store a REPL or -e session as a run (scripts always are)
  HostFactory make_host;          // the interpreter scripts and the REPL run in
};

// The run seed when --seed is not given (a rerun takes the stored seed): fixed, so that a
// study's default run repeats its printed numbers; `--seed fresh` draws one from the OS.
constexpr uint64_t kDefaultSeed = 1;

// Exit codes: 0 ok, 1 the script failed, 2 bad usage or input, 130 interrupted.
constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2, kExitInterrupted = 130;
// A script's error that starts with this, on one line, is a mistake in its args (raised by
// lt.study.args.usage_error, lib/lt/study/args.lua): printed as it is, exit 2, and no run kept
// (script.cpp).
constexpr char kUsageErrorPrefix[] = "usage error: ";
// A study's --help (lt.study.args.help_shown) ends the script with this error object: exit 0 and
// no run kept, like a usage error.
constexpr char kHelpShown[] = "help shown";

struct ScriptRun {
  std::string name, script_path, code, chunk_name;
  std::vector<std::string> args;
  std::optional<int64_t> rerun_of;
  std::optional<uint64_t> seed;  // stored seed on rerun
  // a replay: modules are served from these stored texts (runtime/store/capture.h)
  std::optional<std::vector<store::SourceFile>> stored_sources;
  std::vector<std::pair<std::string, std::string>> params;  // recorded on the new run
  int64_t* new_run = nullptr;                               // set to the new run's id
};
int run_script(const Globals& g, const ScriptRun& r);
int run_repl(const Globals& g);

int cmd_runs(const Globals& g, const std::vector<std::string>& args);
int cmd_show(const Globals& g, const std::vector<std::string>& args);
int cmd_sql(const Globals& g, const std::vector<std::string>& args);
int cmd_rerun(const Globals& g, const std::vector<std::string>& args);
int cmd_model(const Globals& g, const std::vector<std::string>& args);
int cmd_data(const Globals& g, const std::vector<std::string>& args);  // data_cmd.cpp
int cmd_serve(const Globals& g, const std::vector<std::string>& args);  // serve.cpp
int cmd_db(const Globals& g, const std::vector<std::string>& args);     // db_cmd.cpp
int cmd_rm(const Globals& g, const std::vector<std::string>& args);     // db_cmd.cpp
int cmd_mark(const Globals& g, const std::vector<std::string>& args);   // db_cmd.cpp
int cmd_launch(const Globals& g, const std::vector<std::string>& args);  // launch.cpp
int cmd_export(const Globals& g, const std::vector<std::string>& args);  // share_cmd.cpp
int cmd_import(const Globals& g, const std::vector<std::string>& args);  // share_cmd.cpp
int cmd_compare(const Globals& g, const std::vector<std::string>& args);  // share_cmd.cpp
int cmd_doc(const Globals& g, const std::vector<std::string>& args);      // doc.cpp
int show_sources(store::Store& st, int64_t run);                          // share_cmd.cpp
int64_t parse_run_id(const std::string& s);  // a run id argument, or an error naming it (commands.cpp)
std::string capture_lib_dir();  // $LTRUN_LIB or the source tree's lib/ (as bindings/interp.cpp)

// Walks a subcommand's arguments from `start`: "--key=value", "--key value", flags and
// positionals. while (a.next()) { if (a.key() == "--out") out = a.value(); ... }
class ArgReader {
 public:
  ArgReader(const std::vector<std::string>& args, size_t start, std::string command)
      : args_(args), i_(start), command_(std::move(command)) {}
  bool next();
  const std::string& key() const { return key_; }  // "--key", or the positional itself
  bool is_option() const { return key_.rfind("--", 0) == 0; }
  std::string value();                             // error naming the option when missing
  int64_t integer();                               // value() as a non-negative integer

 private:
  const std::vector<std::string>& args_;
  size_t i_;
  std::string command_, key_, inline_value_;
  bool has_inline_ = false;
};

// Aligned tables (runs, show, sql) escape control characters in cells (escape_controls).
enum class TableFormat { aligned, csv, json };
// aligned: at most max_width characters a line when max_width > 0: the leading columns that fit
// (at least one), and a last line naming the columns left out
std::string format_table(const store::Table& t, TableFormat f, size_t max_width = 0);
// Text from the store made safe for a terminal: C0 controls, DEL, C1 controls (U+0080..U+009F)
// and bytes that are not UTF-8 become \n \t \r \xNN \u00NN escapes, so a stored run name
// or error cannot send escape sequences; keep_newlines leaves \n and \t as they are.
std::string escape_controls(const std::string& s, bool keep_newlines);

}  // namespace ltrun::cli
