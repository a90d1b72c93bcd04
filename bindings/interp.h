// bindings/interp.h: a LuaJIT state with `lt` loaded: the command line's script host
// (runtime/cli/host.h). No Lua header here.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/cli/host.h"
#include "runtime/core/run_context.h"

namespace ltrun::lua {

using cli::Outcome;

class Interp : public cli::ScriptHost {
 public:
  Interp();
  ~Interp() override;
  Interp(const Interp&) = delete;
  Interp& operator=(const Interp&) = delete;

  // The run the bindings work for (seed, device, sink, session), kept for this state;
  // lt.device is set from it and Lua's math.random is seeded from its seed.
  void set_run(const RunContext& ctx) override;
  // arg[0] = script, arg[1..] = args; package.path: the script's folder, lib/, the project's
  void set_script(const std::string& script_path, const std::vector<std::string>& args) override;
  Outcome run(const std::string& code, const std::string& chunk_name) override;
  // One REPL entry: `=expr` and bare expressions print their values; a chunk that ends
  // early returns `incomplete`, so the caller reads another line.
  Outcome eval(const std::string& chunk) override;
  std::vector<std::string> complete(const std::string& prefix) override;  // names for tab completion

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string lib_dir();  // $LTRUN_LIB or the source tree's lib/

}  // namespace ltrun::lua
