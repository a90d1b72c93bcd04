// bindings/json.cpp: lt.json.encode / decode / null over runtime/core/json_value.h. Tables
// whose keys are exactly 1..n are arrays; other tables are objects with string keys (numbers
// as text); an empty table is {} unless it carries lt.json.array's metatable. JSON null
// decodes to lt.json.null.
#include "bindings/json.h"

#include "bindings/luat.h"
#include "runtime/core/json_depth.h"
#include "runtime/core/json_value.h"

namespace ltrun::lua {
namespace {

constexpr int kMaxDepth = 200;
char kNullKey;  // lightuserdata identity of lt.json.null

const ApiDoc& kEncode = declare_api({"lt.json.encode", "lt.json.encode(v[, opts]) → text", "JSON text of a value",
                                     {{"pretty", "boolean", "indented (default false)"}}});
int l_encode(lua_State* L) {
  check_options(L, 2, "lt.json.encode", kEncode);
  bool pretty = opt_bool(L, 2, "pretty", "lt.json.encode").value_or(false);
  push(L, json_encode(L, 1, pretty));
  return 1;
}

int l_decode(lua_State* L) {
  std::string text = check_string(L, 1, "lt.json.decode");
  nlohmann::json j;
  try {
    // nlohmann's parser keeps its own stack, but push_value recurses per level: refuse deep
    // documents while parsing (depth counts the enclosing arrays/objects of an event).
    j = nlohmann::json::parse(text, json_depth_limit("lt.json.decode", kMaxDepth));
  } catch (const nlohmann::json::parse_error& e) {
    fail("lt.json.decode: {}", e.what());
  }
  push_value(L, from_json(j));
  return 1;
}

}  // namespace

bool is_json_null(lua_State* L, int idx) { return lua_islightuserdata(L, idx) && lua_touserdata(L, idx) == &kNullKey; }

void push_json_null(lua_State* L) { lua_pushlightuserdata(L, &kNullKey); }

std::string json_encode(lua_State* L, int idx, bool pretty) {
  return to_json(to_value(L, idx, "lt.json.encode"), "lt.json.encode")
      .dump(pretty ? 2 : -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void register_json(lua_State* L) {
  luaL_newmetatable(L, kJsonArrayMeta);
  lua_pop(L, 1);
  new_module(L, "json");
  static const luaL_Reg fns[] = {{"encode", LT_FN(l_encode)}, {"decode", LT_FN(l_decode)}, {nullptr, nullptr}};
  set_funcs(L, fns);
  push_json_null(L);
  lua_setfield(L, -2, "null");
  luaL_getmetatable(L, kJsonArrayMeta);
  lua_setfield(L, -2, "array_mt");  // setmetatable({}, lt.json.array_mt) encodes as []
  lua_pop(L, 1);
}

}  // namespace ltrun::lua
