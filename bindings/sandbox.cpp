// bindings/sandbox.cpp: lt.sandbox, Python programs in a sandbox (runtime/sandbox/sandbox.h):
// run{code =, stdin =, timeout =, memory_mb =, nproc =, unsafe_local_exec =} → {status =, exit =,
// signal =, stdout =, stderr =, wall =, memory_bound =, nproc =, process_mb =}; run_many({...},
// {workers =}) → results in order; available() → true, or false and the reason.
// unsafe_local_exec = true records the param unsafe_local_exec=true on the current run.
#include <lua.hpp>

#include <string>
#include <vector>

#include "bindings/luat.h"
#include "runtime/sandbox/sandbox.h"

namespace ltrun::lua {
namespace {

// t[key] as bytes (NUL bytes kept: opt_string stops at the first), or nullopt when nil.
std::optional<std::string> opt_bytes(lua_State* L, int idx, const char* key, const std::string& fn) {
  lua_getfield(L, idx, key);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return std::nullopt;
  }
  if (lua_type(L, -1) != LUA_TSTRING) fail("{}: {}: expected a string, got {}", fn, key, type_name(L, -1));
  size_t n = 0;
  const char* s = lua_tolstring(L, -1, &n);
  std::string v(s, n);
  lua_pop(L, 1);
  return v;
}

const ApiDoc& kRun = declare_api(
    {"lt.sandbox.run", "lt.sandbox.run{code=, ...} → {status=, stdout=, stderr=, exit_code=, wall_s=, ...}",
     "runs a Python program in bubblewrap: no network, read-only system, bounded time, memory and processes",
     {{"code", "string", "the Python program (required)"}, {"stdin", "string", "its standard input"},
      {"timeout", "number", "seconds of wall time"}, {"memory_mb", "integer", "memory of the whole program"},
      {"nproc", "integer", "processes at most"}, {"unsafe_local_exec", "boolean", "run without the sandbox"}}});
const ApiDoc& kRunMany = declare_api({"lt.sandbox.run_many", "lt.sandbox.run_many(programs[, opts]) → results",
                                      "runs programs (as lt.sandbox.run) in parallel", {{"workers", "integer", "at once"}}});
sandbox::Program read_program(lua_State* L, int idx, const std::string& fn) {
  if (!lua_istable(L, idx)) fail("{}: expected a table {{code = ...}}, got {}", fn, type_name(L, idx));
  idx = abs_index(L, idx);
  check_options(L, idx, fn.c_str(), kRun);
  sandbox::Program p;
  auto code = opt_bytes(L, idx, "code", fn);
  if (!code) fail("{}: code is missing (the Python program, a string)", fn);
  p.code = std::move(*code);
  p.stdin_data = opt_bytes(L, idx, "stdin", fn).value_or("");
  p.timeout = opt_number(L, idx, "timeout", fn.c_str()).value_or(p.timeout);
  p.memory_mb = opt_integer(L, idx, "memory_mb", fn.c_str(), sandbox::kMinMemoryMb, sandbox::kMaxMemoryMb)
                    .value_or(p.memory_mb);
  p.nproc = opt_int(L, idx, "nproc", fn.c_str(), 1, 4096).value_or(p.nproc);
  p.unsafe_local_exec = opt_bool(L, idx, "unsafe_local_exec", fn.c_str()).value_or(false);
  try {
    sandbox::validate(p);
  } catch (const Error& e) {
    fail("{}: {}", fn, e.what());
  }
  return p;
}

void push_result(lua_State* L, const sandbox::Result& r) {
  lua_createtable(L, 0, 10);
  set_field(L, "status", sandbox::status_name(r.status));
  set_field(L, "exit", r.exit_code);
  set_field(L, "signal", r.signal);
  set_field(L, "stdout", r.out);
  set_field(L, "stderr", r.err);
  set_field(L, "wall", r.wall);
  set_bool(L, "truncated", r.out_truncated || r.err_truncated);
  set_field(L, "memory_bound", r.memory_bound);
  set_field(L, "nproc", r.nproc);
  set_field(L, "process_mb", double(r.process_mb));
}

void note_unsafe(lua_State* L, const std::vector<sandbox::Program>& ps) {
  for (const auto& p : ps)
    if (p.unsafe_local_exec) {
      if (RunSink* s = run_context(L).sink) s->param("unsafe_local_exec", "true");
      return;
    }
}

int l_run(lua_State* L) {
  const std::vector<sandbox::Program> ps{read_program(L, 1, "lt.sandbox.run")};
  note_unsafe(L, ps);
  push_result(L, sandbox::run(ps[0]));
  return 1;
}

int l_run_many(lua_State* L) {
  const char* fn = "lt.sandbox.run_many";
  check_table(L, 1, fn);
  check_options(L, 2, fn, kRunMany);
  const int workers = opt_int(L, 2, "workers", fn, 1, 1024).value_or(0);
  std::vector<sandbox::Program> ps;
  const int n = int(lua_objlen(L, 1));
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, 1, i);
    ps.push_back(read_program(L, -1, fmt::format("{}: program {}", fn, i)));
    lua_pop(L, 1);
  }
  note_unsafe(L, ps);
  const auto results = sandbox::run_many(ps, workers);
  lua_createtable(L, int(results.size()), 0);
  for (size_t i = 0; i < results.size(); i++) {
    push_result(L, results[i]);
    lua_rawseti(L, -2, int(i + 1));
  }
  return 1;
}

int l_available(lua_State* L) {
  const auto a = sandbox::available();
  lua_pushboolean(L, a.ok);
  if (a.ok) return 1;
  push(L, a.reason);
  return 2;
}

}  // namespace

void register_sandbox(lua_State* L) {
  new_module(L, "sandbox");
  static const luaL_Reg fns[] = {{"run", LT_FN(l_run)},
                                 {"run_many", LT_FN(l_run_many)},
                                 {"available", LT_FN(l_available)},
                                 {nullptr, nullptr}};
  set_funcs(L, fns);
  lua_pop(L, 1);
}

}  // namespace ltrun::lua
