// bindings/lt.h: builds the global `lt` table in a Lua state.
#pragma once
#include <lua.hpp>

namespace ltrun::lua {
void open_lt(lua_State* L);
}
