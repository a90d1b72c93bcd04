// bindings/interp.cpp: the embedded LuaJIT: state setup, package.path, tracebacks, Ctrl-C.
#include "bindings/interp.h"

#include <lua.hpp>

#include <cstdlib>
#include <cstring>

#include "bindings/lt.h"
#include "bindings/luat.h"
#include "runtime/core/env.h"
#include "runtime/core/inputs.h"
#include "runtime/core/interrupt.h"
#include "runtime/store/capture.h"

namespace ltrun::lua {
namespace {

lua_State* g_L = nullptr;  // the state Ctrl-C stops (one interpreter per process)

void stop_hook(lua_State* L, lua_Debug*) {
  lua_sethook(L, nullptr, 0, 0);
  if (consume_interrupt()) luaL_error(L, "interrupted (SIGINT or SIGTERM)");
}

void on_interrupt() {  // in the signal handler: lua_sethook is safe there (as lua.c does)
  if (g_L) lua_sethook(g_L, stop_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

int traceback(lua_State* L) {
  const char* msg = lua_tostring(L, 1);
  if (!msg) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

// package.loaders[2]: Lua files through runtime/store/capture.h, which records each with the
// run, or in a replay serves the run's stored text
int l_search(lua_State* L) {
  const std::string name = check_string(L, 1, "require");
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "path");
  const std::string path = lua_isstring(L, -1) ? lua_tostring(L, -1) : "";
  lua_pop(L, 2);
  std::string tried;
  const auto f = store::find_source(name, path, tried);
  if (!f) return push(L, tried), 1;
  if (luaL_loadbuffer(L, f->text.data(), f->text.size(), ("@" + f->path).c_str()) != 0)
    fail("error loading module '{}' from {} '{}':\n\t{}", name, f->stored ? "the run's stored text of" : "file",
         f->path, lua_tostring(L, -1));
  return 1;
}

// io.open, io.lines, io.input, loadfile, dofile: the file a script reads is an input of its
// run, and in a replay may be read from its restored copy (runtime/core/inputs.h: note_read)
int l_read(lua_State* L) {
  if (lua_type(L, 1) == LUA_TSTRING) {
    push(L, note_read(lua_tostring(L, 1), lua_toboolean(L, lua_upvalueindex(2)) ? luaL_optstring(L, 2, "r") : "r"));
    lua_replace(L, 1);
  }
  lua_pushvalue(L, lua_upvalueindex(1));  // the library's own function, with the arguments
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

}  // namespace

std::string lib_dir() {
  const char* env = std::getenv("LTRUN_LIB");
  return env && *env ? env : LTRUN_LIB_DIR;
}

struct Interp::Impl {
  lua_State* L = nullptr;
  RunContext ctx;  // the registry points to it (luat.h: run_context)
  std::string base_path;

  Outcome pcall(int nargs, int nresults) {
    const int base = lua_gettop(L) - nargs;
    lua_pushcfunction(L, traceback);
    lua_insert(L, base);
    int rc = lua_pcall(L, nargs, nresults, base);
    lua_remove(L, base);
    lua_sethook(L, nullptr, 0, 0);
    Outcome o;
    if (rc != 0) {
      o.kind = interrupt_requested() ? Outcome::interrupted : Outcome::error;
      o.message = lua_isstring(L, -1) ? lua_tostring(L, -1) : "(error without message)";
      lua_pop(L, 1);
    }
    return o;
  }
};

Interp::Interp() : impl_(std::make_unique<Impl>()) {
  lua_State* L = luaL_newstate();
  LT_CHECK(L, "cannot create a Lua state (out of memory)");
  impl_->L = L;
  luaL_openlibs(L);
  for (const char* f : {"io.open", "io.lines", "io.input", "_G.loadfile", "_G.dofile"}) {
    lua_getglobal(L, std::string(f, std::strchr(f, '.')).c_str());
    lua_getfield(L, -1, std::strchr(f, '.') + 1);
    lua_pushboolean(L, std::strcmp(f, "io.open") == 0);  // only io.open's second argument is a mode
    lua_pushcclosure(L, LT_FN(l_read), 2);
    lua_setfield(L, -2, std::strchr(f, '.') + 1);
    lua_pop(L, 1);
  }
  set_run_context(L, &impl_->ctx);
  open_lt(L);
  const std::string lib = lib_dir();
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "path");
  // lib/, then the project's folder: `require "experiments.STUDY.MODULE"` finds a study's module
  impl_->base_path = lib + "/?.lua;" + lib + "/?/init.lua;" + dir_name(lib) + "/?.lua;" + lua_tostring(L, -1);
  push(L, impl_->base_path);
  lua_setfield(L, -3, "path");
  lua_pop(L, 2);
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "loaders");
  lua_pushcfunction(L, LT_FN(l_search));
  lua_rawseti(L, -2, 2);
  lua_pop(L, 2);
  g_L = L;
  install_interrupt_handler(on_interrupt);
  // the Lua half of lt (lt.run.child, ...)
  Outcome o = run("require 'lt'", "=(ltrun init)");
  if (o.kind != Outcome::ok) fail("loading {}/lt/init.lua failed: {}", lib, o.message);
}

Interp::~Interp() {
  if (g_L == impl_->L) g_L = nullptr;
  lua_close(impl_->L);
}

void Interp::set_run(const RunContext& ctx) {
  lua_State* L = impl_->L;
  impl_->ctx = ctx;
  lua_getglobal(L, "lt");
  set_field(L, "device", ctx.device);
  lua_pop(L, 1);
  lua_getglobal(L, "math");
  lua_getfield(L, -1, "randomseed");
  lua_pushnumber(L, double(ctx.seed % 2147483647));
  lua_call(L, 1, 0);
  lua_pop(L, 1);
}

void Interp::set_script(const std::string& script_path, const std::vector<std::string>& args) {
  lua_State* L = impl_->L;
  lua_createtable(L, int(args.size()), 1);
  push(L, script_path);
  lua_rawseti(L, -2, 0);
  for (size_t i = 0; i < args.size(); i++) {
    push(L, args[i]);
    lua_rawseti(L, -2, int(i + 1));
  }
  lua_setglobal(L, "arg");
  const std::string dir = dir_name(script_path);
  lua_getglobal(L, "package");
  push(L, dir + "/?.lua;" + dir + "/?/init.lua;" + impl_->base_path);
  lua_setfield(L, -2, "path");
  lua_pop(L, 1);
}

Outcome Interp::run(const std::string& code, const std::string& chunk_name) {
  lua_State* L = impl_->L;
  if (luaL_loadbuffer(L, code.data(), code.size(), chunk_name.c_str()) != 0) {
    Outcome o{Outcome::error, lua_tostring(L, -1), {}, {}};
    lua_pop(L, 1);
    return o;
  }
  // the prelude's lt.main(chunk) runs the chunk with arg's entries as its varargs (as lua.c passes
  // them), then the study it returns (lib/lt/init.lua); the prelude itself loads without it
  lua_getglobal(L, "lt");
  lua_getfield(L, -1, "main");
  lua_replace(L, -2);
  const bool runner = lua_isfunction(L, -1);
  if (runner) lua_insert(L, -2);  // [lt.main, chunk]
  else lua_pop(L, 1);
  return impl_->pcall(runner ? 1 : 0, 0);
}

Outcome Interp::eval(const std::string& chunk) {
  lua_State* L = impl_->L;
  const int top = lua_gettop(L);
  // `=expr` and bare expressions print their values, as in Lua 5.3's REPL
  const bool forced = !chunk.empty() && chunk[0] == '=';
  const std::string expr = forced ? chunk.substr(1) : chunk;
  const std::string as_return = "return " + expr;
  std::string script = "print(" + expr + ")";
  if (luaL_loadbuffer(L, as_return.data(), as_return.size(), "=stdin") != 0) {
    if (forced) lua_pop(L, 1);
    else {
      lua_pop(L, 1);
      script = chunk;
    }
    const std::string& code = forced ? as_return : chunk;
    if (luaL_loadbuffer(L, code.data(), code.size(), "=stdin") != 0) {
      std::string msg = lua_tostring(L, -1);
      lua_pop(L, 1);
      // as lua.c: a chunk that stops "near '<eof>'" is unfinished, so read another line
      const std::string eof = "'<eof>'";
      if (msg.size() >= eof.size() && msg.compare(msg.size() - eof.size(), eof.size(), eof) == 0)
        return {Outcome::incomplete, msg, {}, {}};
      return {Outcome::error, msg, {}, {}};
    }
  }
  // interpreted, not JIT-compiled: LuaJIT runs no hook inside a compiled loop, so Ctrl-C could
  // not stop `while true do x = x + 1 end` typed here (jit.off(chunk, true): its functions too)
  lua_getglobal(L, "jit");
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "off");
    lua_pushvalue(L, -3);
    lua_pushboolean(L, 1);
    lua_call(L, 2, 0);
  }
  lua_pop(L, 1);
  Outcome o = impl_->pcall(0, LUA_MULTRET);
  if (o.kind != Outcome::ok) return o;
  o.script = script;
  const int n = lua_gettop(L) - top;
  for (int i = 1; i <= n; i++) {  // shown by the REPL's printer (lib/lt/repl.lua install()), else tostring
    lua_getfield(L, LUA_REGISTRYINDEX, "lt.show");
    if (lua_isnil(L, -1)) lua_getglobal(L, "tostring");
    lua_pushvalue(L, top + i);
    const bool ok = lua_pcall(L, 1, 1, 0) == 0;
    o.values.push_back(ok && lua_isstring(L, -1) ? lua_tostring(L, -1) : "?");
    lua_settop(L, top + n);
  }
  lua_settop(L, top);
  return o;
}

std::vector<std::string> Interp::complete(const std::string& prefix) {
  // lib/lt/repl.lua's complete(prefix) → names (a failure there completes nothing)
  lua_State* L = impl_->L;
  const int top = lua_gettop(L);
  std::vector<std::string> out;
  lua_getglobal(L, "require");
  push(L, "lt.repl");
  if (lua_pcall(L, 1, 1, 0) == 0 && lua_istable(L, -1)) {
    lua_getfield(L, -1, "complete");
    push(L, prefix);
    if (lua_pcall(L, 1, 1, 0) == 0 && lua_istable(L, -1))
      for (int i = 1; i <= int(lua_objlen(L, -1)); i++) {
        lua_rawgeti(L, -1, i);
        if (lua_isstring(L, -1)) out.push_back(lua_tostring(L, -1));
        lua_pop(L, 1);
      }
  }
  lua_settop(L, top);
  return out;
}

}  // namespace ltrun::lua
