// runtime/cli/host.h: what the command line needs from a script interpreter, without knowing
// which: run a script or a REPL entry as the run a RunContext describes, and complete names.
// bindings/interp.h's Interp (LuaJIT) implements it; bindings/cli/main.cpp hands a factory to
// cli::main, so runtime/cli holds no Lua.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/run_context.h"

namespace ltrun::cli {

struct Outcome {
  enum Kind { ok, error, interrupted, incomplete } kind = ok;
  std::string message;              // error text with a full traceback
  std::vector<std::string> values;  // REPL: the results, as text
  std::string script;               // REPL: the entry as a script statement (expressions printed)
};

class ScriptHost {
 public:
  virtual ~ScriptHost() = default;
  // The run the script works for (seed, device, sink, session); kept for the host's lifetime.
  virtual void set_run(const RunContext& ctx) = 0;
  // arg[0] = script, arg[1..] = args; the script's folder is searched for modules
  virtual void set_script(const std::string& script_path, const std::vector<std::string>& args) = 0;
  virtual Outcome run(const std::string& code, const std::string& chunk_name) = 0;
  // One REPL entry: `=expr` and bare expressions print their values; a chunk that ends
  // early returns `incomplete`, so the caller reads another line.
  virtual Outcome eval(const std::string& chunk) = 0;
  virtual std::vector<std::string> complete(const std::string& prefix) = 0;  // tab completion
};

using HostFactory = std::function<std::unique_ptr<ScriptHost>()>;

// The `ltrun` command line (runtime/cli/main.cpp): global options, then a script, -e CODE, a
// subcommand, or the REPL; scripts and the REPL run in hosts from make_host.
int main(int argc, char** argv, const HostFactory& make_host);

}  // namespace ltrun::cli
