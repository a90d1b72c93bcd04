// bindings/cli/main.cpp: the `ltrun` program: the command line of runtime/cli (cli::main) with
// the LuaJIT interpreter (bindings/interp.h) as the host of scripts and the REPL.
#include "bindings/interp.h"
#include "runtime/cli/host.h"

int main(int argc, char** argv) {
  return ltrun::cli::main(argc, argv, [] { return std::make_unique<ltrun::lua::Interp>(); });
}
