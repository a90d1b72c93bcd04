// runtime/model/model.cpp: the generic layer loop: parameters under their HF names (from the
// architecture's layers), checkpoint loading with checks, the layer-addressable forward pass
// with hook sites, decode state, save, clone, conversion. Nothing here knows a layer kind.
#include "runtime/model/model.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/record_function.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "runtime/core/device.h"
#include "runtime/core/error.h"
#include "runtime/core/inputs.h"
#include "runtime/io/atomic_file.h"
#include "runtime/io/checkpoint.h"
#include "runtime/model/arch.h"
#include "runtime/model/blocks.h"
#include "runtime/model/profile.h"

namespace ltrun::model {

const char* site_name(Site s) {
  switch (s) {
    case Site::ResidPost: return "resid_post";
    case Site::ResidMid: return "resid_mid";
    case Site::MixerOut: return "mixer_out";
    case Site::MlpOut: return "mlp_out";
  }
  return "?";
}

Site parse_site(const std::string& name) {
  for (Site s : {Site::ResidPost, Site::ResidMid, Site::MixerOut, Site::MlpOut})
    if (name == site_name(s)) return s;
  fail("unknown hook site \"{}\" (known: resid_post, resid_mid, mixer_out, mlp_out)", name);
}

const char* part_name(ParamPart p) {
  switch (p) {
    case ParamPart::Embeddings: return "embeddings";
    case ParamPart::Mixer: return "mixer";
    case ParamPart::Mlp: return "mlp";
    case ParamPart::Norm: return "norm";
    case ParamPart::Head: return "head";
  }
  return "?";
}

DecodeState::DecodeState(int64_t capacity_hint) : capacity_hint_(capacity_hint) {}
DecodeState::~DecodeState() = default;
DecodeState::DecodeState(DecodeState&&) noexcept = default;
DecodeState& DecodeState::operator=(DecodeState&&) noexcept = default;
void LayerState::select_rows(const at::Tensor&) {
  fail("decode state: this layer kind cannot select rows");
}

void DecodeState::select_rows(const at::Tensor& rows) {
  LT_CHECK(batch_ > 0 && !layers_.empty(), "DecodeState::select_rows: the state has not run yet");
  LT_CHECK(rows.dim() == 1 && rows.scalar_type() == at::kLong && rows.numel() > 0,
           "DecodeState::select_rows: rows must be a non-empty int64 [R]");
  const at::Tensor r = rows.to(at::kCPU);
  const int64_t lo = r.min().item<int64_t>(), hi = r.max().item<int64_t>();
  LT_CHECK(lo >= 0 && hi < batch_, "DecodeState::select_rows: row {} outside 0..{}", lo < 0 ? lo : hi,
           batch_ - 1);
  for (auto& l : layers_)
    if (l) l->select_rows(rows);
  batch_ = rows.numel();
}

void LayerState::append_rows(const LayerState&, int64_t, int64_t, int64_t) {
  fail("decode state: this layer kind cannot take new rows into a running batch");
}

void LayerState::cat_rows(const std::vector<const LayerState*>&) {
  fail("decode state: this layer kind cannot join the rows of several states");
}

void DecodeState::append_rows(const DecodeState& other, int64_t width) {
  LT_CHECK(batch_ > 0 && other.batch_ > 0, "DecodeState::append_rows: both states must have run (batches {} and {})",
           batch_, other.batch_);
  LT_CHECK(from_layer_ == other.from_layer_ && layers_.size() == other.layers_.size(),
           "DecodeState::append_rows: the states hold blocks {}.. of {} and {}.. of {} layers", from_layer_,
           layers_.size(), other.from_layer_, other.layers_.size());
  LT_CHECK(width >= other.length_ && width > 0,
           "DecodeState::append_rows: width {} is shorter than the new rows' {} positions", width, other.length_);
  for (size_t l = 0; l < layers_.size(); ++l) {
    LT_CHECK(bool(layers_[l]) == bool(other.layers_[l]), "DecodeState::append_rows: layer {} differs in kind", l);
    if (layers_[l]) layers_[l]->append_rows(*other.layers_[l], length_, other.length_, width);
  }
  length_ = width;
  batch_ += other.batch_;
}

void DecodeState::clear() {
  layers_.clear();
  length_ = 0;
  batch_ = -1;
  from_layer_ = 0;
}

namespace {

std::string safetensors_dtype(c10::ScalarType t) {
  switch (t) {
    case c10::kFloat: return "F32";
    case c10::kBFloat16: return "BF16";
    case c10::kHalf: return "F16";
    case c10::kDouble: return "F64";
    default: fail("model weights cannot be {}", dtype_name(t));
  }
}

std::string shape(at::IntArrayRef s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

// Buffers some checkpoints carry that are recomputed from the config, never loaded.
bool derived_buffer(const std::string& name) {
  const std::string suffix = "rotary_emb.inv_freq";
  return name.size() >= suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A tensor of the model with what the generic code needs to know about it.
struct Entry {
  std::string name;
  std::vector<int64_t> shape;
  ParamPart part;
  Init init;
  bool decay;
  int layer;
  at::Tensor* tensor;
};

}  // namespace

struct Model::Impl {
  Config config;
  const Arch* arch;
  RopeFreqs rope;
  c10::Device device = c10::kCPU;
  c10::ScalarType dtype = c10::kFloat;
  at::Tensor embed, norm, lm_head;  // lm_head undefined when tied to embed
  std::vector<std::unique_ptr<Layer>> layers;

  explicit Impl(Config c) : config(std::move(c)), arch(&find_arch(config.model_type, "model")) {
    LT_CHECK(config.layer_types.size() == size_t(config.n_layers),
             "{}: {} layer kinds for {} layers", config.source, config.layer_types.size(),
             config.n_layers);
    if (config.rope)
      rope = rope_freqs(config.rope_scaling, config.rope_theta,
                        config.rotary_dim ? config.rotary_dim : config.head_dim,
                        config.max_position_embeddings);
    for (int l = 0; l < config.n_layers; ++l) layers.push_back(arch->make_layer(config, l));
  }

  const at::Tensor& head() const { return config.tie_word_embeddings ? embed : lm_head; }

  // The RoPE frequencies live with the weights, so a forward copies nothing to the device.
  void set_device(c10::Device d) {
    device = d;
    if (rope.inv_freq.defined()) rope.inv_freq = rope.inv_freq.to(d);
  }

  // The tensors of block `layer`, in HF's state_dict order.
  std::vector<Entry> block_entries(int layer) const {
    std::vector<Slot> slots;
    layers[layer]->slots(slots);
    const std::string p = fmt::format(fmt::runtime(arch->layer_prefix), layer);
    std::vector<Entry> out;
    for (Slot& s : slots)
      out.push_back({p + s.name, std::move(s.shape), s.part, s.init, s.decay, layer, s.tensor});
    return out;
  }

  // Every tensor, in checkpoint order; a tied head is not listed (it is embed).
  std::vector<Entry> entries() const {
    const Config& c = config;
    auto* self = const_cast<Impl*>(this);  // entries hand out tensor slots; const is the caller's
    std::vector<Entry> out;
    out.push_back({arch->embed_name, {c.vocab_size, c.hidden_size}, ParamPart::Embeddings,
                   Init::Normal, true, -1, &self->embed});
    for (int l = 0; l < c.n_layers; ++l)
      for (Entry& e : block_entries(l)) out.push_back(std::move(e));
    out.push_back({arch->norm_name, {c.hidden_size}, ParamPart::Norm,
                   c.norm_offset ? Init::Zeros : Init::Ones, false, -1, &self->norm});
    if (!c.tie_word_embeddings)
      out.push_back({arch->head_name, {c.vocab_size, c.hidden_size}, ParamPart::Head, Init::Normal,
                     true, -1, &self->lm_head});
    return out;
  }
};

// --- construction ------------------------------------------------------------------------

// Every model is made here (load, init, clone, assembly): lay out the fused weights once.
Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  for (auto& l : impl_->layers) l->fuse();
}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

Model Model::load(const std::string& dir, c10::Device device,
                  std::optional<c10::ScalarType> dtype) {
  Config c = read_config(dir);
  const io::Checkpoint ck = io::Checkpoint::open(dir);
  note_input("model", dir);  // recorded with the run (runtime/core/inputs.h)
  std::optional<c10::ScalarType> config_dtype;
  if (!c.torch_dtype.empty()) {
    try {
      config_dtype = parse_dtype(c.torch_dtype);
    } catch (const Error& e) {
      fail("{}: torch_dtype: {}", c.source, e.what());
    }
  }
  const std::string file_dtype = config_dtype ? safetensors_dtype(*config_dtype) : "";
  auto impl = std::make_unique<Impl>(std::move(c));
  impl->set_device(device);
  impl->dtype = dtype ? *dtype : device.is_cpu() ? c10::kFloat : config_dtype.value_or(c10::kFloat);
  const Config& cfg = impl->config;
  const Arch& arch = *impl->arch;
  std::set<std::string> used;
  for (const Entry& e : impl->entries()) {
    std::string name = e.name;  // the checkpoint's name for it (HF may have renamed it)
    if (!ck.has(name) && arch.aliases)
      for (const std::string& alt : arch.aliases(e.name))
        if (ck.has(alt)) {
          name = alt;
          break;
        }
    if (!ck.has(name))
      fail("{}: missing tensor {} (shape [{}] per {})", ck.path(), e.name, fmt::join(e.shape, ", "),
           cfg.source);
    const io::TensorInfo& info = ck.info(name);
    if (info.shape != e.shape)
      fail("{}: tensor {} has shape [{}], but {} implies [{}]", ck.file_of(name), name,
           fmt::join(info.shape, ", "), cfg.source, fmt::join(e.shape, ", "));
    if (!file_dtype.empty() && info.dtype != file_dtype)
      fail("{}: tensor {} is {}, but {} says torch_dtype {} ({})", ck.file_of(name), name,
           info.dtype, cfg.source, cfg.torch_dtype, file_dtype);
    // copy=true: the model owns its memory instead of viewing the file's mapping
    *e.tensor = ck.tensor(name).to(device, impl->dtype, /*non_blocking=*/false, /*copy=*/true);
    used.insert(name);
  }
  for (const std::string& name : ck.names()) {
    if (used.count(name) || derived_buffer(name) || (arch.ignore && arch.ignore(name))) continue;
    // HF also ignores a stored head when it ties it to the embeddings
    if (name == arch.head_name && cfg.tie_word_embeddings) continue;
    fail("{}: unexpected tensor {}: not part of a {} model with {} layers as {} describes it",
         ck.file_of(name), name, cfg.model_type, cfg.n_layers, cfg.source);
  }
  return Model(std::move(impl));
}

namespace {

// HF's dt_bias init: dt log-uniform in [dt_min, dt_max], floored, then softplus^-1(dt).
at::Tensor dt_bias_init(const Mamba2Config& m, int64_t n, at::Generator& gen) {
  const at::Tensor u = at::rand({n}, gen, at::kFloat);
  const at::Tensor dt =
      at::exp(u * (std::log(m.dt_max) - std::log(m.dt_min)) + std::log(m.dt_min)).clamp_min(m.dt_floor);
  return dt + at::log(-at::expm1(-dt));
}

}  // namespace

Model Model::init(const Config& config, uint64_t seed, c10::Device device, c10::ScalarType dtype) {
  auto impl = std::make_unique<Impl>(config);
  impl->set_device(device);
  impl->dtype = dtype;
  at::Generator gen = at::detail::createCPUGenerator(seed);
  for (const Entry& e : impl->entries()) {
    // drawn in fp32 on the CPU so that a seed gives the same model on every device
    at::Tensor x;
    switch (e.init) {
      case Init::Normal: x = at::normal(0.0, 0.02, e.shape, gen, at::kFloat); break;
      case Init::Ones: x = at::ones(e.shape, at::kFloat); break;
      case Init::Zeros: x = at::zeros(e.shape, at::kFloat); break;
      case Init::ALog: x = at::log(at::arange(1, e.shape[0] + 1, at::kFloat)); break;
      case Init::ALogUniform: x = at::log(at::empty(e.shape, at::kFloat).uniform_(0, 16, gen)); break;
      case Init::DtBias: x = dt_bias_init(config.mamba, e.shape[0], gen); break;
    }
    *e.tensor = x.to(device, dtype);
  }
  return Model(std::move(impl));
}

const Config& Model::config() const { return impl_->config; }
int Model::n_layers() const { return int(impl_->config.n_layers); }
c10::Device Model::device() const { return impl_->device; }
c10::ScalarType Model::dtype() const { return impl_->dtype; }

const std::string& Model::layer_kind(int layer) const {
  LT_CHECK(layer >= 0 && layer < n_layers(), "layer {} out of range (model has {} layers)", layer,
           n_layers());
  return impl_->layers[layer]->kind();
}

std::vector<Site> Model::layer_sites(int layer) const {
  LT_CHECK(layer >= 0 && layer < n_layers(), "layer {} out of range (model has {} layers)", layer,
           n_layers());
  std::vector<Site> s = impl_->layers[layer]->sites();
  s.push_back(Site::ResidPost);
  return s;
}

// --- parameters --------------------------------------------------------------------------

std::vector<Param> Model::parameters() const {
  std::vector<Param> out;
  for (const Entry& e : impl_->entries()) out.push_back({e.name, *e.tensor, e.layer, e.part, e.decay});
  return out;
}

std::vector<Param> Model::parameters(int layer) const {
  LT_CHECK(layer >= 0 && layer < n_layers(), "layer {} out of range (model has {} layers)", layer,
           n_layers());
  std::vector<Param> out;
  for (const Entry& e : impl_->block_entries(layer))
    out.push_back({e.name, *e.tensor, e.layer, e.part, e.decay});
  return out;
}

void Model::set_requires_grad(bool on) {
  for (Param& p : parameters()) p.tensor.set_requires_grad(on);
}

void Model::set_requires_grad(int layer, bool on) {
  for (Param& p : parameters(layer)) p.tensor.set_requires_grad(on);
}

Model Model::clone() const {
  auto impl = std::make_unique<Impl>(impl_->config);
  impl->set_device(impl_->device);
  impl->dtype = impl_->dtype;
  const std::vector<Entry> src = impl_->entries(), dst = impl->entries();
  for (size_t i = 0; i < src.size(); ++i) {
    const at::Tensor& s = *src[i].tensor;
    *dst[i].tensor = s.detach().clone();
    dst[i].tensor->set_requires_grad(s.requires_grad());
  }
  return Model(std::move(impl));
}

Model& Model::to(c10::Device device, std::optional<c10::ScalarType> dtype) {
  const c10::ScalarType target = dtype.value_or(impl_->dtype);
  for (const Entry& e : impl_->entries()) {
    at::Tensor& t = *e.tensor;
    const bool grad = t.requires_grad();
    t = t.detach().to(device, target);  // a new leaf, not a node hanging off the old tensor
    t.set_requires_grad(grad);
  }
  impl_->set_device(device);
  impl_->dtype = target;
  for (auto& l : impl_->layers) l->fuse();  // the converted tensors are separate again
  return *this;
}

void Model::save(const std::string& dir, uint64_t max_shard_bytes) const {
  namespace fs = std::filesystem;
  const Config& c = impl_->config;
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (const Entry& e : impl_->entries()) tensors.emplace_back(e.name, e.tensor->detach());
  io::save_checkpoint(dir, tensors, max_shard_bytes);
  // config.json as it was read (keys we do not interpret survive), with the dtype saved now
  nlohmann::json j = nlohmann::json::parse(c.json.empty() ? new_config_json(c) : c.json);
  j[j.contains("dtype") && !j.contains("torch_dtype") ? "dtype" : "torch_dtype"] =
      dtype_name(impl_->dtype);
  io::write_file_atomic((fs::path(dir) / "config.json").string(), j.dump(2) + "\n");
  io::write_file_atomic((fs::path(dir) / "generation_config.json").string(),
                        c.generation_json.empty() ? generation_config_json(c) : c.generation_json);
}

// --- forward -----------------------------------------------------------------------------

namespace {

std::string sites_list(const std::vector<Site>& s) {
  std::vector<std::string> n;
  for (Site x : s) n.emplace_back(site_name(x));
  return fmt::format("{}", fmt::join(n, ", "));
}

// "after layer 3" (resid_post) or "at mlp_out of layer 3", for messages
std::string where(const HookPoint& p) {
  return p.site == Site::ResidPost ? fmt::format("after layer {}", p.layer)
                                   : fmt::format("at {} of layer {}", site_name(p.site), p.layer);
}

at::Tensor intervene(const Intervention& iv, const HookPoint& at_point, at::Tensor h) {
  const int layer = at_point.layer;
  const std::string w = where(at_point);
  const int64_t B = h.size(0), T = h.size(1);
  switch (iv.kind) {
    case Intervention::Kind::Zero: {
      at::Tensor p = iv.tensor.to(h.device());
      if (p.scalar_type() == at::kBool) {
        LT_CHECK(
            (p.dim() == 1 && p.size(0) == T) || (p.dim() == 2 && p.size(0) == B && p.size(1) == T),
            "intervention {}: zero mask has shape {}, expected [{}] or [{}, {}]", w,
            shape(p.sizes()), T, B, T);
        return h.masked_fill((p.dim() == 1 ? p.unsqueeze(0) : p).unsqueeze(-1), 0);
      }
      LT_CHECK(p.dim() == 1 && at::isIntegralType(p.scalar_type(), false),
               "intervention {}: zero positions must be int64 [P] or bool [B, T], "
               "found {} {}",
               w, dtype_name(p.scalar_type()), shape(p.sizes()));
      p = p.to(at::kLong);
      p = at::where(p < 0, p + T, p);
      LT_CHECK(p.numel() == 0 || (p.min().item<int64_t>() >= 0 && p.max().item<int64_t>() < T),
               "intervention {}: zero positions out of range for {} tokens", w, T);
      return h.index_fill(1, p, 0);
    }
    case Intervention::Kind::Add: return h + iv.tensor.to(h.device(), h.scalar_type());
    case Intervention::Kind::Replace:
      LT_CHECK(iv.tensor.sizes() == h.sizes(),
               "intervention {}: replacement has shape {}, expected {}", w,
               shape(iv.tensor.sizes()), shape(h.sizes()));
      return iv.tensor.to(h.device(), h.scalar_type());
    case Intervention::Kind::Call: {
      const std::vector<int64_t> dims = h.sizes().vec();
      iv.fn(layer, h);
      LT_CHECK(h.defined() && h.sizes().vec() == dims,
               "intervention {}: the callback left a tensor of shape {}, expected {}",
               w, h.defined() ? shape(h.sizes()) : "none", shape(dims));
      return h;
    }
  }
  return h;
}

}  // namespace

ForwardResult Model::forward(const at::Tensor& input_ids, const ForwardOptions& o) const {
  const Impl& m = *impl_;
  const Config& c = m.config;
  const int L = n_layers();
  const int last = o.to_layer < 0 ? L - 1 : o.to_layer;
  LT_CHECK(o.from_layer >= 0 && o.from_layer <= L, "from_layer {} out of range 0..{}", o.from_layer,
           L);
  LT_CHECK(last < L && last >= o.from_layer - 1, "to_layer {} out of range {}..{}", o.to_layer,
           o.from_layer, L - 1);

  at::Tensor h;
  if (!o.hidden.defined()) {
    LT_CHECK(o.from_layer == 0,
             "forward from layer {}: needs `hidden`, the residual [batch, tokens, {}]",
             o.from_layer, c.hidden_size);
    LT_CHECK(input_ids.defined() && input_ids.dim() == 2 &&
                 at::isIntegralType(input_ids.scalar_type(), false),
             "forward: input_ids must be an integer tensor [batch, tokens], found {}",
             input_ids.defined()
                 ? dtype_name(input_ids.scalar_type()) + " " + shape(input_ids.sizes())
                 : "none");
    LT_CHECK(input_ids.numel() > 0, "forward: no tokens");
    const at::Tensor ids = input_ids.to(m.device, at::kLong);
    const int64_t lo = ids.min().item<int64_t>(), hi = ids.max().item<int64_t>();
    LT_CHECK(lo >= 0 && hi < c.vocab_size, "forward: token id {} outside the vocabulary 0..{}",
             lo < 0 ? lo : hi, c.vocab_size - 1);
    h = at::embedding(m.embed, ids);
  } else {
    LT_CHECK(o.hidden.dim() == 3 && o.hidden.size(2) == c.hidden_size,
             "forward from layer {}: `hidden` must be the residual [batch, tokens, {}], found {}",
             o.from_layer, c.hidden_size, shape(o.hidden.sizes()));
    h = o.hidden.to(m.device, m.dtype);
  }
  const int64_t B = h.size(0), T = h.size(1);

  DecodeState* state = o.state;
  int64_t past = 0;
  if (state) {
    LT_CHECK(last == L - 1 || !state->layers_.empty(),
             "forward: a new decode state runs to the last block (no to_layer)");
    if (last < L - 1)  // a state for blocks up to to_layer only (prefix_rows_at)
      for (int l = last + 1; l < int(state->layers_.size()); ++l)
        LT_CHECK(!state->layers_[size_t(l)],
                 "forward: the decode state holds block {}, after to_layer {}: it runs to the last block it holds",
                 l, last);
    if (state->layers_.empty()) {
      state->layers_.resize(L);
      for (int l = o.from_layer; l < L; ++l) state->layers_[l] = m.layers[l]->new_state();
      state->batch_ = B;
      state->from_layer_ = o.from_layer;
    }
    LT_CHECK(state->from_layer_ == o.from_layer,
             "forward: the decode state holds blocks {}.., this forward runs from block {}",
             state->from_layer_, o.from_layer);
    LT_CHECK(state->layers_.size() == size_t(L),
             "forward: the decode state holds {} layers, model has {}", state->layers_.size(), L);
    LT_CHECK(state->batch_ == B, "forward: the decode state has batch {}, input has {}",
             state->batch_, B);
    past = state->length_;
  }
  const int64_t S = past + T;

  at::Tensor key_mask;
  if (o.attention_mask.defined()) {
    LT_CHECK(o.attention_mask.dim() == 2 && o.attention_mask.size(0) == B &&
                 o.attention_mask.size(1) == S,
             "forward: attention_mask has shape {}, expected [{}, {}] (cached {} + new {} tokens)",
             shape(o.attention_mask.sizes()), B, S, past, T);
    key_mask = o.attention_mask.to(m.device).ne(0);
  }
  at::Tensor pos;
  if (o.position_ids.defined()) {
    LT_CHECK(
        o.position_ids.dim() == 2 && o.position_ids.size(0) == B && o.position_ids.size(1) == T,
        "forward: position_ids has shape {}, expected [{}, {}]", shape(o.position_ids.sizes()), B,
        T);
    pos = o.position_ids.to(m.device, at::kLong);
  } else if (key_mask.defined()) {
    pos = (key_mask.to(at::kLong).cumsum(-1) - 1)
              .masked_fill(key_mask.logical_not(), 1)
              .narrow(1, past, T);
  } else {
    pos = at::arange(past, S, at::TensorOptions(m.device).dtype(at::kLong))
              .unsqueeze(0)
              .expand({B, T});
  }
  RopeTables rope;
  if (c.rope) rope = rope_tables(m.rope, pos, m.dtype);
  LayerInput in(c);
  in.rope = &rope;
  in.positions = pos;
  in.visible = key_mask.defined() ? visible_keys(key_mask, T, S) : at::Tensor();
  if (key_mask.defined()) in.token_mask = key_mask.narrow(1, past, T);
  in.past = past;
  in.capacity_hint = state ? state->capacity_hint_ : 0;

  for (const auto& [point, iv] : o.intervene) {
    LT_CHECK(point.layer >= o.from_layer - 1 && point.layer <= last,
             "intervention {} never applies: this forward runs blocks {}..{}", where(point),
             o.from_layer, last);
    if (point.site != Site::ResidPost) {
      LT_CHECK(point.layer >= 0, "intervention at {} of the embeddings: only resid_post (-1) exists",
               site_name(point.site));
      const std::vector<Site> have = layer_sites(point.layer);
      LT_CHECK(std::find(have.begin(), have.end(), point.site) != have.end(),
               "intervention {}: a {} layer has no {} (its sites: {})", where(point),
               m.layers[point.layer]->kind(), site_name(point.site), sites_list(have));
    }
  }
  ForwardResult r;
  if (o.capture) r.hidden.resize(last + 2);
  // sites inside a layer: intervene, then capture (so a capture shows what later code saw)
  struct LoopHooks final : Hooks {
    const ForwardOptions& o;
    ForwardResult& r;
    int layer = 0;
    LoopHooks(const ForwardOptions& opts, ForwardResult& res) : o(opts), r(res) {}
    at::Tensor at(Site site, at::Tensor x) override {
      const HookPoint p{layer, site};
      if (auto it = o.intervene.find(p); it != o.intervene.end()) x = intervene(it->second, p, x);
      if (std::find(o.capture_sites.begin(), o.capture_sites.end(), site) != o.capture_sites.end())
        r.sites[p] = x;
      return x;
    }
  } hooks(o, r);
  const bool capture_post = std::find(o.capture_sites.begin(), o.capture_sites.end(),
                                      Site::ResidPost) != o.capture_sites.end();
  // hidden[l+1] is the residual after block l, interventions included
  auto after = [&](int l) {
    if (auto it = o.intervene.find(HookPoint{l}); it != o.intervene.end())
      h = intervene(it->second, HookPoint{l}, h);
    if (o.capture) r.hidden[l + 1] = h;
    if (capture_post && l >= 0) r.sites[HookPoint{l}] = h;
  };
  after(o.from_layer - 1);
  for (int l = o.from_layer; l <= last; ++l) {
    hooks.layer = l;
    {
      RECORD_USER_SCOPE(kBlockScope);  // profile.h's operator counts per block; free when unobserved
      h = m.layers[l]->forward(h, in, state ? state->layers_[l].get() : nullptr, hooks);
    }
    after(l);
  }
  if (state) state->length_ = S;
  r.residual = h;
  if (last < L - 1 || o.logits == Logits::None) return r;

  at::Tensor sel;  // the final norm is per position, so select before normalising
  switch (o.logits) {
    case Logits::All: sel = h; break;
    case Logits::Last: sel = h.narrow(1, T - 1, 1); break;
    case Logits::Positions: {
      LT_CHECK(o.logit_positions.defined() &&
                   (o.logit_positions.dim() == 1 ||
                    (o.logit_positions.dim() == 2 && o.logit_positions.size(0) == B)),
               "forward: Logits::Positions needs logit_positions int64 [P] or [{}, P]", B);
      at::Tensor p = o.logit_positions.to(m.device, at::kLong);
      p = at::where(p < 0, p + T, p);
      LT_CHECK(p.numel() == 0 || (p.min().item<int64_t>() >= 0 && p.max().item<int64_t>() < T),
               "forward: logit_positions out of range for {} tokens", T);
      sel = p.dim() == 1 ? h.index_select(1, p)
                         : h.gather(1, p.unsqueeze(-1).expand({B, p.size(1), h.size(2)}));
      break;
    }
    case Logits::None: break;
  }
  r.logits = lens(sel);
  return r;
}

namespace {

// The rows' width for prefix_rows / prefix_rows_at: the longest of `lengths`, each checked to
// lie within the shared state `s`, which must be one row that has run.
int64_t prefix_width(const DecodeState& s, const std::vector<int64_t>& lengths, const char* fn) {
  LT_CHECK(s.batch() == 1, "{}: the shared state must hold one row that has run (batch {})", fn, s.batch());
  LT_CHECK(!lengths.empty(), "{}: no rows", fn);
  int64_t width = 0;
  for (int64_t n : lengths) {
    LT_CHECK(n >= 0 && n <= s.length(), "{}: length {} outside the shared state's 0..{} positions", fn, n,
             s.length());
    width = std::max(width, n);
  }
  return width;
}

}  // namespace

std::optional<DecodeState> Model::prefix_rows(const DecodeState& shared,
                                              const std::vector<int64_t>& lengths) const {
  const int64_t width = prefix_width(shared, lengths, "prefix_rows");
  DecodeState out;
  out.layers_.resize(shared.layers_.size());
  for (size_t l = 0; l < shared.layers_.size(); ++l) {
    if (!shared.layers_[l]) continue;
    out.layers_[l] = shared.layers_[l]->prefix_rows(lengths, width);
    if (!out.layers_[l]) return std::nullopt;
  }
  out.length_ = width;
  out.batch_ = int64_t(lengths.size());
  out.from_layer_ = shared.from_layer_;
  return out;
}

std::optional<DecodeState> Model::prefix_rows_at(int layer, const std::vector<const DecodeState*>& shared,
                                                 const std::vector<int64_t>& lengths) const {
  LT_CHECK(layer >= 0 && layer < n_layers(), "prefix_rows_at: block {} outside 0..{}", layer, n_layers() - 1);
  LT_CHECK(!shared.empty(), "prefix_rows_at: no shared states");
  int64_t width = 0;
  for (const DecodeState* s : shared) {
    LT_CHECK(s, "prefix_rows_at: a null shared state");
    width = prefix_width(*s, lengths, "prefix_rows_at");
    LT_CHECK(s->length_ == shared[0]->length_, "prefix_rows_at: shared states of {} and {} positions",
             shared[0]->length_, s->length_);
    LT_CHECK(s->layers_.size() == size_t(n_layers()) && s->from_layer_ <= layer,
             "prefix_rows_at: a shared state has not run through block {}", layer);
  }
  DecodeState out;
  out.layers_.resize(size_t(n_layers()));
  std::vector<std::unique_ptr<LayerState>> parts;
  for (const DecodeState* s : shared) {
    if (!s->layers_[size_t(layer)]) continue;  // a block without state (MLP)
    parts.push_back(s->layers_[size_t(layer)]->prefix_rows(lengths, width));
    if (!parts.back()) return std::nullopt;
  }
  if (!parts.empty()) {
    std::vector<const LayerState*> rest;
    for (size_t k = 1; k < parts.size(); ++k) rest.push_back(parts[k].get());
    if (!rest.empty()) parts[0]->cat_rows(rest);
    out.layers_[size_t(layer)] = std::move(parts[0]);
  }
  out.length_ = width;
  out.batch_ = int64_t(lengths.size() * shared.size());
  out.from_layer_ = layer;
  return out;
}

at::Tensor Model::decode_step(const at::Tensor& ids, const at::Tensor& lengths, int64_t width,
                              DecodeState& state) const {
  const Impl& m = *impl_;
  const Config& c = m.config;
  const int64_t B = ids.size(0);
  LT_CHECK(ids.dim() == 1 && lengths.dim() == 1 && lengths.size(0) == B,
           "decode_step: ids and lengths must be int64 [rows], found {} and {}", shape(ids.sizes()),
           shape(lengths.sizes()));
  LT_CHECK(state.from_layer_ == 0 && state.layers_.size() == size_t(n_layers()),
           "decode_step: the state must hold all {} blocks", n_layers());
  const at::Tensor pos = lengths.view({B, 1});
  at::Tensor h = at::embedding(m.embed, ids.view({B, 1}));
  RopeTables rope;
  if (c.rope) rope = rope_tables(m.rope, pos, m.dtype);
  LayerInput in(c);
  in.rope = &rope;
  in.positions = pos;
  // row b sees positions 0..lengths[b]: its own, the new one included; the rest of the
  // buffer (an earlier row's or never written) is masked
  in.visible = at::arange(width, lengths.options()).view({1, width}).le(pos).view({B, 1, 1, width});
  in.write_at = lengths;
  struct NoHooks final : Hooks {
    at::Tensor at(Site, at::Tensor x) override { return x; }
  } hooks;
  for (int l = 0; l < n_layers(); ++l) {
    RECORD_USER_SCOPE(kBlockScope);
    h = m.layers[l]->forward(h, in, state.layers_[size_t(l)].get(), hooks);
  }
  return lens(h).select(1, 0);
}

at::Tensor Model::lens(const at::Tensor& h) const { return at::linear(lens_norm(h), head()); }

at::Tensor Model::lens_norm(const at::Tensor& h) const {
  const Impl& m = *impl_;
  LT_CHECK(h.defined() && h.size(-1) == m.config.hidden_size, "lens: expected [..., {}], found {}",
           m.config.hidden_size, h.defined() ? shape(h.sizes()) : "none");
  const at::Tensor x = h.to(m.device, m.dtype);
  const double eps = m.config.rms_norm_eps;
  return m.config.norm_offset ? rms_norm_offset(x, m.norm, eps) : rms_norm(x, m.norm, eps);
}

const at::Tensor& Model::head() const { return impl_->head(); }

}  // namespace ltrun::model
