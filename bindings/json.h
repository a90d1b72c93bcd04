// bindings/json.h: Lua values <-> JSON (lt.json), also used to store tables as params.
#pragma once
#include <lua.hpp>

#include <string>

namespace ltrun::lua {

constexpr const char* kJsonArrayMeta = "lt.json.array";  // an empty table with it encodes as []
bool is_json_null(lua_State* L, int idx);
void push_json_null(lua_State* L);
std::string json_encode(lua_State* L, int idx, bool pretty);
void register_json(lua_State* L);

}  // namespace ltrun::lua
