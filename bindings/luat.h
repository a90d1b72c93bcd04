// bindings/luat.h: the thin helper every binding file uses (after Torch7's luaT): the
// exception trampoline, argument checks that name the function and argument, and pushers.
#pragma once
#include <c10/util/Exception.h>
#include <lua.hpp>

#include <cstdint>
#include <climits>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/core/fields.h"
#include "runtime/core/run_context.h"
#include "runtime/core/interrupt.h"
#include "runtime/core/options.h"
#include "runtime/core/value.h"

namespace ltrun::lua {

// Every C function exposed to Lua goes through wrap<F>: a C++ exception becomes a Lua error
// only after F's C++ frames are gone (lua_error never unwinds through live C++ objects).
template <lua_CFunction F>
int wrap(lua_State* L) {
  {
    std::string msg;
    try {
      check_interrupt();  // Ctrl-C stops even JIT-compiled loops at their next call into C++
      return F(L);
    } catch (const c10::Error& e) {  // LibTorch's: its message, not its C++ backtrace
      msg = e.what_without_backtrace();
    } catch (const std::exception& e) {
      msg = e.what();
    }
    lua_pushlstring(L, msg.data(), msg.size());
  }
  return lua_error(L);
}
#define LT_FN(f) (&::ltrun::lua::wrap<f>)

inline int abs_index(lua_State* L, int idx) {
  return (idx > 0 || idx <= LUA_REGISTRYINDEX) ? idx : lua_gettop(L) + idx + 1;
}

// Argument checks: throw ltrun::Error("fn: argument N: expected ..., got ...").
const char* type_name(lua_State* L, int idx);
double check_number(lua_State* L, int idx, const char* fn);

// Integers: a Lua number is a double, so every integer argument is checked to be integral and
// within [lo, hi] before it is converted (2^40 as an int would wrap to a wrong layer, 1e12 to
// a negative count). The defaults are the doubles that hold integers exactly; check_int and
// opt_int also bound to int's range. Errors name fn and the argument, option or `what`.
constexpr int64_t kMaxExactInteger = int64_t(1) << 53;
int64_t check_integer(lua_State* L, int idx, const char* fn, int64_t lo = -kMaxExactInteger,
                      int64_t hi = kMaxExactInteger);
int check_int(lua_State* L, int idx, const char* fn, int lo = INT32_MIN, int hi = INT32_MAX);
// The number at idx (a table entry, a key) described by `what` ("model:forward: intervene key").
int64_t to_integer(lua_State* L, int idx, const std::string& what, int64_t lo = -kMaxExactInteger,
                   int64_t hi = kMaxExactInteger);
std::string check_string(lua_State* L, int idx, const char* fn);
void check_table(lua_State* L, int idx, const char* fn);
void check_function(lua_State* L, int idx, const char* fn);
// Room for n more values on the Lua stack (recursive walks over nested tables call this per
// level); an error naming fn instead of writing past the stack.
void check_stack(lua_State* L, int n, const char* fn);

// Option tables: check_options first (a misspelled key must not be ignored silently), then
// opt_*(L, idx, key) reads t[key] when idx holds a table (nil/none → nullopt).
// check_options: idx holds nil, none or a table whose keys are all names among `known`; an
// error "fn: unknown option 'KEY' (known: ...)" names the first unknown key in sorted order.
void check_options(lua_State* L, int idx, const char* fn, std::initializer_list<const char*> known);
void check_options(lua_State* L, int idx, const char* fn, const std::vector<const char*>& known);
// The options a function knows: its own and a shared set (read_loop_options' keys).
std::vector<const char*> option_keys(std::initializer_list<const char*> own, const std::vector<const char*>& shared);
// A renamed option: t[old] present is an error "fn: option 'old' was renamed: `hint`".
void refuse_renamed(lua_State* L, int idx, const char* fn, const char* old, const std::string& hint);
std::optional<double> opt_number(lua_State* L, int idx, const char* key, const char* fn);
std::optional<int64_t> opt_integer(lua_State* L, int idx, const char* key, const char* fn,
                                   int64_t lo = -kMaxExactInteger, int64_t hi = kMaxExactInteger);
std::optional<int> opt_int(lua_State* L, int idx, const char* key, const char* fn, int lo = INT32_MIN,
                           int hi = INT32_MAX);
std::optional<std::string> opt_string(lua_State* L, int idx, const char* key, const char* fn);
std::optional<bool> opt_bool(lua_State* L, int idx, const char* key, const char* fn);

// Field lists (runtime/core/fields.h). read_fields: for each field whose key the table at idx
// (a table, nil or none) holds, s.*member = t[key], checked as opt_* checks (a list of strings
// also takes one string); absent keys keep s's value. With check, the table's keys are first
// checked against the fields' keys and `more` (check_options).
void read_member(lua_State* L, int idx, const char* key, const char* fn, double& v, int64_t, int64_t);
void read_member(lua_State* L, int idx, const char* key, const char* fn, int64_t& v, int64_t lo, int64_t hi);
void read_member(lua_State* L, int idx, const char* key, const char* fn, int& v, int64_t lo, int64_t hi);
void read_member(lua_State* L, int idx, const char* key, const char* fn, uint64_t& v, int64_t lo, int64_t hi);
void read_member(lua_State* L, int idx, const char* key, const char* fn, bool& v, int64_t, int64_t);
void read_member(lua_State* L, int idx, const char* key, const char* fn, std::string& v, int64_t, int64_t);
void read_member(lua_State* L, int idx, const char* key, const char* fn, std::vector<std::string>& v, int64_t,
                 int64_t);
void read_member(lua_State* L, int idx, const char* key, const char* fn, std::vector<double>& v, int64_t,
                 int64_t);
template <class S>
void read_fields(lua_State* L, int idx, const char* fn, S& s, const Fields<S>& fs, bool check = false,
                 const std::vector<const char*>& more = {}) {
  if (check) check_options(L, idx, fn, field_keys(fs, more));
  for (const Field<S>& f : fs) std::visit([&](auto m) { read_member(L, idx, f.key, fn, s.*m, f.lo, f.hi); }, f.member);
}

// The run this state works for (bindings/interp.cpp keeps one per lua_State in the registry;
// a state without one gets a context of seed 1, cpu, and no store).
RunContext& run_context(lua_State* L);
void set_run_context(lua_State* L, RunContext* ctx);  // ctx outlives L's use of it
// A `seed =` option: t[key] when given (an integer in [0, 2^53)), else the run's stream seed.
uint64_t opt_seed(lua_State* L, int idx, const char* fn, const char* stream, const char* key = "seed");

// Lua arrays (1-based) to vectors: idx holds a table of numbers (strings); errors name fn,
// `what` and the entry ("fn: ids[3]: expected an integer, got string").
std::vector<double> read_numbers(lua_State* L, int idx, const char* fn, const char* what = "list");
std::vector<int64_t> read_integers(lua_State* L, int idx, const char* fn, const char* what = "list",
                                   int64_t lo = -kMaxExactInteger, int64_t hi = kMaxExactInteger);
std::vector<std::string> read_strings(lua_State* L, int idx, const char* fn, const char* what = "list");
// t[key] as one string or a list of strings (nil: empty)
std::vector<std::string> opt_strings(lua_State* L, int t, const char* key, const char* fn);

void push(lua_State* L, const std::string& s);
inline void push(lua_State* L, double v) { lua_pushnumber(L, v); }
inline void push(lua_State* L, const char* s) { lua_pushstring(L, s); }
template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};
// Vectors to Lua arrays: numbers, strings, booleans or vectors of these (arrays of arrays,
// 1-based); entry i at key first + i.
template <class T>
void push_array(lua_State* L, const std::vector<T>& v, int first = 1) {
  lua_createtable(L, int(v.size()), first == 0 ? 1 : 0);
  for (size_t i = 0; i < v.size(); i++) {
    if constexpr (std::is_same_v<T, bool>) lua_pushboolean(L, v[i]);
    else if constexpr (std::is_arithmetic_v<T>) lua_pushnumber(L, double(v[i]));
    else if constexpr (is_vector<T>::value) push_array(L, v[i]);
    else push(L, v[i]);
    lua_rawseti(L, -2, int(i) + first);
  }
}
// A Lua array of v's elements, each pushed by push_one(element).
template <class T, class F>
void push_list(lua_State* L, const std::vector<T>& v, F push_one) {
  lua_createtable(L, int(v.size()), 0);
  for (size_t i = 0; i < v.size(); i++) {
    push_one(v[i]);
    lua_rawseti(L, -2, int(i + 1));
  }
}
// t[key] = v for the table on top of the stack
void set_field(lua_State* L, const char* key, double v);
void set_field(lua_State* L, const char* key, const std::string& v);
inline void set_field(lua_State* L, const char* key, const char* v) { set_field(L, key, std::string(v)); }
void set_bool(lua_State* L, const char* key, bool v);
template <class T>
void set_array(lua_State* L, const char* key, const std::vector<T>& v, int first = 1) {
  push_array(L, v, first);
  lua_setfield(L, -2, key);
}
// set_fields: t[key] = s.*member for each field, on the table on top of the stack.
template <class S>
void set_fields(lua_State* L, const S& s, const Fields<S>& fs) {
  for (const Field<S>& f : fs)
    std::visit(
        [&](auto m) {
          if constexpr (std::is_same_v<decltype(s.*m), const bool&>) set_bool(L, f.key, s.*m);
          else if constexpr (std::is_arithmetic_v<std::decay_t<decltype(s.*m)>>) set_field(L, f.key, double(s.*m));
          else if constexpr (std::is_same_v<decltype(s.*m), const std::string&>) set_field(L, f.key, s.*m);
          else set_array(L, f.key, s.*m);
        },
        f.member);
}
// A list of records: one table per element of v, its fields set by set_fields.
template <class S>
void push_records(lua_State* L, const std::vector<S>& v, const Fields<S>& fs) {
  lua_createtable(L, int(v.size()), 0);
  for (size_t i = 0; i < v.size(); ++i) {
    lua_createtable(L, 0, int(fs.size()));
    set_fields(L, v[i], fs);
    lua_rawseti(L, -2, int(i + 1));
  }
}
// Registers fns into the table on top of the stack (each must already be wrapped).
void set_funcs(lua_State* L, const luaL_Reg* fns);
// The metatable of a userdata type: __name, __gc (unwrapped: it must not throw),
// __tostring, and __index = `index` holding the method table as upvalue 1 (index looks
// methods up there first, then computes properties). Leaves nothing on the stack.
// more: methods of the type that runtime implements (set_script_funcs).
void new_class(lua_State* L, const char* name, const luaL_Reg* methods, lua_CFunction index,
               lua_CFunction gc, lua_CFunction tostring, const std::vector<ScriptFunction>& more = {});
// The metatable of runtime objects of class c (runtime/core/options.h: ScriptClass): a
// userdata holding the object's shared_ptr, its methods, c.index for other keys, c.tostring.
// Opaque values of type c.type go to Lua as such userdata and come back as they were.
void new_script_class(lua_State* L, const ScriptClass& c);
// lt.<name> = new table (left on the stack)
void new_module(lua_State* L, const char* name);

// A Lua function kept in the registry for the lifetime of this object (a callback C++ calls
// later). idx: a function, or nil (ref stays LUA_NOREF); anything else is an error naming
// `what`. call(context, numbers...) calls it with numbers; an error in it is rethrown as
// "context: message".
struct LuaRef {
  lua_State* L;
  int ref = LUA_NOREF;
  LuaRef(lua_State* l, int idx, const char* fn, const char* what);
  ~LuaRef();
  LuaRef(const LuaRef&) = delete;
  LuaRef& operator=(const LuaRef&) = delete;
  template <class... A>
  void call(const std::string& context, A... args) const {
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
    (lua_pushnumber(L, double(args)), ...);
    pcall(context, int(sizeof...(A)), 0);
  }
  // calls the function pushed with its nargs arguments, leaving nresults; errors as above
  void pcall(const std::string& context, int nargs, int nresults) const;
};

// The one reader and the one pusher between Lua values and runtime Values
// (runtime/core/value.h). to_value: tensors stay tensors, functions become Functions that call
// back into L (an error in one is thrown with its message), other userdata become Opaque
// values named by their type; a table that contains itself is an error naming fn.
Value to_value(lua_State* L, int idx, const char* fn);
void push_value(lua_State* L, const Value& v);
// Options(to_value(L, idx, fn), fn, idx): the option table argument idx of fn
Options options(lua_State* L, int idx, const char* fn);
// Userdata of type `meta` become Opaque values holding unbox(L, idx) (alive while L holds it).
using Unbox = std::shared_ptr<void> (*)(lua_State* L, int idx);
void register_unbox(const char* meta, Unbox unbox);
// Registers runtime functions into the table on top of the stack, each under the last part of
// its name: a call converts the arguments (to_value), runs f.fn and pushes its results (an
// object an argument held comes back as that argument: m:freeze(spec) returns m itself).
void set_script_funcs(lua_State* L, const std::vector<ScriptFunction>& fs);

// Value of a Lua scalar as text for the run store: numbers as %.17g-shortest, booleans
// true/false, strings raw, tables as JSON.
std::string value_text(lua_State* L, int idx);

}  // namespace ltrun::lua
