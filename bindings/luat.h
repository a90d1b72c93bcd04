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
#include <vector>

#include "runtime/core/error.h"
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
// a negative count). The defaults are the doubles that hold integers exactly; opt_int also
// bounds to int's range. Errors name fn and the argument, option or `what`.
int64_t check_integer(lua_State* L, int idx, const char* fn, int64_t lo = -kMaxExactInteger,
                      int64_t hi = kMaxExactInteger);
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
// the keys `api` declares (runtime/core/api.h): the keys accepted are the keys documented
inline void check_options(lua_State* L, int idx, const char* fn, const ApiDoc& api) { check_options(L, idx, fn, api.keys()); }
std::optional<double> opt_number(lua_State* L, int idx, const char* key, const char* fn);
std::optional<int64_t> opt_integer(lua_State* L, int idx, const char* key, const char* fn,
                                   int64_t lo = -kMaxExactInteger, int64_t hi = kMaxExactInteger);
std::optional<int> opt_int(lua_State* L, int idx, const char* key, const char* fn, int lo = INT32_MIN,
                           int hi = INT32_MAX);
std::optional<std::string> opt_string(lua_State* L, int idx, const char* key, const char* fn);
std::optional<bool> opt_bool(lua_State* L, int idx, const char* key, const char* fn);

// The run this state works for (bindings/interp.cpp keeps one per lua_State in the registry;
// a state without one gets a context of seed 1, cpu, and no store).
RunContext& run_context(lua_State* L);
void set_run_context(lua_State* L, RunContext* ctx);  // ctx outlives L's use of it

// A Lua array (1-based) of numbers to a vector; errors name fn, `what` and the entry
// ("fn: list[3]: expected a number, got string").
std::vector<double> read_numbers(lua_State* L, int idx, const char* fn, const char* what = "list");

void push(lua_State* L, const std::string& s);
inline void push(lua_State* L, double v) { lua_pushnumber(L, v); }
inline void push(lua_State* L, const char* s) { lua_pushstring(L, s); }
// Numbers to a Lua array (1-based).
template <class T>
void push_array(lua_State* L, const std::vector<T>& v) {
  lua_createtable(L, int(v.size()), 0);
  for (size_t i = 0; i < v.size(); i++) {
    lua_pushnumber(L, double(v[i]));
    lua_rawseti(L, -2, int(i + 1));
  }
}
// t[key] = v for the table on top of the stack
void set_field(lua_State* L, const char* key, double v);
void set_field(lua_State* L, const char* key, const std::string& v);
inline void set_field(lua_State* L, const char* key, const char* v) { set_field(L, key, std::string(v)); }
void set_bool(lua_State* L, const char* key, bool v);
// Registers fns into the table on top of the stack (each must already be wrapped).
void set_funcs(lua_State* L, const luaL_Reg* fns);
// The metatable of runtime objects of class c (runtime/core/options.h: ScriptClass): a
// userdata holding the object's shared_ptr, its methods, c.index for other keys, c.tostring.
// Opaque values of type c.type go to Lua as such userdata and come back as they were.
void new_script_class(lua_State* L, const ScriptClass& c);
// lt.<name> = new table (left on the stack)
void new_module(lua_State* L, const char* name);

// The one reader and the one pusher between Lua values and runtime Values
// (runtime/core/value.h). to_value: tensors stay tensors, functions become Functions that call
// back into L (an error in one is thrown with its message), other userdata become Opaque
// values named by their type (objects of new_script_class hold their object); a table that
// contains itself is an error naming fn.
Value to_value(lua_State* L, int idx, const char* fn);
void push_value(lua_State* L, const Value& v);
// Options(to_value(L, idx, fn), fn, idx): the option table argument idx of fn
Options options(lua_State* L, int idx, const char* fn);
// Registers runtime functions into the table on top of the stack, each under the last part of
// its name: a call converts the arguments (to_value), runs f.fn and pushes its results (an
// object an argument held comes back as that argument: m:freeze(spec) returns m itself).
void set_script_funcs(lua_State* L, const std::vector<ScriptFunction>& fs);

// Value of a Lua scalar as text for the run store: numbers as %.17g-shortest, booleans
// true/false, strings raw, tables as JSON.
std::string value_text(lua_State* L, int idx);

}  // namespace ltrun::lua
