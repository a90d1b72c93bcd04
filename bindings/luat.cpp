// bindings/luat.cpp: argument checks and pushers shared by the binding files.
#include "bindings/luat.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>

#include "bindings/json.h"
#include "bindings/tensor.h"
#include "runtime/core/json_value.h"
#include "runtime/store/script.h"

namespace ltrun::lua {

const char* type_name(lua_State* L, int idx) {
  if (luaL_getmetafield(L, idx, "__name")) {
    const char* n = lua_tostring(L, -1);
    lua_pop(L, 1);
    if (n) return n;
  }
  return luaL_typename(L, idx);
}

double check_number(lua_State* L, int idx, const char* fn) {
  if (lua_type(L, idx) != LUA_TNUMBER) fail("{}: argument {}: expected a number, got {}", fn, idx, type_name(L, idx));
  return lua_tonumber(L, idx);
}

int64_t check_integer(lua_State* L, int idx, const char* fn, int64_t lo, int64_t hi) {
  const double v = check_number(L, idx, fn);
  return integer_in(v, fmt::format("{}: argument {}", fn, idx), lo, hi);
}

int64_t to_integer(lua_State* L, int idx, const std::string& what, int64_t lo, int64_t hi) {
  if (lua_type(L, idx) != LUA_TNUMBER) fail("{}: expected an integer, got {}", what, type_name(L, idx));
  return integer_in(lua_tonumber(L, idx), what, lo, hi);
}

std::string check_string(lua_State* L, int idx, const char* fn) {
  if (lua_type(L, idx) != LUA_TSTRING) fail("{}: argument {}: expected a string, got {}", fn, idx, type_name(L, idx));
  size_t n = 0;
  const char* s = lua_tolstring(L, idx, &n);
  return std::string(s, n);
}

void check_table(lua_State* L, int idx, const char* fn) {
  if (!lua_istable(L, idx)) fail("{}: argument {}: expected a table, got {}", fn, idx, type_name(L, idx));
}

void check_function(lua_State* L, int idx, const char* fn) {
  if (!lua_isfunction(L, idx)) fail("{}: argument {}: expected a function, got {}", fn, idx, type_name(L, idx));
}

void check_stack(lua_State* L, int n, const char* fn) {
  if (!lua_checkstack(L, n)) fail("{}: out of Lua stack space (nesting too deep)", fn);
}

namespace {
// pushes t[key] when idx is a table; returns false (nothing pushed) when absent
bool get_field(lua_State* L, int idx, const char* key) {
  if (!lua_istable(L, idx)) return false;
  lua_getfield(L, idx, key);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return false;
  }
  return true;
}
}  // namespace

void check_options(lua_State* L, int idx, const char* fn, std::initializer_list<const char*> known) {
  check_options(L, idx, fn, std::vector<const char*>(known));
}

void check_options(lua_State* L, int idx, const char* fn, const std::vector<const char*>& known) {
  if (lua_isnoneornil(L, idx)) return;
  if (!lua_istable(L, idx)) fail("{}: argument {} (options): expected a table, got {}", fn, idx, type_name(L, idx));
  idx = abs_index(L, idx);
  check_stack(L, 3, fn);
  std::vector<std::string> unknown;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING) {
      const std::string what = lua_type(L, -1) == LUA_TNUMBER ? fmt::format("{}", lua_tonumber(L, -1))
                                                              : std::string(type_name(L, -1));
      lua_pop(L, 1);
      fail("{}: options: keys must be option names, found the key {}", fn, what);
    }
    const char* k = lua_tostring(L, -1);
    if (std::none_of(known.begin(), known.end(), [&](const char* x) { return std::strcmp(x, k) == 0; }))
      unknown.push_back(k);
  }
  if (unknown.empty()) return;
  std::sort(unknown.begin(), unknown.end());
  std::vector<std::string> names(known.begin(), known.end());
  std::sort(names.begin(), names.end());
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  fail("{}: unknown option '{}' (known: {})", fn, unknown.front(), list);
}

std::optional<double> opt_number(lua_State* L, int idx, const char* key, const char* fn) {
  if (!get_field(L, idx, key)) return std::nullopt;
  if (lua_type(L, -1) != LUA_TNUMBER) {
    std::string t = type_name(L, -1);
    lua_pop(L, 1);
    fail("{}: option {}: expected a number, got {}", fn, key, t);
  }
  double v = lua_tonumber(L, -1);
  lua_pop(L, 1);
  return v;
}

std::optional<int64_t> opt_integer(lua_State* L, int idx, const char* key, const char* fn, int64_t lo,
                                   int64_t hi) {
  auto v = opt_number(L, idx, key, fn);
  if (!v) return std::nullopt;
  return integer_in(*v, fmt::format("{}: option {}", fn, key), lo, hi);
}

std::optional<int> opt_int(lua_State* L, int idx, const char* key, const char* fn, int lo, int hi) {
  auto v = opt_integer(L, idx, key, fn, lo, hi);
  return v ? std::optional<int>(int(*v)) : std::nullopt;
}

std::optional<std::string> opt_string(lua_State* L, int idx, const char* key, const char* fn) {
  if (!get_field(L, idx, key)) return std::nullopt;
  if (lua_type(L, -1) != LUA_TSTRING) {
    std::string t = type_name(L, -1);
    lua_pop(L, 1);
    fail("{}: option {}: expected a string, got {}", fn, key, t);
  }
  std::string v = lua_tostring(L, -1);
  lua_pop(L, 1);
  return v;
}

std::optional<bool> opt_bool(lua_State* L, int idx, const char* key, const char* fn) {
  if (!get_field(L, idx, key)) return std::nullopt;
  if (!lua_isboolean(L, -1)) {
    std::string t = type_name(L, -1);
    lua_pop(L, 1);
    fail("{}: option {}: expected a boolean, got {}", fn, key, t);
  }
  bool v = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

namespace {
const char kRunContextKey[] = "ltrun.run_context";
}

void set_run_context(lua_State* L, RunContext* ctx) {
  lua_pushlightuserdata(L, ctx);
  lua_setfield(L, LUA_REGISTRYINDEX, kRunContextKey);
}

RunContext& run_context(lua_State* L) {
  lua_getfield(L, LUA_REGISTRYINDEX, kRunContextKey);
  auto* ctx = static_cast<RunContext*>(lua_touserdata(L, -1));
  lua_pop(L, 1);
  if (!ctx) {
    static RunContext none;  // a state no interpreter set up (no store)
    return none;
  }
  return *ctx;
}

void push(lua_State* L, const std::string& s) { lua_pushlstring(L, s.data(), s.size()); }

void set_field(lua_State* L, const char* key, double v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, key);
}

void set_field(lua_State* L, const char* key, const std::string& v) {
  push(L, v);
  lua_setfield(L, -2, key);
}

void set_bool(lua_State* L, const char* key, bool v) {
  lua_pushboolean(L, v);
  lua_setfield(L, -2, key);
}

namespace {
// calls f(i) with t[i] on top of the stack for i = 1..#t (popped after)
template <class F>
void each(lua_State* L, int idx, const char* fn, const char* what, F f) {
  if (!lua_istable(L, idx)) fail("{}: {}: expected a table, got {}", fn, what, type_name(L, idx));
  idx = abs_index(L, idx);
  const int n = int(lua_objlen(L, idx));
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, idx, i);
    f(i);
    lua_pop(L, 1);
  }
}
}  // namespace

std::vector<double> read_numbers(lua_State* L, int idx, const char* fn, const char* what) {
  std::vector<double> v;
  each(L, idx, fn, what, [&](int i) {
    if (lua_type(L, -1) != LUA_TNUMBER) fail("{}: {}[{}]: expected a number, got {}", fn, what, i, type_name(L, -1));
    v.push_back(lua_tonumber(L, -1));
  });
  return v;
}

void set_funcs(lua_State* L, const luaL_Reg* fns) {
  for (; fns->name; fns++) {
    lua_pushcfunction(L, fns->func);
    lua_setfield(L, -2, fns->name);
  }
}

void new_module(lua_State* L, const char* name) {
  lua_getglobal(L, "lt");
  lua_newtable(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, name);
  lua_remove(L, -2);
}

namespace {
// Deepest nesting of tables to_value follows (it recurses once per level).
constexpr size_t kMaxValueDepth = 200;

Value value_at(lua_State* L, int idx, const char* fn, std::vector<const void*>& path);

// A Lua function kept in the registry while a Function (to_value) holds it.
struct LuaRef {
  lua_State* L;
  int ref;
  LuaRef(lua_State* l, int idx) : L(l) {
    lua_pushvalue(L, idx);
    ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  ~LuaRef() { luaL_unref(L, LUA_REGISTRYINDEX, ref); }
  LuaRef(const LuaRef&) = delete;
  LuaRef& operator=(const LuaRef&) = delete;
};

// Userdata of type `meta` become Opaque values holding unbox(L, idx)
using Unbox = std::shared_ptr<void> (*)(lua_State* L, int idx);

std::vector<std::pair<const char*, Unbox>>& unboxers() {
  static std::vector<std::pair<const char*, Unbox>> u;
  return u;
}

Value table_value(lua_State* L, int idx, const char* fn, std::vector<const void*>& path) {
  const void* self = lua_topointer(L, idx);
  for (const void* p : path)
    if (p == self) fail("{}: a table contains itself (a cycle {} level(s) deep)", fn, path.size());
  if (path.size() >= kMaxValueDepth) fail("{}: tables nested deeper than {} levels", fn, kMaxValueDepth);
  check_stack(L, 3, fn);
  path.push_back(self);
  Value v = Value::table();
  Table& t = v.tab();
  const size_t n = lua_objlen(L, idx);
  for (size_t i = 1; i <= n; ++i) {
    lua_rawgeti(L, idx, int(i));
    t.array.push_back(value_at(L, -1, fn, path));
    lua_pop(L, 1);
  }
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) == LUA_TSTRING) {
      t.fields[lua_tostring(L, -2)] = value_at(L, -1, fn, path);
    } else if (lua_type(L, -2) == LUA_TNUMBER) {
      const double k = lua_tonumber(L, -2);
      if (!(k >= 1 && k <= double(n) && k == double(int64_t(k)))) t.numbers[k] = value_at(L, -1, fn, path);
    } else if (t.odd_key.empty()) {
      t.odd_key = type_name(L, -2);
    }
    lua_pop(L, 1);
  }
  if (n == 0 && lua_getmetatable(L, idx)) {  // lt.json.array_mt: an empty JSON array
    luaL_getmetatable(L, kJsonArrayMeta);
    t.json_array = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
  }
  path.pop_back();
  return v;
}

Value function_value(lua_State* L, int idx, const char* fn) {
  auto ref = std::make_shared<LuaRef>(L, idx);
  return Value(Function([L, ref](const List& args) {
    check_stack(L, int(args.size()) + 2, "callback");
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref->ref);
    for (const Value& a : args) push_value(L, a);
    if (lua_pcall(L, int(args.size()), 1, 0) != 0) {
      std::string msg = lua_isstring(L, -1) ? lua_tostring(L, -1) : "(error without message)";
      lua_pop(L, 1);
      throw Error(msg);
    }
    Value r = ::ltrun::lua::to_value(L, -1, "callback result");
    lua_pop(L, 1);
    return r;
  }));
}

Value value_at(lua_State* L, int idx, const char* fn, std::vector<const void*>& path) {
  idx = abs_index(L, idx);
  switch (lua_type(L, idx)) {
    case LUA_TNONE:
    case LUA_TNIL: return Value();
    case LUA_TBOOLEAN: return Value(lua_toboolean(L, idx) != 0);
    case LUA_TNUMBER: return Value(lua_tonumber(L, idx));
    case LUA_TSTRING: {
      size_t n = 0;
      const char* s = lua_tolstring(L, idx, &n);
      return Value(std::string(s, n));
    }
    case LUA_TTABLE: return table_value(L, idx, fn, path);
    case LUA_TFUNCTION: return function_value(L, idx, fn);
    default:
      if (is_tensor(L, idx)) return Value(check_tensor(L, idx, fn));
      if (is_json_null(L, idx)) return Value(Opaque{kJsonNull, nullptr});
      for (const auto& [meta, unbox] : unboxers())
        if (luaL_testudata(L, idx, meta)) return Value(Opaque{meta, unbox(L, idx)});
      return Value(Opaque{type_name(L, idx), nullptr});
  }
}
}  // namespace

Value to_value(lua_State* L, int idx, const char* fn) {
  std::vector<const void*> path;
  return value_at(L, idx, fn, path);
}

Options options(lua_State* L, int idx, const char* fn) { return Options(to_value(L, idx, fn), fn, idx); }

namespace {
// types of new_script_class: their objects are userdata holding a std::shared_ptr<void>
std::vector<const char*>& object_types() {
  static std::vector<const char*> t;
  return t;
}

void push_object(lua_State* L, const Opaque& o) {
  if (o.type == kJsonNull) return push_json_null(L);
  for (const char* type : object_types())
    if (o.type == type) {
      new (lua_newuserdata(L, sizeof(std::shared_ptr<void>))) std::shared_ptr<void>(o.ptr);
      luaL_getmetatable(L, type);
      lua_setmetatable(L, -2);
      return;
    }
  lua_pushnil(L);  // functions and other opaque values do not go back to Lua
}

int run_script(lua_State* L, const ScriptFunction& f) {
  List args;
  for (int i = 1; i <= lua_gettop(L); ++i) args.push_back(to_value(L, i, f.name));
  const List results = f.fn(Args(args, f.name, run_context(L)));
  check_stack(L, int(results.size()), f.name);
  for (const Value& r : results) {
    const auto* o = std::get_if<Opaque>(&r.v);
    int same = 0;
    for (int i = 1; o && o->ptr && i <= int(args.size()) && !same; ++i) {
      const auto* a = std::get_if<Opaque>(&args[size_t(i - 1)].v);
      if (a && a->ptr == o->ptr) same = i;
    }
    if (same) lua_pushvalue(L, same);
    else push_value(L, r);
  }
  return int(results.size());
}

int call_script(lua_State* L) {
  return run_script(L, *static_cast<const ScriptFunction*>(lua_touserdata(L, lua_upvalueindex(1))));
}

int object_index(lua_State* L) {  // methods (upvalue 1) first, then the class's index (upvalue 2)
  lua_pushvalue(L, 2);
  lua_rawget(L, lua_upvalueindex(1));
  if (!lua_isnil(L, -1)) return 1;
  lua_pop(L, 1);
  return run_script(L, *static_cast<const ScriptFunction*>(lua_touserdata(L, lua_upvalueindex(2))));
}

int object_gc(lua_State* L) {
  static_cast<std::shared_ptr<void>*>(lua_touserdata(L, 1))->~shared_ptr();
  return 0;
}
}  // namespace

void new_script_class(lua_State* L, const ScriptClass& c) {
  object_types().push_back(c.type);
  unboxers().emplace_back(c.type, [](lua_State* L, int idx) {
    return *static_cast<std::shared_ptr<void>*>(lua_touserdata(L, idx));
  });
  luaL_newmetatable(L, c.type);
  set_field(L, "__name", c.type);
  lua_pushcfunction(L, object_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushlightuserdata(L, const_cast<ScriptFunction*>(&c.tostring));
  lua_pushcclosure(L, LT_FN(call_script), 1);
  lua_setfield(L, -2, "__tostring");
  lua_newtable(L);
  set_script_funcs(L, c.methods);
  lua_pushlightuserdata(L, const_cast<ScriptFunction*>(&c.index));
  lua_pushcclosure(L, LT_FN(object_index), 2);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
}

void set_script_funcs(lua_State* L, const std::vector<ScriptFunction>& fs) {
  for (const ScriptFunction& f : fs) {
    lua_pushlightuserdata(L, const_cast<ScriptFunction*>(&f));
    lua_pushcclosure(L, LT_FN(call_script), 1);
    const char* key = f.key ? f.key : f.name;  // "lt.diag.splits" -> "splits", "model:forward" -> "forward"
    for (const char* c = key; *c && !f.key; ++c)
      if (*c == '.' || *c == ':') key = c + 1;
    lua_setfield(L, -2, key);
  }
}

void push_value(lua_State* L, const Value& v) {
  check_stack(L, 3, "push_value");
  std::visit(
      [L](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) lua_pushboolean(L, x);
        else if constexpr (std::is_same_v<T, double>) lua_pushnumber(L, x);
        else if constexpr (std::is_same_v<T, std::string>) push(L, x);
        else if constexpr (std::is_same_v<T, at::Tensor>) push_tensor(L, x);
        else if constexpr (std::is_same_v<T, std::shared_ptr<Table>>) {
          lua_createtable(L, int(x->array.size()), int(x->fields.size() + x->numbers.size()));
          for (size_t i = 0; i < x->array.size(); ++i) {
            push_value(L, x->array[i]);
            lua_rawseti(L, -2, int(i + 1));
          }
          for (const auto& [k, e] : x->numbers) {
            lua_pushnumber(L, k);
            push_value(L, e);
            lua_rawset(L, -3);
          }
          for (const auto& [k, e] : x->fields) {
            push_value(L, e);
            lua_setfield(L, -2, k.c_str());
          }
          if (x->json_array) luaL_setmetatable(L, kJsonArrayMeta);
        } else if constexpr (std::is_same_v<T, Opaque>) push_object(L, x);
        else lua_pushnil(L);  // nil; functions do not go back to Lua
      },
      v.v);
}

std::string value_text(lua_State* L, int idx) { return store::value_text(to_value(L, idx, "lt.json.encode")); }

}  // namespace ltrun::lua
