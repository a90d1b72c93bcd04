// bindings/dist.cpp: lt.dist, the ranks of a multi-process run (`ltrun launch`, Slurm):
// rank(), world_size(), local_rank(), is_main(), backend(), barrier(), all_reduce(t[, op]),
// broadcast(t[, src]), all_gather(t), bytes_all_reduced(). all_reduce and broadcast work in
// place and return t; all_gather returns a Lua array of tensors in rank order. In a
// single-process run these are the identity (rank 0 of 1). The group itself is made by
// `ltrun SCRIPT` before the script starts (runtime/cli/run_script.cpp).
#include <ATen/ATen.h>

#include "bindings/luat.h"
#include "bindings/tensor.h"
#include "runtime/dist/dist.h"

namespace ltrun::lua {
namespace {

int l_rank(lua_State* L) {
  lua_pushnumber(L, dist::active() ? dist::active()->rank() : 0);
  return 1;
}
int l_world_size(lua_State* L) {
  lua_pushnumber(L, dist::active() ? dist::active()->world_size() : 1);
  return 1;
}
int l_local_rank(lua_State* L) {
  lua_pushnumber(L, dist::active() ? dist::active()->local_rank() : 0);
  return 1;
}
int l_is_main(lua_State* L) {
  lua_pushboolean(L, !dist::active() || dist::active()->is_main());
  return 1;
}
int l_backend(lua_State* L) {
  if (dist::active()) push(L, dist::active()->backend());
  else lua_pushnil(L);
  return 1;
}
int l_barrier(lua_State* L) {
  if (dist::active()) dist::active()->barrier();
  return 0;
}
// lt.dist.all_reduce(t[, "sum" | "avg" | "max" | "min"]) → t (reduced in place)
int l_all_reduce(lua_State* L) {
  at::Tensor& t = check_tensor(L, 1, "lt.dist.all_reduce");
  const dist::ReduceOp op =
      dist::parse_op(lua_isnoneornil(L, 2) ? "sum" : check_string(L, 2, "lt.dist.all_reduce"));
  if (dist::active()) dist::active()->all_reduce(t, op);
  lua_settop(L, 1);
  return 1;
}
// lt.dist.broadcast(t[, src = 0]) → t (rank src's values, in place)
int l_broadcast(lua_State* L) {
  at::Tensor& t = check_tensor(L, 1, "lt.dist.broadcast");
  const int64_t src = lua_isnoneornil(L, 2) ? 0 : check_integer(L, 2, "lt.dist.broadcast");
  const int world = dist::active() ? dist::active()->world_size() : 1;
  LT_CHECK(src >= 0 && src < world, "lt.dist.broadcast: source rank {} outside 0..{}", src, world - 1);
  if (dist::active()) dist::active()->broadcast(t, int(src));
  lua_settop(L, 1);
  return 1;
}
// lt.dist.all_gather(t) → {t of rank 0, t of rank 1, ...}
int l_all_gather(lua_State* L) {
  const at::Tensor& t = check_tensor(L, 1, "lt.dist.all_gather");
  const std::vector<at::Tensor> parts =
      dist::active() ? dist::active()->all_gather(t) : std::vector<at::Tensor>{t.clone()};
  lua_createtable(L, int(parts.size()), 0);
  for (size_t i = 0; i < parts.size(); ++i) {
    push_tensor(L, parts[i]);
    lua_rawseti(L, -2, int(i + 1));
  }
  return 1;
}
int l_bytes(lua_State* L) {
  lua_pushnumber(L, dist::active() ? double(dist::active()->bytes_all_reduced()) : 0.0);
  return 1;
}

}  // namespace

void register_dist(lua_State* L) {
  new_module(L, "dist");
  static const luaL_Reg fns[] = {
      {"rank", LT_FN(l_rank)}, {"world_size", LT_FN(l_world_size)},
      {"local_rank", LT_FN(l_local_rank)}, {"is_main", LT_FN(l_is_main)},
      {"backend", LT_FN(l_backend)}, {"barrier", LT_FN(l_barrier)},
      {"all_reduce", LT_FN(l_all_reduce)}, {"broadcast", LT_FN(l_broadcast)},
      {"all_gather", LT_FN(l_all_gather)}, {"bytes_all_reduced", LT_FN(l_bytes)},
      {nullptr, nullptr}};
  set_funcs(L, fns);
  lua_pop(L, 1);
}

}  // namespace ltrun::lua
