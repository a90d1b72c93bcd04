// runtime/train/script.cpp: lt.layers, lt.train and the training methods of lt.Model over
// script values (runtime/train/script.h).
#include "runtime/train/script.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include "runtime/core/env.h"
#include "runtime/dist/dist.h"
#include "runtime/model/handle.h"
#include "runtime/model/profile.h"
#include "runtime/model/tiny.h"
#include "runtime/train/loss.h"
#include "runtime/train/freeze.h"
#include "runtime/train/optim.h"
#include "runtime/train/trainer.h"
#include "runtime/train/weight_change.h"

namespace ltrun::train {
namespace {

model::Model& model_of(const Args& a, int i) { return *model::model_arg(a, i).m; }

// n_layers from a model or a number
int layers_of(const Args& a, int i) { return a[i].is_number() ? a.int_(i, 0) : model_of(a, i).n_layers(); }

// ---- specs ------------------------------------------------------------------------------

Part::Sub read_sub(const std::string& s, const std::string& fn) {
  if (s == "all" || s.empty()) return Part::Sub::All;
  if (s == "attention") return Part::Sub::Attention;
  if (s == "mlp") return Part::Sub::Mlp;
  if (s == "norms") return Part::Sub::Norms;
  fail("{}: part '{}': expected attention, mlp, norms or all", fn, s);
}

const ApiDoc& kBlockSpec = declare_api(
    {"lt.layers spec", "{layers = {0, 1}, part = \"mlp\"} | \"embeddings\" | \"final_norm\" | \"lm_head\" | \"all\" | N | {spec, ...}",
     "a freeze spec (m:freeze, m:train_only, lt.layers.*): blocks, parts or their union",
     {{"layers", "integers", "0-based block numbers"},
      {"part", "string", "attention | mlp | norms | all (default all)"}}});

// the spec at x, argument i of fn
Spec read_spec(const Value& x, const std::string& fn, int i) {
  if (x.is_nil()) return {};
  if (x.is_string()) return Spec::named(x.str());
  if (x.is_number()) return Spec::blocks({int(integer_in(x.num(), fmt::format("{}: argument {}", fn, i), INT32_MIN, INT32_MAX))});
  if (!x.is_table()) fail("{}: a freeze spec must be a table, string or block number, got {}", fn, x.type_name());
  if (!x["layers"].is_nil()) {  // {layers = {...}, part = "mlp"}
    const Options o = Options(x, fn).check(kBlockSpec);
    const auto layers = integers_of(x["layers"], fn, "layers", INT32_MIN, INT32_MAX);
    return Spec::blocks(std::set<int>(layers.begin(), layers.end()), read_sub(o.string("part").value_or("all"), fn));
  }
  Spec spec;
  for (const Value& e : x.tab().array) spec.add(read_spec(e, fn, i));
  return spec;
}

Value block_spec(const std::set<int>& layers, const char* part = nullptr) {
  Value v = Value::table().set("layers", std::vector<int>(layers.begin(), layers.end()));
  if (part) v.set("part", part);
  return v;
}

// ---- lt.layers ---------------------------------------------------------------------------

List shallow(const Args& a) { return {block_spec(shallow_layers(layers_of(a, 1), a.number(2)))}; }
List deep(const Args& a) { return {block_spec(deep_layers(layers_of(a, 1), a.number(2)))}; }
List range(const Args& a) { return {block_spec(range_layers(a.int_(1), a.int_(2)))}; }
List middle(const Args& a) { return {block_spec(middle_layers(layers_of(a, 1), a.int_(2)))}; }
List all_blocks(const Args& a) {  // lt.layers.all(m): every block
  const int n = layers_of(a, 1);
  return {block_spec(n > 0 ? range_layers(0, n - 1) : std::set<int>{})};
}
// lt.layers.attention(spec) / mlp(spec) / norms(spec): the same blocks, only that part
template <const char* P>
List part(const Args& a) {
  std::set<int> layers;
  for (const Part& p : read_spec(a[1], P, 1).parts) {
    LT_CHECK(p.kind == Part::Kind::Blocks, "lt.layers.{}: expects a spec of blocks", P);
    layers.insert(p.layers.begin(), p.layers.end());
  }
  return {block_spec(layers, P)};
}
constexpr char kAttention[] = "attention", kMlp[] = "mlp", kNorms[] = "norms";

List union_fn(const Args& a) {
  Value u = Value::table();
  for (int i = 1; i <= a.count(); ++i) u.set(double(i), a[i]);
  return {u};
}
List describe(const Args& a) { return {read_spec(a[1], a.fn(), 1).describe()}; }
// lt.layers.names(m, spec): the parameter names the spec selects
List names(const Args& a) {
  const model::Model& m = model_of(a, 1);
  const Spec s = read_spec(a[2], a.fn(), 2);
  std::vector<std::string> out;
  for (const auto& p : m.parameters())
    if (selects(m, s, p)) out.push_back(p.name);
  return {out};
}

// ---- freezing ------------------------------------------------------------------------------

List report(const Args& a, const FreezeReport& r) {
  for (const std::string& n : r.notes) {
    fmt::print(stderr, "ltrun: note: {}\n", n);
    if (a.run().sink) a.run().sink->param("freeze_note", n);
  }
  return {a[1]};
}
List freeze_fn(const Args& a) { return report(a, freeze(model_of(a, 1), read_spec(a[2], a.fn(), 2))); }
List train_only_fn(const Args& a) { return report(a, train_only(model_of(a, 1), read_spec(a[2], a.fn(), 2))); }
List n_trainable(const Args& a) { return {count_trainable(model_of(a, 1)).trainable}; }

// ---- lt.train ------------------------------------------------------------------------------

std::map<int, double> lr_mult(const Options& o) {
  std::map<int, double> out;
  const Value& t = o["lr_mult"];
  if (t.is_nil()) return out;
  if (!t.is_table()) fail("{}: argument 2: expected a table, got {}", o.fn(), t.type_name());
  LT_CHECK(t.tab().fields.empty() && t.tab().odd_key.empty(), "{}: lr_mult must map block numbers to numbers", o.fn());
  auto add = [&](double k, const Value& v) {
    LT_CHECK(v.is_number(), "{}: lr_mult must map block numbers to numbers", o.fn());
    out[int(integer_in(k, fmt::format("{}: lr_mult key (a block)", o.fn()), INT32_MIN, INT32_MAX))] = v.num();
  };
  for (size_t i = 0; i < t.size(); ++i) add(double(i + 1), t.tab().array[i]);
  for (const auto& [k, v] : t.tab().numbers) add(k, v);
  return out;
}

std::pair<double, double> betas(const Options& o, std::pair<double, double> b) {
  const Value& t = o["betas"];
  if (t.is_nil()) return b;
  LT_CHECK(t.is_table() && t.size() == 2, "{}: option betas: expected {{b1, b2}}, got {}", o.fn(), t.type_name());
  for (int i : {1, 2})
    if (!t[double(i)].is_number())
      fail("{}: argument {}: expected a number, got {}", o.fn(), i, t[double(i)].type_name());
  return {t[1.0].num(), t[2.0].num()};
}

const ApiDoc& kCausalLm = declare_api(
    {"lt.train.causal_lm", "lt.train.causal_lm(m, opts) → {steps=, loss=, val_loss=, losses=, lrs=, val_losses=, ...}",
     "next-token training of the model's trainable parameters (AdamW, cosine schedule)",
     with({{"data", "string|tensor", "a packed corpus folder (lt.data.pack) or a token tensor [N, seq_len + 1]"},
           {"val", "tensor", "validation tokens [N, seq_len + 1] (with a tensor data)"},
           {"seq_len", "integer", "tokens per window (default 128)"},
           {"eval_batches", "integer", "validation batches per evaluation (default 8)"},
           {"seed", "integer", "data order seed (default: the run's stream \"train.order\")"},
           {"on_step", "function", "fn(step, loss) after each optimizer step (may change the freeze plan)"},
           {"steps", "integer", "optimizer steps"},
           {"micro_batch", "integer", "windows per micro-batch"},
           {"grad_accum", "integer", "micro-batches per optimizer step"},
           {"shard_optimizer", "boolean", "ZeRO-1 under `ltrun launch` (default false)"},
           {"overlap_all_reduce", "boolean", "all-reduce overlapped with backward under `ltrun launch`"},
           {"bucket_bytes", "integer", "all-reduce bucket size (default 25 MiB)"},
           {"force_full_backward", "boolean", "backward through frozen blocks too"},
           {"activation_checkpointing", "boolean", "recompute block activations in backward"}},
          loop_option_docs(TrainOptions{}))});

// The causal LM's own options (the loop's are loop_options').
TrainOptions train_options(const Options& opts, const model::ModelHandle& h, const RunContext& run) {
  TrainOptions o;
  static_cast<LoopOptions&>(o) = loop_options(opts, TrainOptions{}, run, kCausalLm);
  opts.read(o, train_option_fields());
  o.group = dist::active();  // data parallel under `ltrun launch` (rank 0 alone logs)
  if (h.tok) o.checkpoint_files.push_back(h.tok->path());
  return o;
}

// One micro-batch must fit this machine: its logits alone are micro_batch x seq_len x vocab
// floats, and past the machine's memory the allocator's message named nothing that was given
// (--micro_batch=1e9: "can't allocate memory: you tried to allocate 262144000000000 bytes").
void check_micro_batch(const Options& opts, const model::Model& m, int64_t micro_batch, int64_t seq_len) {
  const long long machine = machine_memory_bytes();
  const double logits = double(micro_batch) * double(seq_len) * double(m.config().vocab_size) * 4;
  if (machine > 0 && logits > double(machine))
    fail("{}: option micro_batch={} (with seq_len {}): one micro-batch's logits alone would take {} ({} windows x {} "
         "tokens x a vocabulary of {} x 4 bytes), more than this machine's {}; lower micro_batch", opts.fn(),
         micro_batch, seq_len, human_bytes(logits), micro_batch, seq_len, m.config().vocab_size,
         human_bytes(double(machine)));
}

// data = a packed corpus folder (shuffled windows, validation from its val split) or a token
// tensor [N, seq_len + 1] (with val = a tensor)
DataSource data_source(const Options& opts, const model::Model& m, const TrainOptions& o, const RunContext& run) {
  const int64_t seq_len = opts.integer("seq_len").value_or(128);
  const Value& rows = opts["data"];
  check_micro_batch(opts, m, o.micro_batch,
                    rows.is_tensor() && rows.tensor().dim() == 2 ? rows.tensor().size(1) - 1 : seq_len);
  const int64_t eval_batches = opts.integer("eval_batches").value_or(8);
  const bool seed_given = opts.integer("seed").has_value();
  const uint64_t seed = opts.seed(run.stream("train.order"));
  const Value& d = opts["data"];
  if (d.is_string())
    return corpus_source(d.str(), m.config().vocab_size, seq_len, seed, seed_given, o.micro_batch, eval_batches);
  if (!d.is_tensor())
    fail("{}: option data: expected a packed corpus folder or a token tensor [N, seq_len + 1], got {}", opts.fn(),
         d.type_name());
  return tensor_source(d.tensor(), opts["val"].is_tensor() ? opts["val"].tensor() : at::Tensor());
}

Value train_result(const TrainResult& r) {
  Value v = Value::record(static_cast<const LoopResult&>(r), loop_result_fields());
  if (r.val_loss >= 0) v.set("val_loss", r.val_loss);
  std::vector<double> losses, lrs;
  for (const auto& s : r.log) losses.push_back(s.loss), lrs.push_back(s.lr);
  Value val = Value::table();
  for (const auto& [step, loss] : r.val_losses) val.push(std::vector<double>{double(step), loss});
  return v.set("losses", losses).set("lrs", lrs).set("val_losses", val);
}

// lt.train.causal_lm(m, {data = DIR | tensor [N, T+1], val = tensor, seq_len = 128, steps =,
//   micro_batch =, grad_accum =, eval_batches = 8, seed = (stream "train.order"),
//   force_full_backward =, activation_checkpointing =, on_step = function(step, loss),
//   shard_optimizer = false, overlap_all_reduce = false, bucket_bytes = 25 MiB, and the loop
//   options of loop_options}) → summary table (the last three under `ltrun launch`: ZeRO-1
//   and the all-reduce overlapped with backward, runtime/train/loop.h)
// On resume the data order continues with the checkpoint's data seed; an explicit seed =
// that differs from it is an error. on_step runs after each optimizer step and may change
// the freeze plan.
List causal_lm(const Args& a) {
  const model::ModelHandle& h = model::model_arg(a, 1);
  a.table(2);
  const Options opts = a.options(2);
  TrainOptions o = train_options(opts, h, a.run());
  const Value on_step = opts["on_step"];
  if (!on_step.is_nil() && !on_step.is_function())
    fail("{}: on_step: expected a function, got {}", a.fn(), on_step.type_name());
  if (on_step.is_function())
    o.on_step = [&](int64_t step, double loss) {
      call(on_step, fmt::format("lt.train.causal_lm: on_step at step {}", step), {step, loss});
    };
  DataSource data = data_source(opts, *h.m, o, a.run());
  return {train_result(train_causal_lm(*h.m, data, o))};
}

// lt.train.param_groups(m, {weight_decay = 0.01, lr_mult = {[layer] = x}}) → list of
// {name =, lr_mult =, weight_decay =, params = {names}}
const ApiDoc& kParamGroups = declare_api(
    {"lt.train.param_groups", "lt.train.param_groups(m[, opts]) → {{name=, lr_mult=, weight_decay=, params=}, ...}",
     "the optimizer's parameter groups",
     {{"weight_decay", "number", "decoupled weight decay (default 0.01)"},
      {"lr_mult", "table", "{[block] = x}: learning-rate multipliers per block"}}});

List param_groups_fn(const Args& a) {
  const model::Model& m = model_of(a, 1);
  const Options o = a.options(2).check(kParamGroups);
  Value out = Value::table();
  for (const ParamGroup& g : param_groups(m, o.number("weight_decay").value_or(0.01), lr_mult(o))) {
    std::vector<std::string> names;
    for (const auto& p : g.params) names.push_back(p.name);
    out.push(Value::table().set("name", g.name).set("lr_mult", g.lr_mult).set("weight_decay", g.weight_decay).set("params", names));
  }
  return {out};
}

// lt.train.weight_change(m, base[, {log = NAME}]) → {layers = {...}, relative = {...},
// embeddings =, final_norm =, lm_head =}; layers[i] is block i - 1. With log, the per-layer
// norms go to the current run as layer metrics NAME (and NAME_relative).
const ApiDoc& kWeightChange = declare_api(
    {"lt.train.weight_change", "lt.train.weight_change(m, base[, opts]) → {layers=, relative=, embeddings=, final_norm=, lm_head=}",
     "norm of the parameter change per block against a base model",
     {{"log", "string", "log the per-layer norms to the run as layer metrics NAME and NAME_relative"}}});

List weight_change_fn(const Args& a) {
  const WeightChange w = weight_change(model_of(a, 1), model_of(a, 2));
  if (auto name = a.options(3).check(kWeightChange).string("log")) {
    RunSink* s = a.run().sink;
    LT_CHECK(s, "{}: log needs a run (ltrun SCRIPT)", a.fn());
    for (size_t l = 0; l < w.layers.size(); ++l) {
      s->layer_metric(*name, int64_t(l), "", w.layers[l]);
      s->layer_metric(*name + "_relative", int64_t(l), "", w.relative[l]);
    }
  }
  return {Value::record(w, weight_change_fields())};
}

// lt.train.eval_loss(m, tokens [N, T + 1]) → mean next-token cross entropy
List eval_loss_fn(const Args& a) { return {eval_loss(model_of(a, 1), {a.tensor(2).to(at::kLong)})}; }

// lt.train.step_memory{vocab = 151936, seq = 512, hidden = 256, layers = 2, batch = 1,
// chunk = 8192} → {peak_bytes =, loss =}: the peak of CPU tensor bytes (model/profile.h) of one
// training step's loss and backward (gradients included) of a random qwen3 of that shape (4
// heads over 2 kv heads, MLP 3 x hidden, its own LM head, every parameter trains) on seeded
// random token rows; chunk: the loss's vocabulary chunk (train/loss.h), 0 the plain loss over
// [B, T, V] logits. A proxy of a GPU step's peak memory, the same count on every host.
const ApiDoc& kStepMemory = declare_api(
    {"lt.train.step_memory", "lt.train.step_memory{...} → {peak_bytes=, loss=}",
     "peak CPU tensor bytes of one training step of a random qwen3 (a proxy of GPU memory)",
     {{"vocab", "integer", "vocabulary (default 151936)"},
      {"seq", "integer", "tokens per row (default 512)"},
      {"hidden", "integer", "hidden size, a multiple of 4 (default 256)"},
      {"layers", "integer", "blocks (default 2)"},
      {"batch", "integer", "rows (default 1)"},
      {"chunk", "integer", "the loss's vocabulary chunk; 0: plain loss (default 8192)"}}});

List step_memory_fn(const Args& a) {
  const Options o = a.options(1).check(kStepMemory);
  const int64_t chunk = o.integer("chunk", 0).value_or(kLossChunk);
  model::TinySpec s;
  s.vocab = o.integer("vocab", 2).value_or(151936);
  s.hidden = o.integer("hidden", 8).value_or(256);
  s.layers = o.integer("layers", 1).value_or(2);
  s.seed = 1;
  const int64_t T = o.integer("seq", 1).value_or(512), B = o.integer("batch", 1).value_or(1);
  LT_CHECK(s.hidden % 4 == 0, "{}: hidden must be a multiple of the 4 heads, got {}", a.fn(), s.hidden);
  model::Model m = model::make_tiny(s);
  m.set_requires_grad(true);
  at::Generator g = at::detail::createCPUGenerator(1);
  const at::Tensor batch = at::randint(s.vocab, {B, T + 1}, g, at::kLong);
  double loss = 0;
  const model::MemoryPeak peak = model::peak_memory([&] {
    const LossPass lp = causal_lm_loss(m, batch, 0, false, chunk);
    lp.loss.backward();
    loss = lp.loss.item<double>();
  });
  return {Value::table().set("peak_bytes", double(peak.peak)).set("loss", loss)};
}

// lt.train.latest_checkpoint(dir) → path or nil
List latest(const Args& a) {
  const std::string p = latest_checkpoint(a.string(1));
  return {p.empty() ? Value() : Value(p)};
}

}  // namespace

MetricSink metric_sink(RunSink* sink) {
  MetricSink k;
  if (!sink) return k;
  k.metric = [sink](const std::string& name, double v, int64_t step) { sink->metric(name, v, step); };
  k.param = [sink](const std::string& key, const std::string& v) { sink->param(key, v); };
  k.flush = [sink] { sink->flush(); };
  return k;
}

std::vector<OptionDoc> loop_option_docs(const LoopOptions& defaults) {
  return with_defaults<LoopOptions>(
      {{"lr", "number", "peak learning rate"},
       {"warmup", "integer", "linear warm-up steps"},
       {"decay", "string", "schedule after warm-up (cosine, linear, constant)"},
       {"min_lr_ratio", "number", "final learning rate as a fraction of lr"},
       {"weight_decay", "number", "AdamW's decoupled weight decay"},
       {"betas", "table", "AdamW's {b1, b2}"},
       {"eps", "number", "AdamW's epsilon"},
       {"master_weights", "boolean", "AdamW keeps fp32 master copies of bf16/fp16 parameters"},
       {"clip_grad", "number", "gradient-norm clip (0: none)"},
       {"lr_mult", "table", "{[block] = x}: learning-rate multipliers per block"},
       {"eval_every", "integer", "steps between validations (0: at the end only)"},
       {"checkpoint_dir", "string", "folder of checkpoints (\"\": none)"},
       {"checkpoint_every", "integer", "steps between checkpoints (0: only at the end)"},
       {"keep_checkpoints", "integer", "checkpoints kept"},
       {"resume", "boolean", "continue from checkpoint_dir's latest checkpoint (an error when missing)"},
       {"stop_after", "integer", "stop after this step, with a checkpoint (-1: never)"},
       {"log", "boolean", "log metrics to the run", "true"},
       {"progress", "boolean", "a progress line on stderr when it is a terminal"}},
      loop_option_fields(), defaults);
}

LoopOptions loop_options(const Options& opts, const LoopOptions& defaults, const RunContext& run, const ApiDoc& api) {
  opts.refuse_renamed("clip",
                      "clip_grad (the gradient-norm clip) or clip_ratio (the PPO ratio clip of lt.rl.grpo and "
                      "lt.rl.policy_loss)");
  opts.check(api);
  LoopOptions o = defaults;
  opts.read(o, loop_option_fields());
  std::tie(o.beta1, o.beta2) = betas(opts, {o.beta1, o.beta2});
  LT_CHECK(o.clip >= 0, "{}: clip_grad must be >= 0 (0: no clipping), got {}", opts.fn(), o.clip);
  if (auto m = lr_mult(opts); !m.empty()) o.lr_mult = m;
  o.sink = opts.boolean("log").value_or(api.boolean_default("log")) ? metric_sink(run.sink) : MetricSink{};
  return o;
}

const std::vector<ScriptFunction>& layer_functions() {
  static const std::vector<ScriptFunction> fs = {
      {"lt.layers.shallow", shallow},          {"lt.layers.deep", deep},
      {"lt.layers.range", range},              {"lt.layers.middle", middle},
      {"lt.layers.all", all_blocks},           {"lt.layers.union", union_fn},
      {"lt.layers.attention", part<kAttention>}, {"lt.layers.mlp", part<kMlp>},
      {"lt.layers.norms", part<kNorms>},       {"lt.layers.describe", describe},
      {"lt.layers.names", names}};
  return fs;
}

const std::vector<ScriptFunction>& train_functions() {
  static const std::vector<ScriptFunction> fs = {
      {"lt.train.causal_lm", causal_lm},         {"lt.train.param_groups", param_groups_fn},
      {"lt.train.weight_change", weight_change_fn}, {"lt.train.eval_loss", eval_loss_fn},
      {"model:freeze", freeze_fn},               {"model:train_only", train_only_fn},
      {"lt.train.latest_checkpoint", latest},     {"lt.train.step_memory", step_memory_fn}};
  return fs;
}

const std::vector<ScriptFunction>& model_methods() {
  static const std::vector<ScriptFunction> fs = {
      {"model:freeze", freeze_fn}, {"model:train_only", train_only_fn}, {"model:n_trainable", n_trainable}};
  return fs;
}

}  // namespace ltrun::train
