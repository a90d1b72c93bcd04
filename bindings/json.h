// bindings/json.h: Lua values <-> JSON (lt.json), also used to store tables as params.
#pragma once
#include <lua.hpp>
#include <nlohmann/json_fwd.hpp>

#include <string>

namespace ltrun::lua {

nlohmann::json to_json(lua_State* L, int idx);
void push_json(lua_State* L, const nlohmann::json& j);
std::string json_encode(lua_State* L, int idx, bool pretty);
void register_json(lua_State* L);

}  // namespace ltrun::lua
