// bindings/diag.cpp: lt.diag, the LayerTracer study (runtime/diag/script.h).
#include "bindings/luat.h"
#include "runtime/diag/script.h"

namespace ltrun::lua {

void register_diag(lua_State* L) {
  new_module(L, "diag");
  set_script_funcs(L, diag::script_functions());
  lua_pop(L, 1);
}

}  // namespace ltrun::lua
