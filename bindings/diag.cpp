// bindings/diag.cpp: lt.diag, the LayerTracer study over runtime/diag: trace (Task Particle,
// Layer-wise Sensitivity, group means, profiles, split scores) and its measures (js,
// tp_ratio, delta_js, normalise, split_score, splits).
//
// Series follow out.hidden of model:forward: a residual series (p_target, js) has keys
// 0..N (0 = the embeddings, l+1 = after block l); a block series (tp_ratio, ls_djs, tp, ls)
// is the plain array 1..N, entry l+1 = block l, which is what lt.run.log_layers expects.
// Token positions (context) count from 0, as tensor indices do.
#include <ATen/ATen.h>
#include <lua.hpp>

#include <memory>
#include <tuple>

#include "bindings/luat.h"
#include "bindings/model.h"
#include "bindings/tensor.h"
#include "runtime/diag/measures.h"
#include "runtime/diag/tracer.h"
#include "runtime/model/model.h"

namespace ltrun::lua {
namespace {

// A series from a Lua table: keys 0..n when it has key 0 (a residual series), else 1..n.
std::vector<double> read_series(lua_State* L, int idx, const char* fn, const char* what) {
  if (lua_type(L, idx) != LUA_TTABLE) fail("{}: {}: expected a table of numbers, got {}", fn, what, type_name(L, idx));
  lua_rawgeti(L, idx, 0);
  const int first = lua_isnil(L, -1) ? 1 : 0;
  lua_pop(L, 1);
  std::vector<double> v;
  for (int i = first; i <= int(lua_objlen(L, idx)); i++) {
    lua_rawgeti(L, idx, i);
    if (lua_type(L, -1) != LUA_TNUMBER) fail("{}: {}[{}]: expected a number, got {}", fn, what, i, type_name(L, -1));
    v.push_back(lua_tonumber(L, -1));
    lua_pop(L, 1);
  }
  return v;
}

std::vector<int64_t> read_ints(lua_State* L, int idx, const char* fn, const std::string& what) {
  if (is_tensor(L, idx)) {
    at::Tensor t = check_tensor(L, idx, fn).to(at::kCPU, at::kLong).contiguous().view({-1});
    return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
  }
  if (lua_type(L, idx) != LUA_TTABLE) fail("{}: {}: expected a list of integers, got {}", fn, what, type_name(L, idx));
  std::vector<int64_t> v;
  for (int i = 1; i <= int(lua_objlen(L, idx)); i++) {
    lua_rawgeti(L, idx, i);
    if (lua_type(L, -1) != LUA_TNUMBER) fail("{}: {}[{}]: expected an integer, got {}", fn, what, i, type_name(L, -1));
    v.push_back(to_integer(L, -1, fmt::format("{}: {}[{}]", fn, what, i)));
    lua_pop(L, 1);
  }
  return v;
}

// residual = true: keys 0..n-1 (as out.hidden); else the array 1..n
void push_series(lua_State* L, const std::vector<double>& v, bool residual = false) {
  push_array(L, v, residual ? 0 : 1);
}

// The four per-layer series of a sample or of a group mean as fields of the table on top:
// p_target and js by residual (keys 0..N), tp_ratio and ls_djs by block (1..N).
template <class Series>
void set_layer_series(lua_State* L, const Series& s) {
  set_array(L, "p_target", s.p_target, 0);
  set_array(L, "js", s.js, 0);
  set_array(L, "tp_ratio", s.tp_ratio);
  set_array(L, "ls_djs", s.ls_djs);
}

void push_split(lua_State* L, const diag::Split& s) {
  lua_createtable(L, 0, 3);
  set_fields(L, s, diag::split_fields());
}

// {allocation = "train_shallow" | "train_deep" | "neither", b, score, ratio,
//  train = {first, last}, freeze = {first, last}} (block numbers from 0)
void push_recommendation(lua_State* L, const diag::Recommendation& r) {
  lua_createtable(L, 0, 6);
  set_field(L, "allocation", diag::allocation_name(r.allocation));
  set_fields(L, r.split, diag::split_fields());
  set_array(L, "train", std::vector<int>{r.train_first, r.train_last});
  set_array(L, "freeze", std::vector<int>{r.freeze_first, r.freeze_last});
}

std::vector<double> read_ratios(lua_State* L, int opts, const char* fn) {
  std::vector<double> ratios = diag::kDefaultRatios;
  if (lua_istable(L, opts)) {
    lua_getfield(L, opts, "ratios");
    if (!lua_isnil(L, -1)) ratios = read_series(L, lua_gettop(L), fn, "ratios");
    lua_pop(L, 1);
  }
  return ratios;
}

// lt.diag.js(p, q[, {topk=}]) → a number for 1-D p, q; a tensor of one JS per row otherwise.
// topk absent or 0: the whole vocabulary; else the aligned support topk(p) ∪ topk(q).
int l_js(lua_State* L) {
  const char* fn = "lt.diag.js";
  const at::Tensor p = to_tensor(L, 1, fn, at::kDouble), q = to_tensor(L, 2, fn, at::kDouble);
  check_options(L, 3, fn, {"topk"});
  const at::Tensor js = diag::js_divergence(p, q, opt_integer(L, 3, "topk", fn).value_or(0));
  if (js.dim() == 0) lua_pushnumber(L, js.item<double>());
  else push_tensor(L, js);
  return 1;
}

int l_tp_ratio(lua_State* L) {
  push_series(L, diag::tp_ratio(read_series(L, 1, "lt.diag.tp_ratio", "p_target")));
  return 1;
}

// lt.diag.delta_js(js[, {final = true}]): N − 1 values (the final block's ΔJS is undefined)
// unless final = true
int l_delta_js(lua_State* L) {
  const char* fn = "lt.diag.delta_js";
  check_options(L, 2, fn, {"final"});
  push_series(L, diag::delta_js(read_series(L, 1, fn, "js"), opt_bool(L, 2, "final", fn).value_or(false)));
  return 1;
}

// lt.diag.split_layer(ratio, n_layers) → b (blocks 0..b-1 shallow)
int l_split_layer(lua_State* L) {
  const char* fn = "lt.diag.split_layer";
  lua_pushinteger(L, diag::split_layer(check_number(L, 1, fn), int(check_integer(L, 2, fn))));
  return 1;
}

int l_normalise(lua_State* L) {
  push_series(L, diag::normalise(read_series(L, 1, "lt.diag.normalise", "values")));
  return 1;
}

// lt.diag.split_score(tp, ls, b): S(b) with blocks 0..b-1 shallow
int l_split_score(lua_State* L) {
  const char* fn = "lt.diag.split_score";
  lua_pushnumber(L, diag::split_score(read_series(L, 1, fn, "tp"), read_series(L, 2, fn, "ls"),
                                      check_int(L, 3, fn)));
  return 1;
}

// lt.diag.splits(tp, ls[, {ratios=}]) → {{ratio=, b=, score=}, ...}, the best of them, the
// recommendation by the sign of S(b). ls may leave out the final block (#ls = #tp - 1).
int l_splits(lua_State* L) {
  const char* fn = "lt.diag.splits";
  check_options(L, 3, fn, {"ratios"});
  const std::vector<double> tp = read_series(L, 1, fn, "tp");
  auto splits = diag::split_scores(tp, read_series(L, 2, fn, "ls"), read_ratios(L, 3, fn));
  push_records(L, splits, diag::split_fields());
  push_split(L, diag::best_split(splits));
  push_recommendation(L, diag::recommend(splits, int(tp.size())));
  return 3;
}

// lt.diag.trace(model, samples[, opts]) → result
//   samples[i] = {ids = {...} | tensor, context = {0-based positions}, target = id?, group = n?}
//     (other fields are ignored, so lt.tasks samples pass as they are); group defaults to 1
//   opts: topk = 10 (JS support; 0 = whole vocabulary), candidates = 10, batch = 8, tau = 0,
//         ratios = {1/3, 1/2, 2/3}, method = "prefix" | "resume" | "naive", final_djs = false (true: keep
//         the final block's ΔJS, undefined by the paper's definition)
//   result = {n_layers, final_djs, samples = {{target, group, p_target, js, tp_ratio, ls_djs,
//             tp_interval, top = {[r] = {ids, probs}}}}, groups = {{group, samples, p_target, js,
//             tp_ratio, ls_djs}}, tp, ls, tp_interval, splits = {{ratio, b, score}}, split (the
//             highest S(b)), recommendation (see push_recommendation)}
//   ls_djs and ls have n_layers - 1 entries unless final_djs.
diag::TraceOptions read_trace_options(lua_State* L, int opts, const char* fn) {
  diag::TraceOptions o;
  read_fields(L, opts, fn, o, diag::trace_option_fields(), true, {"method", "ratios"});
  o.method = diag::parse_method(opt_string(L, opts, "method", fn).value_or("prefix"), fn);
  return o;
}

std::vector<diag::Sample> read_samples(lua_State* L, int idx, const char* fn) {
  check_table(L, idx, fn);
  std::vector<diag::Sample> samples(lua_objlen(L, idx));
  LT_CHECK(!samples.empty(), "{}: no samples given", fn);
  for (size_t i = 0; i < samples.size(); i++) {
    lua_rawgeti(L, idx, int(i + 1));
    const int s = lua_gettop(L);
    if (!lua_istable(L, s)) fail("{}: samples[{}]: expected a table, got {}", fn, i + 1, type_name(L, s));
    const std::string at = fmt::format("samples[{}]", i + 1);
    lua_getfield(L, s, "ids");
    samples[i].ids = read_ints(L, lua_gettop(L), fn, at + ".ids");
    lua_getfield(L, s, "context");
    if (!lua_isnil(L, -1)) samples[i].context = read_ints(L, lua_gettop(L), fn, at + ".context");
    lua_pop(L, 2);
    if (auto t = opt_integer(L, s, "target", fn)) samples[i].target = *t;
    samples[i].group = opt_int(L, s, "group", fn).value_or(1);
    lua_pop(L, 1);
  }
  return samples;
}

// {target, group, p_target, js, tp_ratio, ls_djs, tp_interval, top = {[r] = {ids, probs}}}
void push_sample_trace(lua_State* L, const diag::SampleTrace& t, int n_layers) {
  lua_createtable(L, 0, 8);
  set_field(L, "target", double(t.target));
  set_field(L, "group", t.group);
  set_layer_series(L, t);
  set_array(L, "tp_interval", t.tp_interval);
  lua_createtable(L, n_layers, 1);
  for (int r = 0; r <= n_layers; r++) {
    lua_createtable(L, 0, 2);
    set_array(L, "ids", t.top_ids[r]);
    set_array(L, "probs", t.top_probs[r]);
    lua_rawseti(L, -2, r);
  }
  lua_setfield(L, -2, "top");
}

// groups, tp, ls, tp_interval, splits, split, recommendation into the table on top
void set_summary(lua_State* L, const diag::Summary& sum) {
  lua_createtable(L, int(sum.groups.size()), 0);
  for (size_t g = 0; g < sum.groups.size(); g++) {
    lua_createtable(L, 0, 6);
    set_field(L, "group", sum.groups[g].group);
    set_field(L, "samples", sum.groups[g].samples);
    set_layer_series(L, sum.groups[g]);
    lua_rawseti(L, -2, int(g + 1));
  }
  lua_setfield(L, -2, "groups");
  set_array(L, "tp", sum.tp);
  set_array(L, "ls", sum.ls);
  set_array(L, "tp_interval", sum.tp_interval);
  if (sum.splits.empty()) return;
  push_records(L, sum.splits, diag::split_fields());
  lua_setfield(L, -2, "splits");
  push_split(L, sum.best);
  lua_setfield(L, -2, "split");
  push_recommendation(L, sum.recommendation);
  lua_setfield(L, -2, "recommendation");
}

int l_trace(lua_State* L) {
  const char* fn = "lt.diag.trace";
  const model::Model& m = *check_model(L, 1, fn).m;
  const diag::TraceOptions o = read_trace_options(L, 3, fn);
  const std::vector<double> ratios = read_ratios(L, 3, fn);
  const auto traces = diag::trace(m, read_samples(L, 2, fn), o);
  lua_createtable(L, 0, 8);
  set_field(L, "n_layers", m.n_layers());
  set_bool(L, "final_djs", o.include_final_djs);
  push_list(L, traces, [&](const diag::SampleTrace& t) { push_sample_trace(L, t, m.n_layers()); });
  lua_setfield(L, -2, "samples");
  set_summary(L, diag::summarize(traces, ratios, o.tau));
  return 1;
}

}  // namespace

void register_diag(lua_State* L) {
  new_module(L, "diag");
  static const luaL_Reg fns[] = {
      {"trace", LT_FN(l_trace)}, {"js", LT_FN(l_js)}, {"tp_ratio", LT_FN(l_tp_ratio)},
      {"delta_js", LT_FN(l_delta_js)}, {"normalise", LT_FN(l_normalise)},
      {"split_score", LT_FN(l_split_score)}, {"splits", LT_FN(l_splits)},
      {"split_layer", LT_FN(l_split_layer)}, {nullptr, nullptr}};
  set_funcs(L, fns);
  lua_pop(L, 1);
}

}  // namespace ltrun::lua
