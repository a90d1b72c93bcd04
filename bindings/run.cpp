// bindings/run.cpp: lt.run, the current run (the run context, luat.h: run_context): seed
// (the run's seed and its named streams), param, log, log_layers, artifact, query (SQL or a
// named query "@NAME"), take_lease / release_lease (a scan's jobs); child runs are built in Lua (lib/lt/init.lua) on _begin_child/_end. Also os.exit,
// which closes the runs before the process ends.
#include <lua.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "bindings/json.h"
#include "bindings/luat.h"
#include "bindings/tensor.h"
#include "runtime/core/env.h"
#include "runtime/core/interrupt.h"
#include "runtime/store/session.h"

#include <ATen/ATen.h>

namespace ltrun::lua {
namespace {

store::Session& session(lua_State* L, const char* fn) {
  store::Session* s = run_context(L).session;
  if (!s) fail("{}: no run is open (this interpreter has no run store)", fn);
  return *s;
}

RunSink& sink(lua_State* L, const char* fn) {
  RunSink* s = run_context(L).sink;
  if (!s) fail("{}: no run is open (this interpreter has no run store)", fn);
  return *s;
}

double metric_value(lua_State* L, int idx, const char* fn) {
  if (lua_type(L, idx) == LUA_TNUMBER) return lua_tonumber(L, idx);
  if (lua_isboolean(L, idx)) return lua_toboolean(L, idx) ? 1.0 : 0.0;
  if (is_tensor(L, idx)) {
    at::Tensor& t = check_tensor(L, idx, fn);
    LT_CHECK(t.numel() == 1, "{}: a metric is one number; got a tensor of {} elements", fn, t.numel());
    return t.item<double>();
  }
  fail("{}: a metric value must be a number, boolean or 1-element tensor, got {}", fn, type_name(L, idx));
}

// lt.run.seed() → the run's seed (--seed); lt.run.seed(NAME) → the seed of stream NAME of
// the run (runtime/core/run_context.h), a well-mixed integer < 2^53
int l_seed(lua_State* L) {
  const RunContext& ctx = run_context(L);
  if (lua_isnoneornil(L, 1)) lua_pushnumber(L, double(ctx.seed));
  else lua_pushnumber(L, double(ctx.stream(check_string(L, 1, "lt.run.seed"))));
  return 1;
}

int l_id(lua_State* L) {
  lua_pushnumber(L, double(session(L, "lt.run.id").current()));
  return 1;
}

int l_root(lua_State* L) {
  lua_pushnumber(L, double(session(L, "lt.run.root").root()));
  return 1;
}

// lt.run.param(key, value) or lt.run.param{key = value, ...}
int l_param(lua_State* L) {
  RunSink& s = sink(L, "lt.run.param");
  if (lua_istable(L, 1)) {
    lua_pushnil(L);
    while (lua_next(L, 1)) {
      if (lua_type(L, -2) != LUA_TSTRING) fail("lt.run.param: table keys must be strings");
      s.param(lua_tostring(L, -2), value_text(L, -1));
      lua_pop(L, 1);
    }
    return 0;
  }
  const std::string key = check_string(L, 1, "lt.run.param");
  if (lua_isnone(L, 2)) fail("lt.run.param: missing the value for '{}'", key);
  s.param(key, value_text(L, 2));
  return 0;
}

// lt.run.log(name, value[, {step=}]) or lt.run.log({name = value, ...}[, {step=}])
int l_log(lua_State* L) {
  RunSink& s = sink(L, "lt.run.log");
  if (lua_istable(L, 1) && !is_tensor(L, 1)) {
    auto step = opt_integer(L, 2, "step", "lt.run.log");
    lua_pushnil(L);
    while (lua_next(L, 1)) {
      if (lua_type(L, -2) != LUA_TSTRING) fail("lt.run.log: table keys must be metric names");
      s.metric(lua_tostring(L, -2), metric_value(L, lua_gettop(L), "lt.run.log"), step);
      lua_pop(L, 1);
    }
    return 0;
  }
  const std::string name = check_string(L, 1, "lt.run.log");
  const double v = metric_value(L, 2, "lt.run.log");
  std::optional<int64_t> step;
  if (lua_type(L, 3) == LUA_TNUMBER) step = check_integer(L, 3, "lt.run.log");
  else step = opt_integer(L, 3, "step", "lt.run.log");
  s.metric(name, v, step);
  return 0;
}

// lt.run.log_layers(name, values[, {grp=, step=, first=}]): values[i] (Lua array) or
// values[i] (1-D tensor, 0-based) is layer first + i - 1 (resp. first + i); first defaults to 0.
int l_log_layers(lua_State* L) {
  RunSink& s = sink(L, "lt.run.log_layers");
  const std::string name = check_string(L, 1, "lt.run.log_layers");
  const std::string grp = [&] {
    if (!lua_istable(L, 3)) return std::string();
    lua_getfield(L, 3, "grp");
    std::string g = lua_isnil(L, -1) ? "" : value_text(L, -1);
    lua_pop(L, 1);
    return g;
  }();
  auto step = opt_integer(L, 3, "step", "lt.run.log_layers");
  const int64_t first = opt_integer(L, 3, "first", "lt.run.log_layers").value_or(0);
  if (is_tensor(L, 2)) {
    at::Tensor t = check_tensor(L, 2, "lt.run.log_layers").detach().to(at::kCPU).to(at::kDouble);
    LT_CHECK(t.dim() == 1, "lt.run.log_layers: expected a 1-D tensor (one value per layer), got {} dims", t.dim());
    auto a = t.accessor<double, 1>();
    for (int64_t i = 0; i < t.size(0); i++) s.layer_metric(name, first + i, grp, a[i], step);
    return 0;
  }
  check_table(L, 2, "lt.run.log_layers");
  const int n = int(lua_objlen(L, 2));
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, 2, i);
    const double v = metric_value(L, lua_gettop(L), "lt.run.log_layers");
    lua_pop(L, 1);
    s.layer_metric(name, first + i - 1, grp, v, step);
  }
  return 0;
}

// lt.run.artifact(path[, {kind=}]) → the path stored: a regular file under the folder the run
// started in or its run store's folder (runtime/store/artifact.h), with its sha256
int l_artifact(lua_State* L) {
  RunSink& s = sink(L, "lt.run.artifact");
  const std::string path = check_string(L, 1, "lt.run.artifact");
  check_options(L, 2, "lt.run.artifact", {"kind"});
  const std::string kind = opt_string(L, 2, "kind", "lt.run.artifact").value_or("");
  push(L, s.artifact(path, kind));
  return 1;
}

// lt.run.query(sql | "@NAME", ...) → array of rows, each a table column → value; "@NAME" is
// the named query db/queries/NAME.sql (as `ltrun sql @NAME`), the rest bind its `?`s
int l_query(lua_State* L) {
  auto& s = session(L, "lt.run.query");
  std::string sql = check_string(L, 1, "lt.run.query");
  if (!sql.empty() && sql[0] == '@') {
    try {
      sql = store::named_query(sql.substr(1));
    } catch (const std::exception& e) {
      fail("lt.run.query: {}", e.what());
    }
  }
  std::vector<store::Value> binds;
  for (int i = 2; i <= lua_gettop(L); i++) {
    if (lua_type(L, i) == LUA_TNUMBER) {
      double v = lua_tonumber(L, i);
      if (v == std::floor(v)) binds.emplace_back(int64_t(v)); else binds.emplace_back(v);
    } else if (lua_isnil(L, i)) {
      binds.emplace_back(std::monostate{});
    } else {
      binds.emplace_back(value_text(L, i));
    }
  }
  store::Table t = s.query(sql, binds);
  lua_createtable(L, int(t.rows.size()), 0);
  for (size_t r = 0; r < t.rows.size(); r++) {
    lua_createtable(L, 0, int(t.columns.size()));
    for (size_t c = 0; c < t.columns.size(); c++) {
      const auto& v = t.rows[r][c];
      if (std::holds_alternative<int64_t>(v)) lua_pushnumber(L, double(std::get<int64_t>(v)));
      else if (std::holds_alternative<double>(v)) lua_pushnumber(L, std::get<double>(v));
      else if (std::holds_alternative<std::string>(v)) push(L, std::get<std::string>(v));
      else continue;
      lua_setfield(L, -2, t.columns[c].c_str());
    }
    lua_rawseti(L, -2, int(r + 1));
  }
  return 1;
}

int l_flush(lua_State* L) {
  sink(L, "lt.run.flush").flush();
  return 0;
}

int l_begin_child(lua_State* L) {
  const std::string name = check_string(L, 1, "lt.run.child");
  lua_pushnumber(L, double(session(L, "lt.run.child").begin_child(name)));
  return 1;
}

// _end(id, status, error): status "ok" | "failed"; failed becomes interrupted after Ctrl-C
int l_end(lua_State* L) {
  const int64_t id = check_integer(L, 1, "lt.run._end");
  const std::string st = check_string(L, 2, "lt.run._end");
  std::string err = lua_isstring(L, 3) ? lua_tostring(L, 3) : "";
  store::Status status = st == "ok" ? store::Status::ok
                         : interrupt_requested() ? store::Status::interrupted
                                                 : store::Status::failed;
  try {
    session(L, "lt.run._end").end(id, status, err);
  } catch (const std::exception& e) {
    if (err.empty()) throw;
    // the child's own error goes on up with the store's, not replaced by it
    fail("{}\nclosing child run {} failed too: {}", store::bound_error(err), id, e.what());
  }
  return 0;
}

// os.exit([code[, close]]) as in Lua, but the runs of this process end first: buffered rows
// are written and every open run closes, `ok` for code 0 / true / none, else `failed`.
// (LuaJIT's own os.exit calls exit() directly, losing the buffer and leaving the run open.)
int l_exit(lua_State* L) {
  int code = EXIT_SUCCESS;
  if (lua_isboolean(L, 1)) code = lua_toboolean(L, 1) ? EXIT_SUCCESS : EXIT_FAILURE;
  else if (!lua_isnoneornil(L, 1)) code = int(check_integer(L, 1, "os.exit"));
  if (store::Session* s = run_context(L).session) {
    const auto errors = s->end_all(code == 0 ? store::Status::ok : store::Status::failed,
                                   code == 0 ? "" : fmt::format("os.exit({})", code));
    for (const auto& e : errors) std::fprintf(stderr, "ltrun: closing the run at os.exit failed: %s\n", e.c_str());
    if (!errors.empty() && code == 0) code = EXIT_FAILURE;
  }
  std::fflush(nullptr);
  std::exit(code);
}

// lt.run.take_lease(key, job, pid) → nil when process `pid` now holds job `job` of `key`,
// else the live holder {host =, pid =, holder_run =, taken_at =} (Store::take_lease);
// lt.run.release_lease(key, job, pid)
int l_take_lease(lua_State* L) {
  const char* fn = "lt.run.take_lease";
  auto& s = session(L, fn);
  const std::string key = check_string(L, 1, fn), job = check_string(L, 2, fn);
  const int64_t pid = check_integer(L, 3, fn, 1, INT32_MAX);
  const auto held = s.take_lease(key, job, pid);
  if (!held) return 0;
  lua_createtable(L, 0, 4);
  set_field(L, "host", held->host);
  set_field(L, "pid", double(held->pid));
  if (held->holder_run) set_field(L, "holder_run", double(*held->holder_run));
  set_field(L, "taken_at", held->taken_at);
  return 1;
}

int l_release_lease(lua_State* L) {
  const char* fn = "lt.run.release_lease";
  const std::string key = check_string(L, 1, fn), job = check_string(L, 2, fn);
  session(L, fn).release_lease(key, job, check_integer(L, 3, fn, 1, INT32_MAX));
  return 0;
}

}  // namespace

void register_run(lua_State* L) {
  new_module(L, "run");
  static const luaL_Reg fns[] = {
      {"seed", LT_FN(l_seed)}, {"id", LT_FN(l_id)}, {"root", LT_FN(l_root)}, {"param", LT_FN(l_param)}, {"log", LT_FN(l_log)},
      {"log_layers", LT_FN(l_log_layers)}, {"artifact", LT_FN(l_artifact)}, {"query", LT_FN(l_query)},
      {"flush", LT_FN(l_flush)}, {"_begin_child", LT_FN(l_begin_child)}, {"_end", LT_FN(l_end)},
      {"take_lease", LT_FN(l_take_lease)}, {"release_lease", LT_FN(l_release_lease)},
      {nullptr, nullptr}};
  set_funcs(L, fns);
  lua_pop(L, 1);
  lua_getglobal(L, "os");
  lua_pushcfunction(L, LT_FN(l_exit));
  lua_setfield(L, -2, "exit");
  lua_pop(L, 1);
}

}  // namespace ltrun::lua
