// runtime/diag/script.cpp: lt.diag's functions over script values (runtime/diag/script.h).
#include "runtime/diag/script.h"

#include <ATen/ATen.h>

#include "runtime/core/tensor_ops.h"
#include "runtime/diag/measures.h"
#include "runtime/diag/tracer.h"
#include "runtime/model/handle.h"

namespace ltrun::diag {
namespace {

// A series from a table: keys 0..n when it has key 0 (a residual series), else 1..n.
std::vector<double> series(const Value& t, const std::string& fn, const char* what) {
  if (!t.is_table()) fail("{}: {}: expected a table of numbers, got {}", fn, what, t.type_name());
  const int first = t[0.0].is_nil() ? 1 : 0;
  std::vector<double> v;
  for (int i = first; i <= int(t.size()); i++) {
    if (!t[double(i)].is_number()) fail("{}: {}[{}]: expected a number, got {}", fn, what, i, t[double(i)].type_name());
    v.push_back(t[double(i)].num());
  }
  return v;
}

std::vector<int64_t> ints(const Value& x, const std::string& fn, const std::string& what) {
  if (x.is_tensor()) {
    at::Tensor t = x.tensor().to(at::kCPU, at::kLong).contiguous().view({-1});
    return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
  }
  if (!x.is_table()) fail("{}: {}: expected a list of integers, got {}", fn, what, x.type_name());
  return integers_of(x, fn, what);
}

// The four per-layer series of a sample or of a group mean: p_target and js by residual
// (keys 0..N), tp_ratio and ls_djs by block (1..N).
template <class Series>
Value& set_layer_series(Value& t, const Series& s) {
  return t.set("p_target", Value::array(s.p_target, 0))
      .set("js", Value::array(s.js, 0))
      .set("tp_ratio", s.tp_ratio)
      .set("ls_djs", s.ls_djs);
}

// {allocation = "train_shallow" | "train_deep" | "neither", b, score, ratio,
//  train = {first, last}, freeze = {first, last}} (block numbers from 0)
Value recommendation(const Recommendation& r) {
  return Value::record(r.split, split_fields())
      .set("allocation", allocation_name(r.allocation))
      .set("train", std::vector<int>{r.train_first, r.train_last})
      .set("freeze", std::vector<int>{r.freeze_first, r.freeze_last});
}

std::vector<double> ratios(const Options& o) {
  return o.has("ratios") ? series(o["ratios"], o.fn(), "ratios") : kDefaultRatios;
}

// lt.diag.js(p, q[, {topk=}]) → a number for 1-D p, q; a tensor of one JS per row otherwise.
// topk absent or 0: the whole vocabulary; else the aligned support topk(p) ∪ topk(q).
const ApiDoc& kJs = declare_api(
    {"lt.diag.js", "lt.diag.js(p, q[, opts]) → number | tensor", "Jensen-Shannon divergence of distributions (per row)",
     {{"topk", "integer", "on the support topk(p) ∪ topk(q) (0: the whole vocabulary)"}}});

List js(const Args& a) {
  const at::Tensor p = tensor_from(a[1], a.fn(), 1, at::kDouble), q = tensor_from(a[2], a.fn(), 2, at::kDouble);
  const at::Tensor d = js_divergence(p, q, a.options(3).check(kJs).integer("topk").value_or(0));
  return {d.dim() == 0 ? Value(d.item<double>()) : Value(d)};
}

List tp_ratio_fn(const Args& a) { return {tp_ratio(series(a[1], a.fn(), "p_target"))}; }

// lt.diag.delta_js(js[, {final = true}]): N − 1 values (the final block's ΔJS is undefined)
// unless final = true
const ApiDoc& kDeltaJs = declare_api(
    {"lt.diag.delta_js", "lt.diag.delta_js(js[, opts]) → ΔJS per block", "differences of successive JS values",
     {{"final", "boolean", "keep the final block's ΔJS (undefined by the paper; default false)"}}});

List delta_js_fn(const Args& a) {
  const Options o = a.options(2).check(kDeltaJs);
  return {delta_js(series(a[1], a.fn(), "js"), o.boolean("final").value_or(false))};
}

// lt.diag.split_layer(ratio, n_layers) → b (blocks 0..b-1 shallow)
List split_layer_fn(const Args& a) { return {split_layer(a.number(1), int(a.integer(2)))}; }

List normalise_fn(const Args& a) { return {normalise(series(a[1], a.fn(), "values"))}; }

// lt.diag.split_score(tp, ls, b): S(b) with blocks 0..b-1 shallow
List split_score_fn(const Args& a) {
  return {split_score(series(a[1], a.fn(), "tp"), series(a[2], a.fn(), "ls"), a.int_(3))};
}

// lt.diag.splits(tp, ls[, {ratios=}]) → {{ratio=, b=, score=}, ...}, the best of them, the
// recommendation by the sign of S(b). ls may leave out the final block (#ls = #tp - 1).
const ApiDoc& kSplits = declare_api(
    {"lt.diag.splits", "lt.diag.splits(tp, ls[, opts]) → splits, best, recommendation", "S(b) at the candidate split ratios",
     {{"ratios", "numbers", "split ratios tried (default {1/3, 1/2, 2/3})"}}});

List splits_fn(const Args& a) {
  const Options o = a.options(3).check(kSplits);
  const std::vector<double> tp = series(a[1], a.fn(), "tp");
  const auto splits = split_scores(tp, series(a[2], a.fn(), "ls"), ratios(o));
  return {Value::records(splits, split_fields()), Value::record(best_split(splits), split_fields()),
          recommendation(recommend(splits, int(tp.size())))};
}

std::vector<Sample> samples(const Value& t, const std::string& fn) {
  if (!t.is_table()) fail("{}: argument 2: expected a table, got {}", fn, t.type_name());
  std::vector<Sample> out(t.size());
  LT_CHECK(!out.empty(), "{}: no samples given", fn);
  for (size_t i = 0; i < out.size(); i++) {
    const Value& s = t.tab().array[i];
    if (!s.is_table()) fail("{}: samples[{}]: expected a table, got {}", fn, i + 1, s.type_name());
    const std::string at = fmt::format("samples[{}]", i + 1);
    out[i].ids = ints(s["ids"], fn, at + ".ids");
    if (!s["context"].is_nil()) out[i].context = ints(s["context"], fn, at + ".context");
    const Options o(s, fn);
    if (auto target = o.integer("target")) out[i].target = *target;
    out[i].group = int(o.integer("group", INT32_MIN, INT32_MAX).value_or(1));
  }
  return out;
}

// {target, group, p_target, js, tp_ratio, ls_djs, tp_interval, top = {[r] = {ids, probs}}}
Value sample_trace(const SampleTrace& t, int n_layers) {
  Value v = Value::table().set("target", t.target).set("group", t.group).set("tp_interval", t.tp_interval);
  Value top = Value::table();
  for (int r = 0; r <= n_layers; r++)
    top.set(double(r), Value::table().set("ids", t.top_ids[r]).set("probs", t.top_probs[r]));
  return set_layer_series(v, t).set("top", top);
}

// groups, tp, ls, tp_interval, splits, split, recommendation into t
void set_summary(Value& t, const Summary& sum) {
  Value groups = Value::table();
  for (const GroupMeans& g : sum.groups) {
    Value v = Value::table().set("group", g.group).set("samples", g.samples);
    groups.push(set_layer_series(v, g));
  }
  t.set("groups", groups).set("tp", sum.tp).set("ls", sum.ls).set("tp_interval", sum.tp_interval);
  if (sum.splits.empty()) return;
  t.set("splits", Value::records(sum.splits, split_fields()))
      .set("split", Value::record(sum.best, split_fields()))
      .set("recommendation", recommendation(sum.recommendation));
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
//             highest S(b)), recommendation (see recommendation())}
//   ls_djs and ls have n_layers - 1 entries unless final_djs.
const ApiDoc& kTrace = declare_api(
    {"lt.diag.trace", "lt.diag.trace(m, samples[, opts]) → {n_layers=, samples=, groups=, tp=, ls=, splits=, split=, recommendation=}",
     "LayerTracer: per-block target probability and JS to the final block; the shallow/deep split",
     {{"topk", "integer", "JS support (default 10; 0: whole vocabulary)"},
      {"candidates", "integer", "top tokens kept per block (default 10)"},
      {"batch", "integer", "samples per forward pass (default 8)"},
      {"tau", "number", "threshold of the TP interval (default 0)"},
      {"final_djs", "boolean", "keep the final block's ΔJS (default false)"},
      {"method", "string", "prefix | resume | naive (default prefix)"},
      {"ratios", "numbers", "split ratios (default {1/3, 1/2, 2/3})"}}});

List trace_fn(const Args& a) {
  const model::Model& m = *model::model_arg(a, 1).m;
  const Options opts = a.options(3);
  TraceOptions o;
  opts.check(kTrace).read(o, trace_option_fields());
  o.method = parse_method(opts.string("method").value_or("prefix"), a.fn());
  const std::vector<double> r = ratios(opts);
  const auto traces = trace(m, samples(a[2], a.fn()), o);
  Value out = Value::table().set("n_layers", m.n_layers()).set("final_djs", o.include_final_djs);
  Value ts = Value::table();
  for (const SampleTrace& t : traces) ts.push(sample_trace(t, m.n_layers()));
  out.set("samples", ts);
  set_summary(out, summarize(traces, r, o.tau));
  return {out};
}

}  // namespace

const std::vector<ScriptFunction>& script_functions() {
  static const std::vector<ScriptFunction> fs = {
      {"lt.diag.trace", trace_fn},          {"lt.diag.js", js},
      {"lt.diag.tp_ratio", tp_ratio_fn},    {"lt.diag.delta_js", delta_js_fn},
      {"lt.diag.normalise", normalise_fn},  {"lt.diag.split_score", split_score_fn},
      {"lt.diag.splits", splits_fn},        {"lt.diag.split_layer", split_layer_fn}};
  return fs;
}

}  // namespace ltrun::diag
