// bindings/stats.cpp: lt.stats: rank(a), spearman(a, b) and pearson(a, b) (coefficient and
// two-sided p-value, runtime/stats/correlation.h), sign_test(up, down), jaccard(a, b) of id sets
// (runtime/eval/metrics.h). Samples are Lua arrays of numbers or 1-D tensors.
#include <lua.hpp>

#include <set>

#include "bindings/luat.h"
#include "bindings/tensor.h"
#include "runtime/eval/metrics.h"
#include "runtime/stats/correlation.h"

#include <ATen/ATen.h>

namespace ltrun::lua {
namespace {

std::vector<double> sample(lua_State* L, int idx, const char* fn) {
  if (is_tensor(L, idx)) {
    at::Tensor t = check_tensor(L, idx, fn).detach().to(at::kCPU).to(at::kDouble).contiguous();
    LT_CHECK(t.dim() == 1, "{}: argument {}: expected a 1-D tensor or a Lua array, got {} dims", fn, idx, t.dim());
    return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
  }
  return read_numbers(L, idx, fn, idx == 1 ? "argument 1" : "argument 2");
}

// lt.stats.rank(a) → Lua array of 1-based ranks, ties as average ranks
int l_rank(lua_State* L) {
  push_array(L, stats::rank(sample(L, 1, "lt.stats.rank"), "lt.stats.rank"));
  return 1;
}

// lt.stats.spearman(a, b) / pearson(a, b) → coefficient, two-sided p-value, n (NaN where
// undefined: a constant sample, or p with fewer than 3 pairs)
template <stats::Correlation (*F)(const std::vector<double>&, const std::vector<double>&, const char*)>
int l_corr(lua_State* L, const char* fn) {
  const auto c = F(sample(L, 1, fn), sample(L, 2, fn), fn);
  lua_pushnumber(L, c.r);
  lua_pushnumber(L, c.p);
  lua_pushnumber(L, c.n);
  return 3;
}
int l_spearman(lua_State* L) { return l_corr<stats::spearman>(L, "lt.stats.spearman"); }
int l_pearson(lua_State* L) { return l_corr<stats::pearson>(L, "lt.stats.pearson"); }

// lt.stats.sign_test(up, down) → the exact two-sided sign-test p-value (McNemar's exact test on
// the discordant pairs of a paired comparison: items that only the second model gets right,
// items that only the first does)
int l_sign_test(lua_State* L) {
  const char* fn = "lt.stats.sign_test";
  lua_pushnumber(L, stats::sign_test_p(long(check_integer(L, 1, fn)), long(check_integer(L, 2, fn))));
  return 1;
}

// lt.stats.jaccard(a, b): a and b are lists of ids (or sets {id = true})
std::set<std::string> id_set(lua_State* L, int idx, const char* fn) {
  check_table(L, idx, fn);
  std::set<std::string> s;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) == LUA_TNUMBER) s.insert(value_text(L, -1));
    else if (lua_toboolean(L, -1)) s.insert(value_text(L, -2));
    lua_pop(L, 1);
  }
  return s;
}

int l_jaccard(lua_State* L) {
  lua_pushnumber(L, eval::jaccard(id_set(L, 1, "lt.stats.jaccard"), id_set(L, 2, "lt.stats.jaccard")));
  return 1;
}

}  // namespace

void register_stats(lua_State* L) {
  new_module(L, "stats");
  static const luaL_Reg fns[] = {{"rank", LT_FN(l_rank)},         {"spearman", LT_FN(l_spearman)},
                                 {"pearson", LT_FN(l_pearson)},   {"jaccard", LT_FN(l_jaccard)},
                                 {"sign_test", LT_FN(l_sign_test)},
                                 {nullptr, nullptr}};
  set_funcs(L, fns);
  lua_pop(L, 1);
}

}  // namespace ltrun::lua
