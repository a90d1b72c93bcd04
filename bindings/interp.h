// bindings/interp.h: a LuaJIT state with `lt` loaded, as the command line uses it. No Lua
// header here: runtime/cli includes this file and stays free of Lua.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/run_context.h"

namespace ltrun::lua {

struct Outcome {
  enum Kind { ok, error, interrupted, incomplete } kind = ok;
  std::string message;              // error text with a full traceback
  std::vector<std::string> values;  // REPL: the results, as text
  std::string script;               // REPL: the entry as a script statement (expressions printed)
};

class Interp {
 public:
  Interp();
  ~Interp();
  Interp(const Interp&) = delete;
  Interp& operator=(const Interp&) = delete;

  // The run the bindings work for (seed, device, sink, session), kept for this state;
  // lt.device is set from it and Lua's math.random is seeded from its seed.
  void set_run(const RunContext& ctx);
  // arg[0] = script, arg[1..] = args; package.path gains the script's folder
  void set_script(const std::string& script_path, const std::vector<std::string>& args);
  Outcome run(const std::string& code, const std::string& chunk_name);
  // One REPL entry: `=expr` and bare expressions print their values; a chunk that ends
  // early returns `incomplete`, so the caller reads another line.
  Outcome eval(const std::string& chunk);
  std::vector<std::string> complete(const std::string& prefix);  // names for tab completion

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string lib_dir();  // $LTRUN_LIB or the source tree's lib/

}  // namespace ltrun::lua
