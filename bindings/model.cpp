// bindings/model.cpp: lt.model (load, new, hybrid, info) and the lt.Model userdata: forward with
// capture / resume / intervene / logits-where-asked, lens, generate (strings or ids),
// clone, save, parameters, to. Residual indices follow the runtime's convention:
// out.hidden[0] = embeddings, out.hidden[l+1] = residual after block l (0-based keys).
// Hook sites inside a block (model.h: mixer_out, resid_mid, mlp_out, resid_post):
//   capture = "mlp_out" | {"mixer_out", "mlp_out"}  -> out.sites.mlp_out[l] (0-based l)
//   intervene = { [l] = iv (after block l), mlp_out = { [l] = iv }, ... }
//   m:layer(l) -> {kind = "decoder" | "mamba" | ..., sites = {"mixer_out", ...}}
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>
#include <new>

#include "bindings/json.h"
#include "bindings/luat.h"
#include "bindings/model.h"
#include "bindings/tensor.h"
#include "bindings/tokenizer.h"
#include "runtime/train/script.h"
#include "runtime/core/device.h"
#include "runtime/model/create.h"
#include "runtime/model/generate.h"
#include "runtime/model/assemble.h"
#include "runtime/model/info.h"
#include "runtime/model/model.h"

namespace ltrun::lua {
namespace {

const char kMeta[] = "lt.Model";
using Box = ModelHandle;

void push_model(lua_State* L, Box b) {
  new (lua_newuserdata(L, sizeof(Box))) Box(std::move(b));
  luaL_getmetatable(L, kMeta);
  lua_setmetatable(L, -2);
}

Box& check_box(lua_State* L, int idx, const char* fn) {
  auto* b = static_cast<Box*>(luaL_testudata(L, idx, kMeta));
  if (!b) fail("{}: argument {}: expected a model, got {}", fn, idx, type_name(L, idx));
  if (!b->m) fail("{}: the model was freed (m:free())", fn);
  return *b;
}

// Rows of token ids: a tensor [T] or [B, T], {ids...}, or {{ids...}, ...}.
std::vector<std::vector<int64_t>> read_id_rows(lua_State* L, int idx, const char* fn) {
  std::vector<std::vector<int64_t>> rows;
  if (is_tensor(L, idx)) {
    at::Tensor t = check_tensor(L, idx, fn).to(at::kCPU, at::kLong).contiguous();
    if (t.dim() == 1) t = t.unsqueeze(0);
    LT_CHECK(t.dim() == 2 && t.size(1) > 0, "{}: token ids must be [T] or [B, T]", fn);
    for (int64_t r = 0; r < t.size(0); r++)
      rows.emplace_back(t[r].data_ptr<int64_t>(), t[r].data_ptr<int64_t>() + t.size(1));
    return rows;
  }
  check_table(L, idx, fn);
  const int n = int(lua_objlen(L, idx));
  LT_CHECK(n > 0, "{}: no token ids given", fn);
  lua_rawgeti(L, idx, 1);
  const bool nested = lua_istable(L, -1);
  lua_pop(L, 1);
  auto read_row = [&](int t) {
    std::vector<int64_t> r = read_integers(L, t, fn, "token ids", 0, INT32_MAX);
    LT_CHECK(!r.empty(), "{}: an empty row of token ids", fn);
    return r;
  };
  if (!nested) {
    rows.push_back(read_row(abs_index(L, idx)));
  } else {
    for (int i = 1; i <= n; i++) {
      lua_rawgeti(L, idx, i);
      check_table(L, lua_gettop(L), fn);
      rows.push_back(read_row(lua_gettop(L)));
      lua_pop(L, 1);
    }
  }
  return rows;
}

// ids as one batch: a tensor as given; rows of different lengths left-padded, with the mask
// returned through `mask`.
at::Tensor read_ids(lua_State* L, int idx, const char* fn, int64_t pad, at::Tensor* mask) {
  if (is_tensor(L, idx)) {
    at::Tensor t = check_tensor(L, idx, fn).to(at::kLong);
    return t.dim() == 1 ? t.unsqueeze(0) : t;
  }
  const auto rows = read_id_rows(L, idx, fn);
  model::Padded p = model::left_pad(rows, pad);
  bool padded = false;
  for (const auto& r : rows) padded |= r.size() != rows.front().size();
  if (padded && mask) *mask = p.mask;
  return p.ids;
}

// Lua functions referenced from C++ for the length of one forward pass
using Refs = std::vector<std::unique_ptr<LuaRef>>;

model::Intervention read_intervention(lua_State* L, int v, int layer, const at::Tensor& like, Refs& refs) {
  const char* fn = "model:forward";
  if (lua_isfunction(L, v)) {
    refs.push_back(std::make_unique<LuaRef>(L, v, fn, "intervene"));
    // Runs inside the forward pass: Lua errors come back as C++ exceptions, so they unwind
    // the C++ frames normally and the binding trampoline turns them into Lua errors again.
    auto call = [L, f = refs.back().get()](int l, at::Tensor& h) {
      lua_rawgeti(L, LUA_REGISTRYINDEX, f->ref);
      push_tensor(L, h);
      lua_pushnumber(L, l);
      f->pcall(fmt::format("intervention after block {}", l), 2, 1);
      if (is_tensor(L, -1)) h = check_tensor(L, -1, "intervention");
      lua_pop(L, 1);
    };
    return model::Intervention::call(call);
  }
  check_table(L, v, fn);
  auto get = [&](const char* key) -> std::optional<at::Tensor> {
    lua_getfield(L, v, key);
    std::optional<at::Tensor> t;
    if (!lua_isnil(L, -1)) t = to_tensor(L, lua_gettop(L), fn, like.scalar_type()).to(like.device());
    lua_pop(L, 1);
    return t;
  };
  if (auto p = get("zero")) return model::Intervention::zero(p->scalar_type() == at::kBool ? *p : p->to(at::kLong));
  if (auto a = get("add")) return model::Intervention::add(*a);
  if (auto r = get("replace")) return model::Intervention::replace(*r);
  fail("{}: intervene[{}]: expected a function(h, layer) or {{zero=positions}}, {{add=t}}, {{replace=t}}", fn, layer);
}

void push_config(lua_State* L, const model::Config& c) {
  push_json(L, nlohmann::json::parse(c.json));
}

// ---- lt.model ---------------------------------------------------------------------------

int l_load(lua_State* L) {
  const std::string path = check_string(L, 1, "lt.model.load");
  check_options(L, 2, "lt.model.load", {"device", "dtype"});
  const std::string dev = opt_string(L, 2, "device", "lt.model.load").value_or(run_context(L).device);
  std::optional<c10::ScalarType> dtype;
  if (auto d = opt_string(L, 2, "dtype", "lt.model.load")) dtype = parse_dtype(*d);
  Box b;
  b.m = std::make_shared<model::Model>(model::Model::load(path, parse_device(dev), dtype));
  b.path = path;
  const auto dir = std::filesystem::is_directory(path) ? std::filesystem::path(path)
                                                        : std::filesystem::path(path).parent_path();
  if (std::filesystem::exists(dir / "tokenizer.json"))
    b.tok = std::make_shared<text::Tokenizer>(text::Tokenizer::load((dir / "tokenizer.json").string()));
  push_model(L, std::move(b));
  return 1;
}

// lt.model.new{out=DIR, arch=, layers=, hidden=, heads=, kv_heads=, intermediate=, vocab=,
//              corpus=PATH|{PATHS}, tokenizer=PATH, seed = (stream "model.init"), tie=, pattern="M*-",
//              chunk= (nemotron_h: the Mamba2 scan's chunk_size, 128)} → summary table
int l_new(lua_State* L) {
  const char* fn = "lt.model.new";
  check_table(L, 1, fn);
  check_options(L, 1, fn, field_keys(model::tiny_spec_fields(), field_keys(model::new_model_fields(), {"seed"})));
  model::NewModelSpec s;
  read_fields(L, 1, fn, s, model::new_model_fields());
  LT_CHECK(!s.out_dir.empty(), "{}: option out (the folder to write) is required", fn);
  read_fields(L, 1, fn, s.tiny, model::tiny_spec_fields());
  s.tiny.seed = opt_seed(L, 1, fn, "model.init");
  lua_createtable(L, 0, 4);
  set_fields(L, model::create_model_dir(s), model::new_model_result_fields());
  return 1;
}

// lt.model.hybrid{out=DIR, embed=DIR, head=DIR, seed = (stream "model.init"), native=true,
//   layers = { {from=DIR, layer=I} | {kind="mamba", like=DIR, config={...}, init="hf"}, ... }
//            | "DIR:0-3,DIR2:4-7,mamba@DIR2"} → {dir, arch, n_layers, parameters, dtype,
//   layer_types = {...}, fresh = {0-based layers}, copied = {{name=, donor=, donor_name=}, ...}}
// layers[i] of lt.model.hybrid: {from=DIR, layer=I} or {kind=, like=, init=, config=}
model::HybridLayerSpec read_hybrid_layer(lua_State* L, int e, const std::string& what) {
  LT_CHECK(lua_istable(L, e), "{}: expected a table {{from=DIR, layer=I}} or {{kind=KIND}}, got {}", what,
           type_name(L, e));
  model::HybridLayerSpec l;
  read_fields(L, e, what.c_str(), l, model::hybrid_layer_fields(), true, {"config"});
  LT_CHECK(l.from.empty() == (l.layer < 0), "{}: give both from and layer (a donor's layer), or kind", what);
  LT_CHECK(l.from.empty() || l.like.empty(), "{}: like is for fresh layers (kind=...), not with from", what);
  lua_getfield(L, e, "config");
  if (!lua_isnil(L, -1)) l.config = to_json(L, lua_gettop(L));
  lua_pop(L, 1);
  return l;
}

void push_hybrid_result(lua_State* L, const model::HybridResult& r) {
  lua_createtable(L, 0, 9);
  set_fields(L, r, model::hybrid_result_fields());
  set_array(L, "fresh", r.fresh_layers);
  push_records(L, r.copied, model::hybrid_copy_fields());
  lua_setfield(L, -2, "copied");
}

int l_hybrid(lua_State* L) {
  const char* fn = "lt.model.hybrid";
  check_table(L, 1, fn);
  model::HybridSpec s;
  read_fields(L, 1, fn, s, model::hybrid_fields(), true, {"seed", "layers"});
  LT_CHECK(!s.out_dir.empty(), "{}: option out (the folder to write) is required", fn);
  LT_CHECK(!s.embed.empty(), "{}: option embed (the embeddings' donor folder) is required", fn);
  s.seed = opt_seed(L, 1, fn, "model.init");
  lua_getfield(L, 1, "layers");
  const int t = lua_gettop(L);
  if (lua_type(L, t) == LUA_TSTRING) {
    s.layers = model::parse_hybrid_layers(lua_tostring(L, t));
  } else {
    LT_CHECK(lua_istable(L, t), "{}: option layers: expected a list of layer specs or a string, got {}", fn,
             type_name(L, t));
    for (int i = 1; i <= int(lua_objlen(L, t)); i++) {
      lua_rawgeti(L, t, i);
      s.layers.push_back(read_hybrid_layer(L, lua_gettop(L), fmt::format("{}: layers[{}]", fn, i)));
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  push_hybrid_result(L, model::assemble_hybrid(s));
  return 1;
}

int l_info(lua_State* L) {
  auto info = model::describe(check_string(L, 1, "lt.model.info"));
  lua_createtable(L, 0, 10);
  set_field(L, "arch", info.config.model_type);
  set_field(L, "n_layers", double(info.config.n_layers));
  set_field(L, "dtypes", info.dtypes);
  const std::pair<const char*, int64_t> parts[] = {
      {"embeddings", info.embeddings}, {"attention", info.attention}, {"mlp", info.mlp},
      {"norms", info.norms}, {"head", info.head}, {"other", info.other}, {"parameters", info.parameters}};
  for (auto& [k, v] : parts) set_field(L, k, double(v));
  set_field(L, "bytes_on_disk", double(info.bytes_on_disk));
  set_field(L, "summary", info.to_string());
  return 1;
}

// ---- lt.Model methods -----------------------------------------------------------------------

// Marks a handle busy for the length of a pass (m:free() and m:to() refuse meanwhile).
struct Running {
  Box& b;
  explicit Running(Box& box) : b(box) { b.running++; }
  ~Running() { b.running--; }
};

// capture = true | "site" | {"site", ...}
void read_capture(lua_State* L, int opts, model::ForwardOptions& o, const char* fn) {
  lua_getfield(L, opts, "capture");
  const int c = lua_gettop(L);
  if (lua_type(L, c) == LUA_TBOOLEAN) o.capture = lua_toboolean(L, c);
  else if (lua_type(L, c) == LUA_TSTRING || lua_istable(L, c))
    for (const std::string& site : opt_strings(L, opts, "capture", fn)) o.capture_sites.push_back(model::parse_site(site));
  else if (!lua_isnil(L, c))
    fail("{}: capture must be true, a site name or a list of site names, found {}", fn, type_name(L, c));
  lua_pop(L, 1);
}

// logits = "all" | "last" | "none" | positions
void read_logits(lua_State* L, int opts, model::ForwardOptions& o, const model::Model& m, const char* fn) {
  lua_getfield(L, opts, "logits");
  if (lua_type(L, -1) == LUA_TSTRING) {
    const std::string w = lua_tostring(L, -1);
    if (w == "all") o.logits = model::Logits::All;
    else if (w == "last") o.logits = model::Logits::Last;
    else if (w == "none") o.logits = model::Logits::None;
    else fail("{}: logits = '{}': expected \"all\", \"last\", \"none\" or positions", fn, w);
  } else if (!lua_isnil(L, -1)) {
    o.logits = model::Logits::Positions;
    o.logit_positions = to_tensor(L, lua_gettop(L), fn, at::kLong).to(at::kLong).to(m.device());
  }
  lua_pop(L, 1);
}

// intervene = { [layer] = iv, SITE = { [layer] = iv } } (the table at t)
void read_interventions(lua_State* L, int t, model::ForwardOptions& o, const model::Model& m, Refs& refs,
                        const char* fn) {
  check_table(L, t, fn);
  const at::Tensor like = at::empty({0}, at::TensorOptions().dtype(m.dtype()).device(m.device()));
  auto read_layers = [&](int st, model::Site site, const std::string& what, int lo) {
    lua_pushnil(L);
    while (lua_next(L, st)) {
      if (lua_type(L, -2) != LUA_TNUMBER) fail("{}: {} keys are layer numbers", fn, what);
      const int layer = int(to_integer(L, -2, fmt::format("{}: {} key (a layer)", fn, what), lo, m.n_layers() - 1));
      o.intervene[model::HookPoint{layer, site}] = read_intervention(L, lua_gettop(L), layer, like, refs);
      lua_pop(L, 1);
    }
  };
  lua_pushnil(L);
  while (lua_next(L, t)) {
    if (lua_type(L, -2) == LUA_TSTRING) {  // a site: { [layer] = intervention }
      const model::Site site = model::parse_site(lua_tostring(L, -2));
      check_table(L, lua_gettop(L), fn);
      read_layers(lua_gettop(L), site, fmt::format("intervene.{}", model::site_name(site)),
                  site == model::Site::ResidPost ? -1 : 0);
    } else if (lua_type(L, -2) == LUA_TNUMBER) {
      const int layer = int(to_integer(L, -2, fmt::format("{}: intervene key (a layer)", fn), -1, m.n_layers() - 1));
      o.intervene[layer] = read_intervention(L, lua_gettop(L), layer, like, refs);
    } else {
      fail("{}: intervene keys are layer numbers or site names", fn);
    }
    lua_pop(L, 1);
  }
}

void push_forward_result(lua_State* L, const model::ForwardResult& r, const model::ForwardOptions& o,
                         const at::Tensor& mask) {
  lua_createtable(L, 0, 3);
  if (r.logits.defined()) set_tensor(L, "logits", r.logits);
  if (r.residual.defined()) set_tensor(L, "residual", r.residual);
  if (o.capture) {  // hidden[i]: 0-based keys, 0 = the embeddings
    lua_createtable(L, int(r.hidden.size()), 1);
    for (size_t i = 0; i < r.hidden.size(); i++) {
      if (!r.hidden[i].defined()) continue;
      push_tensor(L, r.hidden[i]);
      lua_rawseti(L, -2, int(i));
    }
    lua_setfield(L, -2, "hidden");
  }
  if (!o.capture_sites.empty()) {
    lua_createtable(L, 0, int(o.capture_sites.size()));
    for (model::Site site : o.capture_sites) {
      lua_createtable(L, int(r.sites.size()), 0);
      for (const auto& [point, t] : r.sites) {
        if (point.site != site) continue;
        push_tensor(L, t);
        lua_rawseti(L, -2, point.layer);
      }
      lua_setfield(L, -2, model::site_name(site));
    }
    lua_setfield(L, -2, "sites");
  }
  if (mask.defined()) set_tensor(L, "attention_mask", mask);
}

// m:forward(ids, {attention_mask=, capture=, from_layer=, to_layer=, hidden=, logits=, intervene=})
int m_forward(lua_State* L) {
  const char* fn = "model:forward";
  Box& b = check_box(L, 1, fn);
  // intervene callbacks run Lua in the middle of the pass: the pass holds its own reference
  // to the model (so nothing it uses can go away under it) and marks the handle running.
  const std::shared_ptr<model::Model> keep = b.m;
  Running running(b);
  const model::Model& m = *keep;
  model::ForwardOptions o;
  Refs refs;
  at::Tensor mask, ids;
  if (!lua_isnil(L, 2)) ids = read_ids(L, 2, fn, model::pad_token(m.config()), &mask).to(m.device());
  const int opts = 3;
  check_options(L, opts, fn, {"attention_mask", "capture", "from_layer", "to_layer", "hidden", "logits", "intervene"});
  if (lua_istable(L, opts)) {
    lua_getfield(L, opts, "attention_mask");
    if (!lua_isnil(L, -1)) mask = to_tensor(L, lua_gettop(L), fn, at::kLong).to(at::kLong);
    lua_getfield(L, opts, "hidden");
    if (!lua_isnil(L, -1)) o.hidden = check_tensor(L, lua_gettop(L), fn).to(m.device());
    lua_getfield(L, opts, "intervene");
    if (!lua_isnil(L, -1)) read_interventions(L, lua_gettop(L), o, m, refs, fn);
    lua_pop(L, 3);
    read_capture(L, opts, o, fn);
    read_logits(L, opts, o, m, fn);
    o.from_layer = opt_int(L, opts, "from_layer", fn).value_or(0);
    o.to_layer = opt_int(L, opts, "to_layer", fn).value_or(-1);
  }
  if (mask.defined()) o.attention_mask = mask.to(m.device());
  push_forward_result(L, m.forward(ids, o), o, mask);
  return 1;
}

// m:layer(l) → {kind = "decoder" | "mamba" | "attention" | "mlp", sites = {"mixer_out", ...}}
int m_layer(lua_State* L) {
  Box& b = check_box(L, 1, "model:layer");
  const int64_t l = check_integer(L, 2, "model:layer");
  LT_CHECK(l >= 0 && l < b.m->n_layers(), "model:layer: layer {} out of range 0..{}", l, b.m->n_layers() - 1);
  lua_createtable(L, 0, 2);
  set_field(L, "kind", b.m->layer_kind(int(l)));
  std::vector<std::string> sites;
  for (model::Site site : b.m->layer_sites(int(l))) sites.emplace_back(model::site_name(site));
  set_array(L, "sites", sites);
  return 1;
}

// m:parts([layer]) → {name = "embeddings" | "mixer" | "mlp" | "norm" | "head"}
int m_parts(lua_State* L) {
  Box& b = check_box(L, 1, "model:parts");
  std::vector<model::Param> ps;
  if (lua_isnoneornil(L, 2)) ps = b.m->parameters();
  else {
    const int64_t l = check_integer(L, 2, "model:parts");
    LT_CHECK(l >= 0 && l < b.m->n_layers(), "model:parts: layer {} out of range 0..{}", l, b.m->n_layers() - 1);
    ps = b.m->parameters(int(l));
  }
  lua_createtable(L, 0, int(ps.size()));
  for (const auto& p : ps) {
    push(L, std::string(model::part_name(p.part)));
    lua_setfield(L, -2, p.name.c_str());
  }
  return 1;
}

int m_lens(lua_State* L) {
  Box& b = check_box(L, 1, "model:lens");
  push_tensor(L, b.m->lens(check_tensor(L, 2, "model:lens").to(b.m->device())));
  return 1;
}

// Prompts for m:generate: a string, a list of strings, a list of ids, or a list of id lists.
struct GenPrompts {
  std::vector<std::vector<int64_t>> ids;
  bool strings = false, single = false;  // single: one prompt given bare (a string or one id list)
};

const text::Tokenizer& need_tokenizer(const Box& b, const char* fn) {
  if (!b.tok) fail("{}: {} has no tokenizer.json: pass token ids instead of text", fn, b.path);
  return *b.tok;
}

GenPrompts read_gen_prompts(lua_State* L, const Box& b, bool special, const char* fn) {
  GenPrompts p;
  auto encode = [&](const std::string& s) {
    const auto ids = need_tokenizer(b, fn).encode(s, special);
    p.ids.emplace_back(ids.begin(), ids.end());
  };
  if (lua_type(L, 2) == LUA_TSTRING) {
    p.strings = p.single = true;
    encode(lua_tostring(L, 2));
    return p;
  }
  check_table(L, 2, fn);
  lua_rawgeti(L, 2, 1);
  const int kind = lua_type(L, -1);
  lua_pop(L, 1);
  if (kind == LUA_TSTRING) {
    p.strings = true;
    for (const std::string& s : read_strings(L, 2, fn, "prompts")) encode(s);
  } else {
    p.single = kind == LUA_TNUMBER;
    p.ids = read_id_rows(L, 2, fn);
  }
  return p;
}

model::GenerateOptions read_generate_options(lua_State* L, int opts, const char* fn) {
  // intervene belongs to m:forward: generation's decode steps run with a cache that
  // m:forward's interventions do not reach, so it is refused rather than ignored
  if (lua_istable(L, opts)) {
    lua_getfield(L, opts, "intervene");
    const bool has = !lua_isnil(L, -1);
    lua_pop(L, 1);
    LT_CHECK(!has, "{}: option intervene is not supported by generate (it would not reach the decode "
             "steps); intervene with m:forward and pick tokens from its logits", fn);
  }
  check_options(L, opts, fn, {"special", "max_new_tokens", "temperature", "top_k", "top_p", "seed", "stop", "stop_ids"});
  model::GenerateOptions g;
  g.max_new_tokens = opt_int(L, opts, "max_new_tokens", fn, 0).value_or(g.max_new_tokens);
  g.temperature = opt_number(L, opts, "temperature", fn).value_or(g.temperature);
  g.top_k = opt_integer(L, opts, "top_k", fn, 0).value_or(g.top_k);
  g.top_p = opt_number(L, opts, "top_p", fn).value_or(g.top_p);
  g.seed = opt_seed(L, opts, fn, "generate");
  if (lua_istable(L, opts)) {
    lua_getfield(L, opts, "stop_ids");
    if (!lua_isnil(L, -1)) g.stop_ids = read_integers(L, lua_gettop(L), fn, "stop_ids", 0, INT32_MAX);
    lua_pop(L, 1);
  }
  return g;
}

// m:generate(prompts, {max_new_tokens=, temperature=, top_k=, top_p=, seed = (stream
// "generate"), stop=, stop_ids=, special=}). Strings give strings back (cut before a stop
// string), ids give ids; the second result holds per prompt {ids=, finish="stop_id"|"stop"|"length"}.
int m_generate(lua_State* L) {
  const char* fn = "model:generate";
  Box& b = check_box(L, 1, fn);
  model::GenerateOptions g = read_generate_options(L, 3, fn);
  const GenPrompts p = read_gen_prompts(L, b, opt_bool(L, 3, "special", fn).value_or(true), fn);
  const std::vector<std::string> stops = opt_strings(L, 3, "stop", fn);
  if (!stops.empty()) g.stop = model::stop_strings(need_tokenizer(b, fn), stops);
  const auto gens = model::generate(*b.m, p.ids, g);
  auto push_result = [&](const model::Generation& gen) {
    if (p.strings) push(L, model::cut_at_stops(need_tokenizer(b, fn), gen.tokens, stops));
    else push_array(L, gen.tokens);
  };
  if (p.single) push_result(gens[0]);
  else push_list(L, gens, push_result);
  push_list(L, gens, [L](const model::Generation& gen) {
    lua_createtable(L, 0, 2);
    set_array(L, "ids", gen.tokens);
    set_field(L, "finish", gen.finish);
  });
  return 2;
}

int m_clone(lua_State* L) {
  Box& b = check_box(L, 1, "model:clone");
  Box c = b;
  c.m = std::make_shared<model::Model>(b.m->clone());
  push_model(L, std::move(c));
  return 1;
}

int m_save(lua_State* L) {
  Box& b = check_box(L, 1, "model:save");
  const std::string dir = check_string(L, 2, "model:save");
  std::filesystem::create_directories(dir);
  b.m->save(dir);
  if (b.tok) {
    const auto dst = std::filesystem::path(dir) / "tokenizer.json";
    if (std::filesystem::absolute(b.tok->path()) != std::filesystem::absolute(dst))
      std::filesystem::copy_file(b.tok->path(), dst, std::filesystem::copy_options::overwrite_existing);
  }
  return 0;
}

// m:parameters([layer]) → {name = tensor} sharing storage with the model
int m_parameters(lua_State* L) {
  Box& b = check_box(L, 1, "model:parameters");
  std::vector<model::Param> ps;
  if (lua_isnoneornil(L, 2)) ps = b.m->parameters();
  else {
    const int64_t l = check_integer(L, 2, "model:parameters");
    LT_CHECK(l >= 0 && l < b.m->n_layers(), "model:parameters: layer {} out of range 0..{}", l,
             b.m->n_layers() - 1);
    ps = b.m->parameters(int(l));
  }
  lua_createtable(L, 0, int(ps.size()));
  for (const auto& p : ps) {
    push_tensor(L, p.tensor);
    lua_setfield(L, -2, p.name.c_str());
  }
  return 1;
}

int m_n_params(lua_State* L) {
  Box& b = check_box(L, 1, "model:n_params");
  int64_t n = 0;
  for (const auto& p : b.m->parameters()) n += p.tensor.numel();
  lua_pushnumber(L, double(n));
  return 1;
}

int m_to(lua_State* L) {
  Box& b = check_box(L, 1, "model:to");
  if (b.running) fail("model:to: the model is inside its own forward pass (an intervene callback); move it after the pass returns");
  const std::string dev = check_string(L, 2, "model:to");
  std::optional<c10::ScalarType> dtype;
  if (lua_type(L, 3) == LUA_TSTRING) dtype = parse_dtype(lua_tostring(L, 3));
  b.m->to(parse_device(dev), dtype);
  lua_settop(L, 1);
  return 1;
}

int m_free(lua_State* L) {
  auto* b = static_cast<Box*>(luaL_testudata(L, 1, kMeta));
  if (!b) fail("model:free: argument 1: expected a model, got {}", type_name(L, 1));
  if (b->running) fail("model:free: the model is inside its own forward pass (an intervene callback); free it after the pass returns");
  b->m.reset();
  return 0;
}

int m_index(lua_State* L) {
  lua_pushvalue(L, 2);
  lua_rawget(L, lua_upvalueindex(1));
  if (!lua_isnil(L, -1)) return 1;
  lua_pop(L, 1);
  Box& b = check_box(L, 1, "model");
  const std::string k = check_string(L, 2, "model");
  if (k == "n_layers") lua_pushnumber(L, b.m->n_layers());
  else if (k == "config") push_config(L, b.m->config());
  else if (k == "arch") push(L, b.m->config().model_type);
  else if (k == "device") push(L, b.m->device().str());
  else if (k == "dtype") push(L, dtype_name(b.m->dtype()));
  else if (k == "path") push(L, b.path);
  else if (k == "tokenizer") {
    if (b.tok) push_tokenizer(L, *b.tok); else lua_pushnil(L);
  } else lua_pushnil(L);
  return 1;
}

int m_gc(lua_State* L) {
  static_cast<Box*>(lua_touserdata(L, 1))->~Box();
  return 0;
}

int m_tostring(lua_State* L) {
  auto* b = static_cast<Box*>(luaL_checkudata(L, 1, kMeta));
  if (!b->m) {
    lua_pushstring(L, "model(<freed>)");
    return 1;
  }
  const auto& c = b->m->config();
  push(L, fmt::format("model({}, {} layers, hidden {}, vocab {}, {}, {})", c.model_type, c.n_layers,
                      c.hidden_size, c.vocab_size, dtype_name(b->m->dtype()), b->m->device().str()));
  return 1;
}

}  // namespace

const ModelHandle& check_model(lua_State* L, int idx, const char* fn) { return check_box(L, idx, fn); }

void register_model(lua_State* L) {
  static const luaL_Reg methods[] = {
      {"forward", LT_FN(m_forward)}, {"lens", LT_FN(m_lens)}, {"generate", LT_FN(m_generate)},
      {"clone", LT_FN(m_clone)}, {"save", LT_FN(m_save)}, {"parameters", LT_FN(m_parameters)},
      {"n_params", LT_FN(m_n_params)}, {"to", LT_FN(m_to)}, {"free", LT_FN(m_free)},
      {"layer", LT_FN(m_layer)}, {"parts", LT_FN(m_parts)}, {nullptr, nullptr}};
  new_class(L, kMeta, methods, LT_FN(m_index), m_gc, LT_FN(m_tostring), train::model_methods());
  register_unbox(kMeta, [](lua_State* L, int idx) {  // the userdata outlives the call it is passed to
    return std::shared_ptr<void>(luaL_testudata(L, idx, kMeta), [](void*) {});
  });
  new_module(L, "model");
  static const luaL_Reg fns[] = {{"load", LT_FN(l_load)}, {"new", LT_FN(l_new)}, {"hybrid", LT_FN(l_hybrid)},
                                 {"info", LT_FN(l_info)},
                                 {nullptr, nullptr}};
  set_funcs(L, fns);
  lua_pop(L, 1);
}

}  // namespace ltrun::lua
