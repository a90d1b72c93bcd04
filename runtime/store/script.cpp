// runtime/store/script.cpp: lt.run's functions over script values (runtime/store/script.h).
#include "runtime/store/script.h"

#include <ATen/core/Tensor.h>

#include <cmath>

#include "runtime/core/interrupt.h"
#include "runtime/core/json_value.h"
#include "runtime/core/run_context.h"
#include "runtime/store/session.h"

namespace ltrun::store {
namespace {

using ScriptValue = ltrun::Value;

Session& session(const Args& a) {
  if (!a.run().session) fail("{}: no run is open (this interpreter has no run store)", a.fn());
  return *a.run().session;
}

RunSink& sink(const Args& a) {
  if (!a.run().sink) fail("{}: no run is open (this interpreter has no run store)", a.fn());
  return *a.run().sink;
}

double metric_value(const ScriptValue& x, const std::string& fn) {
  if (x.is_number()) return x.num();
  if (const bool* b = std::get_if<bool>(&x.v)) return *b ? 1.0 : 0.0;
  if (x.is_tensor()) {
    LT_CHECK(x.tensor().numel() == 1, "{}: a metric is one number; got a tensor of {} elements", fn, x.tensor().numel());
    return x.tensor().item<double>();
  }
  fail("{}: a metric value must be a number, boolean or 1-element tensor, got {}", fn, x.type_name());
}

// {step=} (and the like) of argument i when it is a table; other values are not options here
Options opts_of(const Args& a, int i) { return Options(a[i].is_table() ? a[i] : ScriptValue(), a.fn()); }

// t's keys, which must all be names (error `what`)
const std::map<std::string, ScriptValue>& named(const ScriptValue& t, const std::string& what) {
  if (t.size() || !t.tab().numbers.empty() || !t.tab().odd_key.empty()) fail("{}", what);
  return t.tab().fields;
}

// lt.run.seed() → the run's seed (--seed); lt.run.seed(NAME) → the seed of stream NAME of
// the run (runtime/core/run_context.h), a well-mixed integer < 2^53; lt.run.seed(NAME, I) → the
// I-th seed of that stream (a batch's, a repeat's), as well mixed: never NAME's seed + I
List seed(const Args& a) {
  if (a.none(1)) return {double(a.run().seed)};
  const uint64_t s = a.run().stream(a.string(1));
  return {double(a.none(2) ? s : stream_seed(s, std::to_string(a.int_(2))))};
}
List id(const Args& a) { return {session(a).current()}; }
List root(const Args& a) { return {session(a).root()}; }

// lt.run.param(key, value) or lt.run.param{key = value, ...}
List param(const Args& a) {
  RunSink& s = sink(a);
  if (a[1].is_table()) {
    for (const auto& [k, v] : named(a[1], "lt.run.param: table keys must be strings")) s.param(k, value_text(v));
    return {};
  }
  const std::string key = a.string(1);
  if (a.count() < 2) fail("lt.run.param: missing the value for '{}'", key);
  s.param(key, value_text(a[2]));
  return {};
}

const ApiDoc& kLog = declare_api(
    {"lt.run.log", "lt.run.log(name, value[, step | opts]) or lt.run.log({name = value, ...}[, opts])",
     "logs metrics to the current run", {{"step", "integer", "the step the values belong to"}}});

// lt.run.log(name, value[, {step=}]) or lt.run.log({name = value, ...}[, {step=}])
List log(const Args& a) {
  RunSink& s = sink(a);
  if (a[1].is_table()) {
    const auto step = opts_of(a, 2).check(kLog).integer("step");
    for (const auto& [k, v] : named(a[1], "lt.run.log: table keys must be metric names"))
      s.metric(k, metric_value(v, a.fn()), step);
    return {};
  }
  const std::string name = a.string(1);
  const double v = metric_value(a[2], a.fn());
  s.metric(name, v, a[3].is_number() ? std::optional<int64_t>(a.integer(3)) : opts_of(a, 3).check(kLog).integer("step"));
  return {};
}

// lt.run.log_layers(name, values[, {grp=, step=, first=}]): values[i] (Lua array) or
// values[i] (1-D tensor, 0-based) is layer first + i - 1 (resp. first + i); first defaults to 0.
const ApiDoc& kLogLayers = declare_api(
    {"lt.run.log_layers", "lt.run.log_layers(name, values[, opts])",
     "logs one value per layer (a list, 1-based, or a 1-D tensor) to the current run",
     {{"grp", "string|number", "a group label (a token position, a split, ...)"},
      {"step", "integer", "the step the values belong to"},
      {"first", "integer", "the layer of the first value (default 0)"}}});

List log_layers(const Args& a) {
  RunSink& s = sink(a);
  const std::string name = a.string(1);
  const Options o = opts_of(a, 3).check(kLogLayers);
  const std::string grp = o.has("grp") ? value_text(o["grp"]) : "";
  const auto step = o.integer("step");
  const int64_t first = o.integer("first").value_or(0);
  if (a[2].is_tensor()) {
    at::Tensor t = a[2].tensor().detach().to(at::kCPU).to(at::kDouble);
    LT_CHECK(t.dim() == 1, "lt.run.log_layers: expected a 1-D tensor (one value per layer), got {} dims", t.dim());
    auto v = t.accessor<double, 1>();
    for (int64_t i = 0; i < t.size(0); i++) s.layer_metric(name, first + i, grp, v[i], step);
    return {};
  }
  const auto& values = a.table(2).tab().array;
  for (size_t i = 0; i < values.size(); i++)
    s.layer_metric(name, first + int64_t(i), grp, metric_value(values[i], a.fn()), step);
  return {};
}

// lt.run.artifact(path[, {kind=}]) → the path stored: a regular file under the folder the run
// started in or its run store's folder (runtime/store/artifact.h), with its sha256
const ApiDoc& kArtifact = declare_api(
    {"lt.run.artifact", "lt.run.artifact(path[, opts]) → the path stored",
     "registers a file (under the run's folder or the store's) with its sha256; copied into the store",
     {{"kind", "string", "what the file is (figure, table, checkpoint, ...)"}}});

List artifact(const Args& a) {
  RunSink& s = sink(a);
  const std::string path = a.string(1);
  return {s.artifact(path, a.options(2).check(kArtifact).string("kind").value_or(""))};
}

// lt.run.query(sql | "@NAME", ...) → array of rows, each a table column → value; "@NAME" is
// the named query db/queries/NAME.sql (as `ltrun sql @NAME`), the rest bind its `?`s
List query(const Args& a) {
  Session& s = session(a);
  std::string sql = a.string(1);
  if (!sql.empty() && sql[0] == '@') {
    try {
      sql = named_query(sql.substr(1));
    } catch (const std::exception& e) {
      fail("lt.run.query: {}", e.what());
    }
  }
  std::vector<Value> binds;
  for (int i = 2; i <= a.count(); i++) {
    if (!a[i].is_number()) binds.emplace_back(a[i].is_nil() ? Value() : Value(value_text(a[i])));
    else if (a[i].num() == std::floor(a[i].num())) binds.emplace_back(int64_t(a[i].num()));
    else binds.emplace_back(a[i].num());
  }
  const Table t = s.query(sql, binds);
  ScriptValue rows = ScriptValue::table();
  for (const auto& r : t.rows) {
    ScriptValue row = ScriptValue::table();
    for (size_t c = 0; c < t.columns.size(); c++)
      std::visit(
          [&](const auto& x) {
            if constexpr (!std::is_same_v<std::decay_t<decltype(x)>, std::monostate>) row.set(t.columns[c], x);
          },
          r[c]);
    rows.push(row);
  }
  return {rows};
}

List flush(const Args& a) {
  sink(a).flush();
  return {};
}

List begin_child(const Args& a) { return {session(a).begin_child(a.string(1))}; }

// _end(id, status, error): status "ok" | "failed"; failed becomes interrupted after Ctrl-C
List end(const Args& a) {
  const int64_t id = a.integer(1);
  const std::string st = a.string(2);
  const std::string err = text_of(a[3]).value_or("");
  const Status status = st == "ok" ? Status::ok : interrupt_requested() ? Status::interrupted : Status::failed;
  try {
    session(a).end(id, status, err);
  } catch (const std::exception& e) {
    if (err.empty()) throw;
    // the child's own error goes on up with the store's, not replaced by it
    fail("{}\nclosing child run {} failed too: {}", bound_error(err), id, e.what());
  }
  return {};
}

// lt.run.take_lease(key, job, pid) → nil when process `pid` now holds job `job` of `key`,
// else the live holder {host =, pid =, holder_run =, taken_at =} (Store::take_lease);
// lt.run.release_lease(key, job, pid)
List take_lease(const Args& a) {
  Session& s = session(a);
  const auto held = s.take_lease(a.string(1), a.string(2), a.integer(3, 1, INT32_MAX));
  if (!held) return {};
  ScriptValue v = ScriptValue::table().set("host", held->host).set("pid", held->pid).set("taken_at", held->taken_at);
  if (held->holder_run) v.set("holder_run", *held->holder_run);
  return {v};
}

// lt.run.mark_crashed(id, why): run `id`, which a process that died left `running` (a scan's
// worker: lt.scan.workers), closed as `crashed` with `why` as its error (Store::end_run); a run
// that is no longer running is left as it is
List mark_crashed(const Args& a) {
  const int64_t id = a.integer(1);
  const std::string why = a.string(2);
  Store& st = session(a).store();
  if (st.run_status(id) == Status::running) st.end_run(id, Status::crashed, why);
  return {};
}

List release_lease(const Args& a) {
  const std::string key = a.string(1), job = a.string(2);
  session(a).release_lease(key, job, a.integer(3, 1, INT32_MAX));
  return {};
}

}  // namespace

std::string value_text(const ScriptValue& v) {
  if (v.is_number()) return fmt::format("{}", v.num());
  if (const bool* b = std::get_if<bool>(&v.v)) return *b ? "true" : "false";
  if (v.is_string()) return v.str();
  if (v.is_nil()) return "";
  return to_json(v, "lt.json.encode").dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

const std::vector<ScriptFunction>& script_functions() {
  static const std::vector<ScriptFunction> fs = {
      {"lt.run.seed", seed},       {"lt.run.id", id},
      {"lt.run.root", root},       {"lt.run.param", param},
      {"lt.run.log", log},         {"lt.run.log_layers", log_layers},
      {"lt.run.artifact", artifact}, {"lt.run.query", query},
      {"lt.run.flush", flush},     {"lt.run.child", begin_child, "_begin_child"},
      {"lt.run._end", end},        {"lt.run.take_lease", take_lease},
      {"lt.run.release_lease", release_lease}, {"lt.run.mark_crashed", mark_crashed}};
  return fs;
}

}  // namespace ltrun::store
