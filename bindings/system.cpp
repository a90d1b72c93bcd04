// bindings/system.cpp: process-wide facts and switches: lt.version, lt.torch_version,
// lt.device (the --device choice), lt.seed, lt.cuda_available(), lt.interrupted().
#include <lua.hpp>

#include "bindings/luat.h"
#include "runtime/core/device.h"
#include "runtime/core/interrupt.h"

namespace ltrun::lua {
namespace {

int l_cuda_available(lua_State* L) {
  lua_pushboolean(L, cuda_available());
  return 1;
}

int l_interrupted(lua_State* L) {
  lua_pushboolean(L, interrupt_requested());
  return 1;
}

}  // namespace

void register_system(lua_State* L) {
  lua_getglobal(L, "lt");
  push(L, LTRUN_VERSION);
  lua_setfield(L, -2, "version");
  push(L, torch_version());
  lua_setfield(L, -2, "torch_version");
  push(L, "cpu");
  lua_setfield(L, -2, "device");
  static const luaL_Reg fns[] = {{"cuda_available", LT_FN(l_cuda_available)},
                                 {"interrupted", LT_FN(l_interrupted)}, {nullptr, nullptr}};
  set_funcs(L, fns);
  lua_pop(L, 1);
}

}  // namespace ltrun::lua
