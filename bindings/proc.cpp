// bindings/proc.cpp: lt.proc, child processes from argv arrays (runtime/core/process.h):
// spawn(argv, {env = {K = V}, stdout = PATH, stderr = PATH, death_signal = "TERM"}) → pid
// (death_signal: the child gets it when this process ends, however it ends); wait(pid[, timeout_s])
// → nil while running, else {code =, signal =}; kill(pid[, "TERM"]) → false when gone;
// sleep(s); exe (this ltrun binary); cpus() (CPUs we may use); pid() (ours);
// stderr_is_terminal (for progress lines).
#include <lua.hpp>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "bindings/luat.h"
#include "runtime/core/env.h"
#include "runtime/core/interrupt.h"
#include "runtime/core/process.h"

namespace ltrun::lua {
namespace {

int l_spawn(lua_State* L) {
  const char* fn = "lt.proc.spawn";
  check_table(L, 1, fn);
  std::vector<std::string> argv;
  const int n = int(lua_objlen(L, 1));
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, 1, i);
    if (lua_type(L, -1) != LUA_TSTRING && lua_type(L, -1) != LUA_TNUMBER)
      fail("{}: argv[{}] is {}; expected a string", fn, i, type_name(L, -1));
    argv.push_back(lua_tostring(L, -1));
    lua_pop(L, 1);
  }
  SpawnOptions o;
  check_options(L, 2, fn, spawn_api());
  if (lua_istable(L, 2)) {
    lua_getfield(L, 2, "env");
    if (lua_istable(L, -1)) {
      lua_pushnil(L);
      while (lua_next(L, -2)) {
        if (lua_type(L, -2) != LUA_TSTRING) fail("{}: env keys must be variable names", fn);
        o.env[lua_tostring(L, -2)] = value_text(L, -1);
        lua_pop(L, 1);
      }
    }
    lua_pop(L, 1);
    o.stdout_path = opt_string(L, 2, "stdout", fn).value_or("");
    o.stderr_path = opt_string(L, 2, "stderr", fn).value_or("");
    lua_getfield(L, 2, "death_signal");
    if (lua_type(L, -1) == LUA_TNUMBER) o.death_signal = int(check_integer(L, -1, fn));
    else if (lua_type(L, -1) == LUA_TSTRING) o.death_signal = signal_number(lua_tostring(L, -1));
    else if (!lua_isnil(L, -1)) fail("{}: death_signal is {}; expected a signal name (\"TERM\") or number", fn, type_name(L, -1));
    lua_pop(L, 1);
    LT_CHECK(o.death_signal >= 0 && o.death_signal < 65, "{}: death_signal {} is not a signal", fn, o.death_signal);
  }
  lua_pushnumber(L, double(spawn_process(argv, o)));
  return 1;
}

int l_wait(lua_State* L) {
  const long pid = long(check_integer(L, 1, "lt.proc.wait", 1, INT32_MAX));
  const double timeout = lua_isnoneornil(L, 2) ? -1 : check_number(L, 2, "lt.proc.wait");
  const auto s = wait_process(pid, timeout);
  if (!s) {
    lua_pushnil(L);
    return 1;
  }
  lua_createtable(L, 0, 2);
  set_field(L, "code", s->code);
  set_field(L, "signal", s->signal);
  return 1;
}

int l_kill(lua_State* L) {
  const long pid = long(check_integer(L, 1, "lt.proc.kill", 1, INT32_MAX));
  int sig = SIGTERM;
  if (lua_type(L, 2) == LUA_TNUMBER) sig = int(lua_tointeger(L, 2));
  else if (lua_isstring(L, 2)) sig = signal_number(lua_tostring(L, 2));
  lua_pushboolean(L, signal_process(pid, sig));
  return 1;
}

// lt.proc.sleep(seconds): returns early (false) when Ctrl-C arrives
int l_sleep(lua_State* L) {
  const double s = check_number(L, 1, "lt.proc.sleep");
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(s);
  while (std::chrono::steady_clock::now() < end) {
    if (interrupt_requested()) {
      lua_pushboolean(L, 0);
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  lua_pushboolean(L, 1);
  return 1;
}

int l_cpus(lua_State* L) {
  lua_pushnumber(L, available_cpus());
  return 1;
}

int l_pid(lua_State* L) {
  lua_pushnumber(L, double(getpid()));
  return 1;
}

}  // namespace

void register_proc(lua_State* L) {
  new_module(L, "proc");
  static const luaL_Reg fns[] = {{"spawn", LT_FN(l_spawn)}, {"wait", LT_FN(l_wait)},
                                 {"kill", LT_FN(l_kill)},   {"sleep", LT_FN(l_sleep)},
                                 {"cpus", LT_FN(l_cpus)},   {"pid", LT_FN(l_pid)},
                                 {nullptr, nullptr}};
  set_funcs(L, fns);
  set_field(L, "exe", self_executable());
  set_bool(L, "stderr_is_terminal", stderr_is_terminal());
  lua_pop(L, 1);
}

}  // namespace ltrun::lua
