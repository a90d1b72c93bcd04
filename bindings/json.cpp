// bindings/json.cpp: lt.json.encode / decode / null. Tables whose keys are exactly 1..n are
// arrays; other tables are objects with string keys (numbers as text); an empty table is {}
// unless it carries lt.json.array's metatable. JSON null decodes to lt.json.null.
#include "bindings/json.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <vector>

#include "bindings/luat.h"
#include "runtime/core/json_depth.h"

namespace ltrun::lua {
namespace {

constexpr int kMaxDepth = 200;
const char kArrayMeta[] = "lt.json.array";
char kNullKey;  // lightuserdata identity of lt.json.null

bool is_null(lua_State* L, int idx) {
  return lua_islightuserdata(L, idx) && lua_touserdata(L, idx) == &kNullKey;
}

nlohmann::json convert(lua_State* L, int idx, std::vector<const void*>& path);

// a table is an array when its keys are exactly 1..n, or when empty and marked lt.json.array
bool is_array(lua_State* L, int idx) {
  const size_t n = lua_objlen(L, idx);
  size_t count = 0;
  bool all_int = true;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    count++;
    if (lua_type(L, -2) != LUA_TNUMBER) all_int = false;
    lua_pop(L, 1);
  }
  bool marked_array = false;
  if (lua_getmetatable(L, idx)) {
    luaL_getmetatable(L, kArrayMeta);
    marked_array = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
  }
  return (count > 0 && all_int && count == n) || (count == 0 && marked_array);
}

// `path` holds the tables from the root down to this one: a table met again on its own path
// is a cycle (a table shared by two branches is fine and is written twice).
nlohmann::json convert_table(lua_State* L, int idx, std::vector<const void*>& path) {
  const void* self = lua_topointer(L, idx);
  for (const void* p : path)
    if (p == self) fail("lt.json.encode: a table contains itself (a cycle {} level(s) deep)", path.size());
  if (int(path.size()) >= kMaxDepth) fail("lt.json.encode: tables nested deeper than {} levels", kMaxDepth);
  check_stack(L, 4, "lt.json.encode");
  path.push_back(self);
  struct Pop {
    std::vector<const void*>& p;
    ~Pop() { p.pop_back(); }
  } pop{path};
  if (is_array(L, idx)) {
    nlohmann::json a = nlohmann::json::array();
    for (size_t i = 1; i <= lua_objlen(L, idx); i++) {
      lua_rawgeti(L, idx, int(i));
      a.push_back(convert(L, -1, path));
      lua_pop(L, 1);
    }
    return a;
  }
  nlohmann::json o = nlohmann::json::object();
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    std::string key;
    if (lua_type(L, -2) == LUA_TSTRING) key = lua_tostring(L, -2);
    else if (lua_type(L, -2) == LUA_TNUMBER) key = fmt::format("{}", lua_tonumber(L, -2));
    else fail("lt.json.encode: table key of type {} cannot be a JSON key", luaL_typename(L, -2));
    o[key] = convert(L, -1, path);
    lua_pop(L, 1);
  }
  return o;
}

nlohmann::json convert(lua_State* L, int idx, std::vector<const void*>& path) {
  idx = abs_index(L, idx);
  switch (lua_type(L, idx)) {
    case LUA_TNIL: return nullptr;
    case LUA_TBOOLEAN: return bool(lua_toboolean(L, idx));
    case LUA_TNUMBER: {
      double v = lua_tonumber(L, idx);
      if (!std::isfinite(v)) fail("lt.json.encode: {} is not representable in JSON", v);
      if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) return int64_t(v);
      return v;
    }
    case LUA_TSTRING: {
      size_t n;
      const char* s = lua_tolstring(L, idx, &n);
      return std::string(s, n);
    }
    case LUA_TLIGHTUSERDATA:
      if (is_null(L, idx)) return nullptr;
      break;
    case LUA_TTABLE: return convert_table(L, idx, path);
    default: break;
  }
  fail("lt.json.encode: a {} is not representable in JSON", type_name(L, idx));
}

int l_encode(lua_State* L) {
  check_options(L, 2, "lt.json.encode", {"pretty"});
  bool pretty = opt_bool(L, 2, "pretty", "lt.json.encode").value_or(false);
  push(L, json_encode(L, 1, pretty));
  return 1;
}

int l_decode(lua_State* L) {
  std::string text = check_string(L, 1, "lt.json.decode");
  nlohmann::json j;
  try {
    // nlohmann's parser keeps its own stack, but push_json recurses per level: refuse deep
    // documents while parsing (depth counts the enclosing arrays/objects of an event).
    j = nlohmann::json::parse(text, json_depth_limit("lt.json.decode", kMaxDepth));
  } catch (const nlohmann::json::parse_error& e) {
    fail("lt.json.decode: {}", e.what());
  }
  push_json(L, j);
  return 1;
}

}  // namespace

nlohmann::json to_json(lua_State* L, int idx) {
  std::vector<const void*> path;
  return convert(L, idx, path);
}

std::string json_encode(lua_State* L, int idx, bool pretty) {
  return to_json(L, idx).dump(pretty ? 2 : -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void push_json(lua_State* L, const nlohmann::json& j) {
  check_stack(L, 3, "lt.json");
  switch (j.type()) {
    case nlohmann::json::value_t::null: lua_pushlightuserdata(L, &kNullKey); break;
    case nlohmann::json::value_t::boolean: lua_pushboolean(L, j.get<bool>()); break;
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: lua_pushnumber(L, j.get<double>()); break;
    case nlohmann::json::value_t::string: push(L, j.get_ref<const std::string&>()); break;
    case nlohmann::json::value_t::array: {
      lua_createtable(L, int(j.size()), 0);
      int i = 1;
      for (const auto& v : j) {
        push_json(L, v);
        lua_rawseti(L, -2, i++);
      }
      if (j.empty()) luaL_setmetatable(L, kArrayMeta);
      break;
    }
    case nlohmann::json::value_t::object: {
      lua_createtable(L, 0, int(j.size()));
      for (auto it = j.begin(); it != j.end(); ++it) {
        push(L, it.key());
        push_json(L, it.value());
        lua_rawset(L, -3);
      }
      break;
    }
    default: lua_pushnil(L);
  }
}

void register_json(lua_State* L) {
  luaL_newmetatable(L, kArrayMeta);
  lua_pop(L, 1);
  new_module(L, "json");
  static const luaL_Reg fns[] = {{"encode", LT_FN(l_encode)}, {"decode", LT_FN(l_decode)}, {nullptr, nullptr}};
  set_funcs(L, fns);
  lua_pushlightuserdata(L, &kNullKey);
  lua_setfield(L, -2, "null");
  luaL_getmetatable(L, kArrayMeta);
  lua_setfield(L, -2, "array_mt");  // setmetatable({}, lt.json.array_mt) encodes as []
  lua_pop(L, 1);
}

}  // namespace ltrun::lua
