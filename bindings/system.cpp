// bindings/system.cpp: process-wide facts and switches: lt.version, lt.torch_version,
// lt.device (the --device choice), lt.cuda_available(), lt.interrupted(),
// lt.clock(), lt.noop() and lt.noop_raw() (for the call-overhead benchmark).
#include <lua.hpp>

#include <chrono>

#include "bindings/luat.h"
#include "runtime/core/device.h"
#include "runtime/core/interrupt.h"

namespace ltrun::lua {
namespace {

int l_cuda_available(lua_State* L) {
  lua_pushboolean(L, cuda_available());
  return 1;
}

// the cheapest possible call into C++, through the same trampoline as every binding: what
// experiments/bench/lua_call.lua measures the per-call overhead with
int l_noop(lua_State*) { return 0; }

// monotonic wall clock in seconds (benchmarks, rates), read once the session GPU's queued work is done
int l_clock(lua_State* L) {
  synchronize(c10::Device(run_context(L).device));
  lua_pushnumber(L, std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count());
  return 1;
}

int l_interrupted(lua_State* L) {
  lua_pushboolean(L, interrupt_requested());
  return 1;
}

}  // namespace

void register_system(lua_State* L) {
  lua_getglobal(L, "lt");
  set_field(L, "version", LTRUN_VERSION);
  set_field(L, "torch_version", torch_version());
  set_field(L, "device", "cpu");
  static const luaL_Reg fns[] = {{"cuda_available", LT_FN(l_cuda_available)},
                                 {"interrupted", LT_FN(l_interrupted)}, {"noop", LT_FN(l_noop)},
                                 {"clock", LT_FN(l_clock)}, {nullptr, nullptr}};
  set_funcs(L, fns);
  set_script_funcs(L, api_functions());  // lt.api (runtime/core/api.h)
  lua_pushcfunction(L, l_noop);  // unwrapped: the baseline for the trampoline's cost
  lua_setfield(L, -2, "noop_raw");
  lua_pop(L, 1);
}

}  // namespace ltrun::lua
