// bindings/data.cpp: lt.data, packed token corpora (runtime/data/script.h).
#include "bindings/luat.h"
#include "runtime/data/script.h"

namespace ltrun::lua {

void register_data(lua_State* L) {
  new_module(L, "data");
  set_script_funcs(L, data::script_functions());
  lua_pop(L, 1);
}

}  // namespace ltrun::lua
