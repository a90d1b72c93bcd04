// runtime/model/script.cpp: lt.model, lt.Model, lt.tokenizer and lt.Tokenizer over script
// values (runtime/model/script.h).
#include "runtime/model/script.h"

#include <ATen/ATen.h>

#include <filesystem>

#include "runtime/core/device.h"
#include "runtime/core/inputs.h"
#include "runtime/core/json_value.h"
#include "runtime/core/run_context.h"
#include "runtime/core/tensor_ops.h"
#include "runtime/model/assemble.h"
#include "runtime/model/create.h"
#include "runtime/model/generate.h"
#include "runtime/model/generate_check.h"
#include "runtime/model/handle.h"
#include "runtime/model/info.h"
#include "runtime/model/profile.h"

namespace ltrun::model {
namespace {

namespace fs = std::filesystem;

Value object(ModelHandle h) { return Value(Opaque{"lt.Model", std::make_shared<ModelHandle>(std::move(h))}); }
Value object(const text::Tokenizer& t) { return Value(Opaque{"lt.Tokenizer", std::make_shared<text::Tokenizer>(t)}); }

// Rows of token ids: a tensor [T] or [B, T], {ids...}, or {{ids...}, ...} (argument i).
std::vector<std::vector<int64_t>> id_rows(const Args& a, int i) {
  const Value& x = a[i];
  std::vector<std::vector<int64_t>> rows;
  if (x.is_tensor()) {
    at::Tensor t = x.tensor().to(at::kCPU, at::kLong).contiguous();
    if (t.dim() == 1) t = t.unsqueeze(0);
    LT_CHECK(t.dim() == 2 && t.size(1) > 0, "{}: token ids must be [T] or [B, T]", a.fn());
    for (int64_t r = 0; r < t.size(0); r++)
      rows.emplace_back(t[r].data_ptr<int64_t>(), t[r].data_ptr<int64_t>() + t.size(1));
    return rows;
  }
  LT_CHECK(a.table(i).size() > 0, "{}: no token ids given", a.fn());
  auto row = [&](const Value& t) {
    std::vector<int64_t> r = integers_of(t, a.fn(), "token ids", 0, INT32_MAX);
    LT_CHECK(!r.empty(), "{}: an empty row of token ids", a.fn());
    return r;
  };
  if (!x[1.0].is_table()) return {row(x)};
  for (const Value& r : x.tab().array) {
    if (!r.is_table()) fail("{}: argument {}: expected a table, got {}", a.fn(), i, r.type_name());
    rows.push_back(row(r));
  }
  return rows;
}

// ids as one batch: a tensor as given; rows of different lengths left-padded, with the mask
// returned through `mask`.
at::Tensor batch_ids(const Args& a, int i, int64_t pad, at::Tensor* mask) {
  if (a[i].is_tensor()) {
    at::Tensor t = a[i].tensor().to(at::kLong);
    return t.dim() == 1 ? t.unsqueeze(0) : t;
  }
  const auto rows = id_rows(a, i);
  Padded p = left_pad(rows, pad);
  bool padded = false;
  for (const auto& r : rows) padded |= r.size() != rows.front().size();
  if (padded && mask) *mask = p.mask;
  return p.ids;
}

Intervention intervention(const Value& v, int layer, const at::Tensor& like, const std::string& fn) {
  if (v.is_function())  // runs inside the forward pass; its errors unwind the pass's C++ frames
    return Intervention::call([v](int l, at::Tensor& h) {
      const Value r = call(v, fmt::format("intervention after block {}", l), {h, l});
      if (r.is_tensor()) h = r.tensor();
    });
  if (!v.is_table()) fail("{}: argument 3: expected a table, got {}", fn, v.type_name());
  auto get = [&](const char* key) -> std::optional<at::Tensor> {
    if (v[key].is_nil()) return std::nullopt;
    return tensor_from(v[key], fn, 3, like.scalar_type()).to(like.device());
  };
  if (auto p = get("zero")) return Intervention::zero(p->scalar_type() == at::kBool ? *p : p->to(at::kLong));
  if (auto d = get("add")) return Intervention::add(*d);
  if (auto r = get("replace")) return Intervention::replace(*r);
  fail("{}: intervene[{}]: expected a function(h, layer) or {{zero=positions}}, {{add=t}}, {{replace=t}}", fn, layer);
}

// t's number keys with their values (the array part and the rest)
std::vector<std::pair<double, const Value*>> numbered(const Value& t) {
  std::vector<std::pair<double, const Value*>> out;
  for (size_t i = 0; i < t.size(); ++i) out.emplace_back(double(i + 1), &t.tab().array[i]);
  for (const auto& [k, x] : t.tab().numbers) out.emplace_back(k, &x);
  return out;
}

// intervene = { [layer] = iv, SITE = { [layer] = iv } }
void interventions(const Value& t, ForwardOptions& o, const Model& m, const std::string& fn) {
  if (!t.is_table()) fail("{}: argument 3: expected a table, got {}", fn, t.type_name());
  const at::Tensor like = at::empty({0}, at::TensorOptions().dtype(m.dtype()).device(m.device()));
  if (!t.tab().odd_key.empty()) fail("{}: intervene keys are layer numbers or site names", fn);
  for (const auto& [name, st] : t.tab().fields) {  // a site: { [layer] = intervention }
    const Site site = parse_site(name);
    if (!st.is_table()) fail("{}: argument 3: expected a table, got {}", fn, st.type_name());
    const std::string what = fmt::format("intervene.{}", site_name(site));
    if (!st.tab().fields.empty() || !st.tab().odd_key.empty()) fail("{}: {} keys are layer numbers", fn, what);
    for (const auto& [k, iv] : numbered(st)) {
      const int layer = int(integer_in(k, fmt::format("{}: {} key (a layer)", fn, what),
                                       site == Site::ResidPost ? -1 : 0, m.n_layers() - 1));
      o.intervene[HookPoint{layer, site}] = intervention(*iv, layer, like, fn);
    }
  }
  for (const auto& [k, iv] : numbered(t)) {
    const int layer = int(integer_in(k, fmt::format("{}: intervene key (a layer)", fn), -1, m.n_layers() - 1));
    o.intervene[layer] = intervention(*iv, layer, like, fn);
  }
}

// capture = true | "site" | {"site", ...}; logits = "all" | "last" | "none" | positions
void read_capture_logits(const Options& opts, ForwardOptions& o, const Model& m) {
  const Value& c = opts["capture"];
  if (const bool* b = std::get_if<bool>(&c.v)) o.capture = *b;
  else if (c.is_string() || c.is_table())
    for (const std::string& site : opts.strings("capture")) o.capture_sites.push_back(parse_site(site));
  else if (!c.is_nil())
    fail("{}: capture must be true, a site name or a list of site names, found {}", opts.fn(), c.type_name());
  const Value& l = opts["logits"];
  if (l.is_string()) {
    const std::string& w = l.str();
    if (w == "all") o.logits = Logits::All;
    else if (w == "last") o.logits = Logits::Last;
    else if (w == "none") o.logits = Logits::None;
    else fail("{}: logits = '{}': expected \"all\", \"last\", \"none\" or positions", opts.fn(), w);
  } else if (!l.is_nil()) {
    o.logits = Logits::Positions;
    o.logit_positions = tensor_from(l, opts.fn(), 3, at::kLong).to(at::kLong).to(m.device());
  }
}

Value forward_result(const ForwardResult& r, const ForwardOptions& o, const at::Tensor& mask) {
  Value v = Value::table();
  if (r.logits.defined()) v.set("logits", r.logits);
  if (r.residual.defined()) v.set("residual", r.residual);
  if (o.capture) {  // hidden[i]: 0-based keys, 0 = the embeddings
    Value hidden = Value::table();
    for (size_t i = 0; i < r.hidden.size(); i++)
      if (r.hidden[i].defined()) hidden.set(double(i), r.hidden[i]);
    v.set("hidden", hidden);
  }
  if (!o.capture_sites.empty()) {
    Value sites = Value::table();
    for (Site site : o.capture_sites) {
      Value s = Value::table();
      for (const auto& [point, t] : r.sites)
        if (point.site == site) s.set(double(point.layer), t);
      sites.set(site_name(site), s);
    }
    v.set("sites", sites);
  }
  if (mask.defined()) v.set("attention_mask", mask);
  return v;
}

// Marks a handle busy for the length of a pass (m:free() and m:to() refuse meanwhile).
struct Running {
  ModelHandle& h;
  explicit Running(ModelHandle& handle) : h(handle) { h.running++; }
  ~Running() { h.running--; }
};

const ApiDoc& kForward = declare_api(
    {"model:forward", "m:forward(ids[, opts]) → {logits=, hidden=, sites=, residual=, attention_mask=}",
     "runs the blocks over token ids (a tensor [T] or [B, T], or lists of ids; rows of unequal length left-padded)",
     {{"attention_mask", "tensor", "[B, T] 1 for tokens, 0 for padding (default: from the padding of unequal rows)"},
      {"capture", "boolean|string|strings", "true: hidden[0..n] after each block; a site name or list: sites[name][layer]"},
      {"from_layer", "integer", "first block to run (default 0; with hidden= the residual entering it)"},
      {"to_layer", "integer", "last block to run (default -1: the final one); the result's residual leaves it"},
      {"hidden", "tensor", "the residual stream entering from_layer (instead of embedding ids)"},
      {"logits", "string|tensor", "\"all\" (default), \"last\", \"none\" or positions to compute logits at"},
      {"intervene", "table", "{[layer] = fn(h, layer) | {zero=} | {add=} | {replace=}, SITE = {[layer] = ...}}"}}});

// m:forward(ids, {attention_mask=, capture=, from_layer=, to_layer=, hidden=, logits=, intervene=})
List forward(const Args& a) {
  ModelHandle& h = model_arg(a, 1);
  // intervene callbacks run the script in the middle of the pass: the pass holds its own
  // reference to the model (so nothing it uses can go away under it) and marks the handle running.
  const std::shared_ptr<Model> keep = h.m;
  Running running(h);
  const Model& m = *keep;
  ForwardOptions o;
  at::Tensor mask, ids;
  if (!a.none(2)) ids = batch_ids(a, 2, pad_token(m.config()), &mask).to(m.device());
  const Options opts = a.options(3).check(kForward);
  if (opts.has("attention_mask")) mask = tensor_from(opts["attention_mask"], a.fn(), 3, at::kLong).to(at::kLong);
  if (auto hid = opts.tensor("hidden")) o.hidden = hid->to(m.device());
  if (opts.has("intervene")) interventions(opts["intervene"], o, m, a.fn());
  read_capture_logits(opts, o, m);
  o.from_layer = int(opts.integer("from_layer", INT32_MIN, INT32_MAX).value_or(0));
  o.to_layer = int(opts.integer("to_layer", INT32_MIN, INT32_MAX).value_or(-1));
  if (mask.defined()) o.attention_mask = mask.to(m.device());
  return {forward_result(m.forward(ids, o), o, mask)};
}

int layer_arg(const Args& a, int i, const Model& m) {
  const int64_t l = a.integer(i);
  LT_CHECK(l >= 0 && l < m.n_layers(), "{}: layer {} out of range 0..{}", a.fn(), l, m.n_layers() - 1);
  return int(l);
}

// m:layer(l) → {kind = "decoder" | "mamba" | "attention" | "mlp", sites = {"mixer_out", ...}}
List layer(const Args& a) {
  const Model& m = *model_arg(a, 1).m;
  const int l = layer_arg(a, 2, m);
  std::vector<std::string> sites;
  for (Site site : m.layer_sites(l)) sites.emplace_back(site_name(site));
  return {Value::table().set("kind", m.layer_kind(l)).set("sites", sites)};
}

std::vector<Param> params(const Args& a) {
  const Model& m = *model_arg(a, 1).m;
  return a.none(2) ? m.parameters() : m.parameters(layer_arg(a, 2, m));
}

// m:parts([layer]) → {name = "embeddings" | "mixer" | "mlp" | "norm" | "head"}
List parts(const Args& a) {
  Value v = Value::table();
  for (const Param& p : params(a)) v.set(p.name, part_name(p.part));
  return {v};
}

// m:parameters([layer]) → {name = tensor} sharing storage with the model
List parameters(const Args& a) {
  Value v = Value::table();
  for (const Param& p : params(a)) v.set(p.name, p.tensor);
  return {v};
}

List n_params(const Args& a) {
  int64_t n = 0;
  for (const Param& p : model_arg(a, 1).m->parameters()) n += p.tensor.numel();
  return {n};
}

List lens(const Args& a) {
  const Model& m = *model_arg(a, 1).m;
  return {m.lens(a.tensor(2).to(m.device()))};
}

const text::Tokenizer& need_tokenizer(const ModelHandle& h, const std::string& fn) {
  if (!h.tok) fail("{}: {} has no tokenizer.json: pass token ids instead of text", fn, h.path);
  return *h.tok;
}

const ApiDoc& kGenerate = declare_api(
    {"model:generate", "m:generate(prompts[, opts]) → outputs, {{ids=, finish=}, ...}, stats",
     "samples continuations of a string, a list of strings, a list of ids or a list of id lists",
     {{"special", "boolean", "add the tokenizer's special tokens when encoding strings (default true)"},
      {"max_new_tokens", "integer", "tokens to generate per prompt at most"},
      {"temperature", "number", "sampling temperature; 0 = greedy"},
      {"top_k", "integer", "sample among the k most likely tokens (0: all)"},
      {"top_p", "number", "nucleus sampling mass in (0, 1]"},
      {"seed", "integer", "sampling seed (default: the run's stream \"generate\")"},
      {"stop", "string|strings", "stop strings; outputs are cut before them"},
      {"stop_ids", "integers", "token ids that end a row"},
      {"share_prefill", "boolean", "one prefill for rows with equal prompts (default true)"},
      {"drop_finished", "boolean", "drop finished rows from the batch (default true)"},
      {"max_rows", "integer", "rows decoded at once (0: all at once)"},
      {"refill", "boolean", "continuous batching: start waiting rows as others finish (default true)"},
      {"cache", "string", "dynamic (default) | static: one preallocated cache, no host sync per token"},
      {"sync_every", "integer", "static cache: the host checks stops every k steps (default 8)"}}});

GenerateOptions generate_options(const Options& o, const RunContext& run) {
  // intervene belongs to m:forward: generation's decode steps run with a cache that
  // m:forward's interventions do not reach, so it is refused rather than ignored
  LT_CHECK(!o.has("intervene"), "{}: option intervene is not supported by generate (it would not reach the decode "
           "steps); intervene with m:forward and pick tokens from its logits", o.fn());
  o.check(kGenerate);
  GenerateOptions g;
  g.max_new_tokens = int(o.integer("max_new_tokens", 0, INT32_MAX).value_or(g.max_new_tokens));
  g.temperature = o.number("temperature").value_or(g.temperature);
  g.top_k = o.integer("top_k", 0).value_or(g.top_k);
  g.top_p = o.number("top_p").value_or(g.top_p);
  g.share_prefill = o.boolean("share_prefill").value_or(g.share_prefill);
  g.drop_finished = o.boolean("drop_finished").value_or(g.drop_finished);
  g.max_rows = o.integer("max_rows", 0).value_or(g.max_rows);
  g.refill = o.boolean("refill").value_or(g.refill);
  g.cache = o.string("cache").value_or(g.cache);
  g.sync_every = o.integer("sync_every", 1).value_or(g.sync_every);
  g.seed = o.seed(run.stream("generate"));
  if (o.has("stop_ids")) g.stop_ids = integers_of(o["stop_ids"], o.fn(), "stop_ids", 0, INT32_MAX);
  return g;
}

// m:generate(prompts, {max_new_tokens=, temperature=, top_k=, top_p=, seed = (stream
// "generate"), stop=, stop_ids=, special=, share_prefill = true, drop_finished = true,
// max_rows = 0 (all rows at once), refill = true: continuous batching, cache = "dynamic" | "static" (one
// preallocated cache and a step without host synchronisation, model/static_decode.h), sync_every = 8 (static:
// steps between stop checks), model/generate.h}). Prompts: a string, a list of strings, a list of
// ids, or a list of id lists. Strings give strings back (cut before a stop string), ids give
// ids; the second result holds per prompt {ids=, finish="stop_id"|"stop"|"length"}; the third
// is what the call did (GenerateStats): {decode_steps=, prefills=, refilled_rows=, peak_rows=,
// graphs=, replays=, fallbacks=} (the static cache's CUDA graphs: captured, replayed steps,
// failed captures).
List generate_fn(const Args& a) {
  const ModelHandle& h = model_arg(a, 1);
  const Options o = a.options(3);
  GenerateOptions g = generate_options(o, a.run());
  const bool special = o.boolean("special").value_or(true);
  std::vector<std::vector<int64_t>> ids;
  auto encode = [&](const std::string& s) {
    const auto e = need_tokenizer(h, a.fn()).encode(s, special);
    ids.emplace_back(e.begin(), e.end());
  };
  const bool strings = a[2].is_string() || a.table(2)[1.0].is_string();
  const bool single = a[2].is_string() || a[2][1.0].is_number();
  if (a[2].is_string()) encode(a[2].str());
  else if (strings) for (const std::string& x : strings_of(a[2], a.fn(), "prompts")) encode(x);
  else ids = id_rows(a, 2);
  const std::vector<std::string> stops = o.strings("stop");
  if (!stops.empty()) g.stop = stop_strings(need_tokenizer(h, a.fn()), stops);
  // named as the script wrote them: its function, max_new_tokens, prompt 1 the first
  check_generate_options(h.m->config(), ids, g, {a.fn(), "max_new_tokens", 1});
  GenerateStats st;
  const auto gens = generate(*h.m, ids, g, &st);
  Value outs = Value::table(), info = Value::table();
  for (const Generation& gen : gens) {
    outs.push(strings ? Value(cut_at_stops(need_tokenizer(h, a.fn()), gen.tokens, stops)) : Value(gen.tokens));
    info.push(Value::table().set("ids", gen.tokens).set("finish", gen.finish));
  }
  const Value stats = Value::table().set("decode_steps", st.decode_steps).set("prefills", st.prefills)
      .set("refilled_rows", st.refilled_rows).set("peak_rows", st.peak_rows).set("graphs", st.graphs)
      .set("replays", st.replays).set("fallbacks", st.fallbacks);
  return {single ? outs[1.0] : outs, info, stats};
}

List clone(const Args& a) {
  ModelHandle c = model_arg(a, 1);
  c.m = std::make_shared<Model>(c.m->clone());
  c.running = 0;
  return {object(std::move(c))};
}

List save(const Args& a) {
  const ModelHandle& h = model_arg(a, 1);
  const std::string dir = a.string(2);
  fs::create_directories(dir);
  h.m->save(dir);
  if (h.tok) {
    const auto dst = fs::path(dir) / "tokenizer.json";
    if (fs::absolute(h.tok->path()) != fs::absolute(dst))
      fs::copy_file(h.tok->path(), dst, fs::copy_options::overwrite_existing);
  }
  return {};
}

List to(const Args& a) {
  ModelHandle& h = model_arg(a, 1);
  if (h.running) fail("model:to: the model is inside its own forward pass (an intervene callback); move it after the pass returns");
  const std::string dev = a.string(2);
  std::optional<c10::ScalarType> dtype;
  if (a[3].is_string()) dtype = parse_dtype(a[3].str());
  h.m->to(parse_device(dev), dtype);
  return {a[1]};
}

List free_fn(const Args& a) {
  ModelHandle& h = a.object<ModelHandle>(1, "lt.Model", "a model");
  if (h.running) fail("model:free: the model is inside its own forward pass (an intervene callback); free it after the pass returns");
  h.m.reset();
  return {};
}

// the fields m.KEY reads (the REPL completes them from here, so index answers only these)
const ApiDoc& kModelFields = declare_api(
    {"lt.Model", "m = lt.model.load(path); m.n_layers, m:forward(ids), ...", "a loaded model: its fields",
     {{"n_layers", "integer", "number of blocks"},
      {"config", "table", "config.json as a table"},
      {"arch", "string", "the config's model_type"},
      {"device", "string", "where its parameters are"},
      {"dtype", "string", "its parameters' dtype"},
      {"path", "string", "the folder it was loaded from"},
      {"tokenizer", "lt.Tokenizer", "its tokenizer (nil without tokenizer.json)"}}});

List index(const Args& a) {
  const ModelHandle& h = model_arg(a, 1);
  const std::string k = a.string(2);
  if (!kModelFields.has(k)) return {Value()};
  if (k == "n_layers") return {h.m->n_layers()};
  if (k == "config") return {from_json(nlohmann::json::parse(h.m->config().json))};
  if (k == "arch") return {h.m->config().model_type};
  if (k == "device") return {h.m->device().str()};
  if (k == "dtype") return {dtype_name(h.m->dtype())};
  if (k == "path") return {h.path};
  if (k == "tokenizer" && h.tok) return {object(*h.tok)};
  return {Value()};
}

List tostring(const Args& a) {
  const ModelHandle& h = a.object<ModelHandle>(1, "lt.Model", "a model");
  if (!h.m) return {"model(<freed>)"};
  const auto& c = h.m->config();
  return {fmt::format("model({}, {} layers, hidden {}, vocab {}, {}, {})", c.model_type, c.n_layers, c.hidden_size,
                      c.vocab_size, dtype_name(h.m->dtype()), h.m->device().str())};
}

// ---- lt.model ---------------------------------------------------------------------------

const ApiDoc& kLoad = declare_api(
    {"lt.model.load", "lt.model.load(path[, opts]) → model",
     "loads a checkpoint folder (HF layout: config.json, *.safetensors, tokenizer.json if present)",
     {{"device", "string", "cpu | cuda | cuda:N (default: the run's --device)"},
      {"dtype", "string", "float32 | bfloat16 | float16 (default: the checkpoint's)"}}});

List load(const Args& a) {
  const std::string path = input_source(a.string(1));  // a replay's restored copy (runtime/core/inputs.h)
  const Options o = a.options(2).check(kLoad);
  std::optional<c10::ScalarType> dtype;
  if (auto d = o.string("dtype")) dtype = parse_dtype(*d);
  ModelHandle h;
  h.m = std::make_shared<Model>(Model::load(path, parse_device(o.string("device").value_or(a.run().device)), dtype));
  h.path = a.string(1);
  const fs::path dir = fs::is_directory(path) ? fs::path(path) : fs::path(path).parent_path();
  if (fs::exists(dir / "tokenizer.json"))
    h.tok = std::make_shared<text::Tokenizer>(text::Tokenizer::load((dir / "tokenizer.json").string()));
  return {object(std::move(h))};
}

// lt.model.new{out=DIR, arch=, layers=, hidden=, heads=, kv_heads=, intermediate=, vocab=,
//              corpus=PATH|{PATHS}, tokenizer=PATH, seed = (stream "model.init"), tie=, pattern="M*-",
//              chunk= (nemotron_h: the Mamba2 scan's chunk_size, 128)} → summary table
const ApiDoc& kNew = declare_api(
    {"lt.model.new", "lt.model.new{out=DIR, ...} → {dir=, vocab=, parameters=, tokenizer=}",
     "writes a tiny random model (and a tokenizer) in the HF layout",
     {{"out", "string", "the folder to write (required)"},
      {"arch", "string", "architecture (qwen3, llama, nemotron_h, ...)"},
      {"layers", "integer", "number of blocks"},
      {"hidden", "integer", "hidden size"},
      {"heads", "integer", "attention heads"},
      {"kv_heads", "integer", "key/value heads"},
      {"intermediate", "integer", "MLP intermediate size"},
      {"vocab", "integer", "vocabulary size of a trained tokenizer"},
      {"tokenizer", "string", "an existing tokenizer.json to use"},
      {"corpus", "string|strings", "text files to train the tokenizer on"},
      {"seed", "integer", "initialisation seed (default: the run's stream \"model.init\")"},
      {"tie", "boolean", "tie the embeddings and the head"},
      {"pattern", "string", "nemotron_h layer pattern (M mamba, * attention, - MLP)"},
      {"chunk", "integer", "nemotron_h: the Mamba2 scan's chunk size (default 128)"}}});

List new_fn(const Args& a) {
  a.table(1);
  const Options o = a.options(1);
  o.check(kNew);
  NewModelSpec s;
  o.read(s, new_model_fields());
  LT_CHECK(!s.out_dir.empty(), "{}: option out (the folder to write) is required", a.fn());
  o.read(s.tiny, tiny_spec_fields());
  s.tiny.seed = o.seed(a.run().stream("model.init"));
  return {Value::record(create_model_dir(s), new_model_result_fields())};
}

const ApiDoc& kHybridLayer = declare_api(
    {"lt.model.hybrid layers[i]", "{from=DIR, layer=I} | {kind=KIND, like=DIR, init=, config={...}}",
     "one block of a hybrid: copied from a donor or fresh",
     {{"from", "string", "the donor's folder"},
      {"layer", "integer", "the donor's block (0-based)"},
      {"kind", "string", "a fresh block's kind (mamba, attention, mlp, ...)"},
      {"like", "string", "a folder whose config shapes the fresh block"},
      {"init", "string", "initialisation of a fresh block (\"hf\")"},
      {"config", "table", "config fields of the fresh block"}}});

// layers[i] of lt.model.hybrid: {from=DIR, layer=I} or {kind=, like=, init=, config=}
HybridLayerSpec hybrid_layer(const Value& e, const std::string& what) {
  LT_CHECK(e.is_table(), "{}: expected a table {{from=DIR, layer=I}} or {{kind=KIND}}, got {}", what, e.type_name());
  HybridLayerSpec l;
  Options(e, what).check(kHybridLayer).read(l, hybrid_layer_fields());
  LT_CHECK(l.from.empty() == (l.layer < 0), "{}: give both from and layer (a donor's layer), or kind", what);
  LT_CHECK(l.from.empty() || l.like.empty(), "{}: like is for fresh layers (kind=...), not with from", what);
  if (!e["config"].is_nil()) l.config = to_json(e["config"], "lt.json.encode");
  return l;
}

// lt.model.hybrid{out=DIR, embed=DIR, head=DIR, seed = (stream "model.init"), native=true,
//   layers = { {from=DIR, layer=I} | {kind="mamba", like=DIR, config={...}, init="hf"}, ... }
//            | "DIR:0-3,DIR2:4-7,mamba@DIR2"} → {dir, arch, n_layers, parameters, dtype,
//   layer_types = {...}, fresh = {0-based layers}, copied = {{name=, donor=, donor_name=}, ...}}
const ApiDoc& kHybrid = declare_api(
    {"lt.model.hybrid", "lt.model.hybrid{out=DIR, embed=DIR, layers=...} → {dir=, arch=, n_layers=, fresh=, copied=, ...}",
     "assembles a model from blocks of donors and fresh blocks",
     {{"out", "string", "the folder to write (required)"},
      {"embed", "string", "the embeddings' donor folder (required)"},
      {"head", "string", "the head's donor folder (default: embed's)"},
      {"native", "boolean", "write a native architecture when one fits (default true)"},
      {"seed", "integer", "initialisation seed of fresh blocks (default: stream \"model.init\")"},
      {"layers", "table|string", "a list of layer specs (lt.model.hybrid layers[i]) or \"DIR:0-3,mamba@DIR2\""}}});

List hybrid(const Args& a) {
  a.table(1);
  const Options o = a.options(1);
  HybridSpec s;
  o.check(kHybrid).read(s, hybrid_fields());
  LT_CHECK(!s.out_dir.empty(), "{}: option out (the folder to write) is required", a.fn());
  LT_CHECK(!s.embed.empty(), "{}: option embed (the embeddings' donor folder) is required", a.fn());
  s.seed = o.seed(a.run().stream("model.init"));
  const Value& t = o["layers"];
  if (t.is_string()) {
    s.layers = parse_hybrid_layers(t.str());
  } else {
    LT_CHECK(t.is_table(), "{}: option layers: expected a list of layer specs or a string, got {}", a.fn(), t.type_name());
    for (size_t i = 1; i <= t.size(); i++) s.layers.push_back(hybrid_layer(t[double(i)], fmt::format("{}: layers[{}]", a.fn(), i)));
  }
  const HybridResult r = assemble_hybrid(s);
  return {Value::record(r, hybrid_result_fields()).set("fresh", r.fresh_layers).set("copied", Value::records(r.copied, hybrid_copy_fields()))};
}

List info(const Args& a) {
  const auto i = describe(a.string(1));
  Value v = Value::table().set("arch", i.config.model_type).set("n_layers", i.config.n_layers).set("dtypes", i.dtypes);
  v.set("embeddings", i.embeddings).set("attention", i.attention).set("mlp", i.mlp).set("norms", i.norms);
  v.set("head", i.head).set("other", i.other).set("parameters", i.parameters);
  return {v.set("bytes_on_disk", i.bytes_on_disk).set("summary", i.to_string())};
}

// ---- lt.tokenizer -------------------------------------------------------------------------

const text::Tokenizer& tok_arg(const Args& a) { return a.object<text::Tokenizer>(1, "lt.Tokenizer", "a tokenizer"); }
const ApiDoc& kEncode = declare_api(
    {"tokenizer:encode", "tok:encode(text[, opts]) → ids (also encode_batch(texts), encode_with_offsets(text) → ids, spans)",
     "token ids of a text", {{"special", "boolean", "add special tokens (default true)"}}});
bool add_special(const Args& a, int i) { return a.options(i).check(kEncode).boolean("special").value_or(true); }

List tok_load(const Args& a) { return {object(text::Tokenizer::load(a.string(1)))}; }
List encode(const Args& a) { return {tok_arg(a).encode(a.string(2), add_special(a, 3))}; }
List encode_batch(const Args& a) { return {tok_arg(a).encode_batch(strings_of(a[2], a.fn(), "texts"), add_special(a, 3))}; }

// → ids, spans: spans[i] = {first, last} such that text:sub(first, last) is token i's text
List encode_with_offsets(const Args& a) {
  const auto e = tok_arg(a).encode_with_offsets(a.string(2), add_special(a, 3));
  Value spans = Value::table();
  for (const auto& o : e.offsets) spans.push(std::vector<double>{double(o.begin + 1), double(o.end)});
  return {e.ids, spans};
}

const ApiDoc& kDecode = declare_api({"tokenizer:decode", "tok:decode(ids[, opts]) → text", "the text of token ids",
                                     {{"skip_special", "boolean", "leave special tokens out (default false)"}}});

List decode(const Args& a) {
  const text::Tokenizer& t = tok_arg(a);
  const bool skip = a.options(3).check(kDecode).boolean("skip_special").value_or(false);
  const auto ids = integers_of(a[2], a.fn(), "ids", 0, INT32_MAX);
  return {t.decode(std::vector<int32_t>(ids.begin(), ids.end()), skip)};
}

List token_to_id(const Args& a) {
  const auto id = tok_arg(a).token_to_id(a.string(2));
  return {id ? Value(*id) : Value()};
}

List id_to_token(const Args& a) { return {tok_arg(a).id_to_token(a.int_(2))}; }

const ApiDoc& kTokenizerFields = declare_api(
    {"lt.Tokenizer", "tok = m.tokenizer or lt.tokenizer.load(path); tok:encode(text)", "a tokenizer: its fields",
     {{"vocab_size", "integer", "number of tokens"},
      {"path", "string", "its tokenizer.json"},
      {"special_ids", "integers", "ids of its special tokens"}}});

List tok_index(const Args& a) {
  const text::Tokenizer& t = tok_arg(a);
  const std::string k = a.string(2);
  if (!kTokenizerFields.has(k)) return {Value()};
  if (k == "vocab_size") return {t.vocab_size()};
  if (k == "path") return {t.path()};
  if (k == "special_ids") return {t.special_ids()};
  return {Value()};
}

List tok_tostring(const Args& a) {
  const text::Tokenizer& t = tok_arg(a);
  return {fmt::format("tokenizer({}, vocab {})", t.path(), t.vocab_size())};
}

// lt.model.decode_ops(m, {batch = 1, prompt = 16, new_tokens = 8, cache = "dynamic" | "static"}) → {kernels =, dispatched =,
// top =, outside =, bytes =, by_name = {["aten::mm"] = ...}}: operators (and CPU tensor bytes allocated) per block per
// decode step of greedy generate (model/profile.h), a CPU proxy for a GPU decode step's kernel launches (and writes).
const ApiDoc& kDecodeOps = declare_api(
    {"lt.model.decode_ops", "lt.model.decode_ops(m[, opts]) → {kernels=, dispatched=, top=, outside=, bytes=, by_name=}",
     "operators and bytes allocated per block per greedy decode step (CPU proxies for GPU kernel launches and writes)",
     {{"batch", "integer", "rows (default 1)"},
      {"prompt", "integer", "prompt tokens (default 16)"},
      {"new_tokens", "integer", "decode steps measured (default 8, at least 2)"},
      {"cache", "string", "dynamic (default) | static: which decode path is counted"}}});

List decode_ops_fn(const Args& a) {
  const ModelHandle& h = model_arg(a, 1);
  const Options o = a.options(2).check(kDecodeOps);
  const DecodeOps d = decode_ops(*h.m, o.integer("batch", 1).value_or(1), o.integer("prompt", 1).value_or(16),
                                 int(o.integer("new_tokens", 2, INT32_MAX).value_or(8)),
                                 o.string("cache").value_or("dynamic"));
  Value by = Value::table();
  for (const auto& [name, n] : d.by_name) by.set(name, n);
  return {Value::table().set("kernels", d.kernels).set("dispatched", d.dispatched).set("top", d.top)
              .set("outside", d.outside).set("bytes", d.bytes).set("by_name", by)};
}

// lt.model.device_memory(device) → bytes the CUDA caching allocator holds in live tensors on
// that device (model/profile.h), or nil where that is not measured (a CPU device, a build
// without CUDA): scripts/gpu-check's smoke checks that generate calls leave none behind.
List device_memory_fn(const Args& a) {
  const int64_t b = device_allocated_bytes(parse_device(a.string(1)));
  return {b < 0 ? Value() : Value(b)};
}

// lt.model.trace({{"name", fn}, ...}, {out = "trace.json", device = false}) → {source =, events =,
// sections = {{name =, wall_s =, host = {launches =, kernel_s =, gap_s =, kernels = {{name =,
// count =, seconds =}, ...}}, device = (the same, with CUDA activity)}, ...}}: runs each
// section's function and writes a Chrome trace of all of them (model/profile.h).
const ApiDoc& kTrace = declare_api(
    {"lt.model.trace", "lt.model.trace({{name, fn}, ...}, opts) → {source=, events=, sections=}",
     "runs each section's function and writes a Chrome trace of their operators (and CUDA kernels)",
     {{"out", "string", "the trace file to write (required)"},
      {"device", "boolean", "also record the device's activity where the LibTorch has Kineto (default false)"}}});

List trace_fn(const Args& a) {
  const Value& s = a[1];
  if (!s.is_table() || s.size() == 0) fail("{}: argument 1: expected a list of {{name, function}}, got {}", a.fn(), s.type_name());
  std::vector<std::pair<std::string, std::function<void()>>> sections;
  for (size_t i = 1; i <= s.size(); ++i) {
    const Value& e = s[double(i)];
    if (!e.is_table() || !e[1.0].is_string() || !e[2.0].is_function())
      fail("{}: section {}: expected {{name, function}}", a.fn(), i);
    const std::string name = e[1.0].str();
    const Value f = e[2.0];
    sections.emplace_back(name, [f, name] { call(f, "section '" + name + "'", {}); });
  }
  const Options o = a.options(2).check(kTrace);
  const auto out = o.string("out");
  LT_CHECK(out && !out->empty(), "{}: option out (the trace file to write) is required", a.fn());
  const TraceResult r = trace(sections, *out, o.boolean("device").value_or(false));
  auto timeline = [](const TraceTimeline& t) {
    Value ks = Value::table();
    for (const TraceKernel& k : t.kernels)
      ks.push(Value::table().set("name", k.name).set("count", k.count).set("seconds", k.seconds));
    return Value::table().set("launches", t.launches).set("kernel_s", t.kernel_s).set("gap_s", t.gap_s)
        .set("kernels", ks);
  };
  Value secs = Value::table();
  for (const TraceSection& sec : r.sections) {
    Value x = Value::table().set("name", sec.name).set("wall_s", sec.wall_s).set("host", timeline(sec.host));
    if (sec.has_device) x.set("device", timeline(sec.device));
    secs.push(x);
  }
  return {Value::table().set("source", r.source).set("events", r.events).set("sections", secs)};
}

}  // namespace

const std::vector<ScriptFunction>& script_functions() {
  static const std::vector<ScriptFunction> fs = {
      {"lt.model.load", load}, {"lt.model.new", new_fn}, {"lt.model.hybrid", hybrid}, {"lt.model.info", info},
      {"lt.model.decode_ops", decode_ops_fn}, {"lt.model.trace", trace_fn},
      {"lt.model.device_memory", device_memory_fn}};
  return fs;
}

const ScriptClass& model_class(const std::vector<ScriptFunction>& more) {
  static const ScriptClass c = [&] {
    ScriptClass k{"lt.Model",
                  {{"model:forward", forward}, {"model:lens", lens}, {"model:generate", generate_fn},
                   {"model:clone", clone}, {"model:save", save}, {"model:parameters", parameters},
                   {"model:n_params", n_params}, {"model:to", to}, {"model:free", free_fn},
                   {"model:layer", layer}, {"model:parts", parts}},
                  {"model", index},
                  {"tostring", tostring}};
    k.methods.insert(k.methods.end(), more.begin(), more.end());
    return k;
  }();
  return c;
}

const std::vector<ScriptFunction>& tokenizer_functions() {
  static const std::vector<ScriptFunction> fs = {{"lt.tokenizer.load", tok_load}};
  return fs;
}

const ScriptClass& tokenizer_class() {
  static const ScriptClass c{"lt.Tokenizer",
                             {{"tokenizer:encode", encode}, {"tokenizer:encode_batch", encode_batch},
                              {"tokenizer:encode_with_offsets", encode_with_offsets}, {"tokenizer:decode", decode},
                              {"tokenizer:token_to_id", token_to_id}, {"tokenizer:id_to_token", id_to_token}},
                             {"tokenizer", tok_index},
                             {"tostring", tok_tostring}};
  return c;
}

}  // namespace ltrun::model
