// bindings/rl.cpp: lt.rl, RL post-training, and lt.rl.Reference (runtime/rl/script.h).
#include "bindings/luat.h"
#include "runtime/rl/script.h"

namespace ltrun::lua {

void register_rl(lua_State* L) {
  new_script_class(L, rl::reference_class());
  new_module(L, "rl");
  set_script_funcs(L, rl::script_functions());
  lua_pop(L, 1);
}

}  // namespace ltrun::lua
