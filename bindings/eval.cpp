// bindings/eval.cpp: lt.eval, benchmarks and scoring (runtime/eval/script.h).
#include "bindings/luat.h"
#include "runtime/eval/script.h"

namespace ltrun::lua {

void register_eval(lua_State* L) {
  new_module(L, "eval");
  set_script_funcs(L, eval::script_functions());
  lua_pop(L, 1);
}

}  // namespace ltrun::lua
