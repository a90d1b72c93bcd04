// runtime/model/model.cpp: the decoder stack: parameters under their HF names, checkpoint
// loading with checks, the layer-addressable forward pass, save, clone, conversion.
#include "runtime/model/model.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "runtime/core/device.h"
#include "runtime/core/error.h"
#include "runtime/io/atomic_file.h"
#include "runtime/io/checkpoint.h"
#include "runtime/model/arch.h"
#include "runtime/model/blocks.h"

namespace ltrun::model {

namespace {

// How Model::init fills a parameter (HF's _init_weights for Linear, Embedding, RMSNorm).
enum class Init { Normal, Zeros, Ones };

// Parameters of one decoder block; a bias or q/k norm the architecture lacks stays undefined.
struct Block {
  at::Tensor q, k, v, o, q_bias, k_bias, v_bias, o_bias, q_norm, k_norm;
  at::Tensor gate, up, down, gate_bias, up_bias, down_bias;
  at::Tensor input_norm, post_norm;
};

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

}  // namespace

struct Model::Impl {
  Config config;
  RopeFreqs rope;
  c10::Device device = c10::kCPU;
  c10::ScalarType dtype = c10::kFloat;
  at::Tensor embed, norm, lm_head;  // lm_head undefined when tied to embed
  std::vector<Block> blocks;

  explicit Impl(Config c) : config(std::move(c)), blocks(config.n_layers) {
    rope = rope_freqs(config.rope_scaling, config.rope_theta, config.head_dim,
                      config.max_position_embeddings);
  }

  const at::Tensor& head() const { return config.tie_word_embeddings ? embed : lm_head; }

  // The RoPE frequencies live with the weights, so a forward copies nothing to the device.
  void set_device(c10::Device d) {
    device = d;
    rope.inv_freq = rope.inv_freq.to(d);
  }

  // f(name, tensor, shape, layer, init) for the parameters of block `layer`, in HF's
  // state_dict order. Self is Impl or const Impl.
  template <class Self, class F>
  static void visit_block(Self& m, int layer, F&& f) {
    const Config& c = m.config;
    auto& b = m.blocks[layer];
    const int64_t H = c.hidden_size, I = c.intermediate_size;
    const int64_t q_out = c.n_heads * c.head_dim, kv_out = c.n_kv_heads * c.head_dim;
    const std::string p = fmt::format("model.layers.{}.", layer);
    auto linear = [&](const char* name, auto& w, auto& bias, bool has_bias, int64_t out,
                      int64_t in) {
      f(p + name + ".weight", w, std::vector<int64_t>{out, in}, layer, Init::Normal);
      if (has_bias) f(p + name + ".bias", bias, std::vector<int64_t>{out}, layer, Init::Zeros);
    };
    linear("self_attn.q_proj", b.q, b.q_bias, c.qkv_bias, q_out, H);
    linear("self_attn.k_proj", b.k, b.k_bias, c.qkv_bias, kv_out, H);
    linear("self_attn.v_proj", b.v, b.v_bias, c.qkv_bias, kv_out, H);
    linear("self_attn.o_proj", b.o, b.o_bias, c.o_bias, H, q_out);
    if (c.qk_norm) {
      f(p + "self_attn.q_norm.weight", b.q_norm, std::vector<int64_t>{c.head_dim}, layer,
        Init::Ones);
      f(p + "self_attn.k_norm.weight", b.k_norm, std::vector<int64_t>{c.head_dim}, layer,
        Init::Ones);
    }
    linear("mlp.gate_proj", b.gate, b.gate_bias, c.mlp_bias, I, H);
    linear("mlp.up_proj", b.up, b.up_bias, c.mlp_bias, I, H);
    linear("mlp.down_proj", b.down, b.down_bias, c.mlp_bias, H, I);
    f(p + "input_layernorm.weight", b.input_norm, std::vector<int64_t>{H}, layer, Init::Ones);
    f(p + "post_attention_layernorm.weight", b.post_norm, std::vector<int64_t>{H}, layer,
      Init::Ones);
  }

  // Every parameter, in checkpoint order; a tied head is not visited (it is embed).
  template <class Self, class F>
  static void visit(Self& m, F&& f) {
    const Config& c = m.config;
    f(std::string("model.embed_tokens.weight"), m.embed,
      std::vector<int64_t>{c.vocab_size, c.hidden_size}, -1, Init::Normal);
    for (int l = 0; l < c.n_layers; ++l) visit_block(m, l, f);
    f(std::string("model.norm.weight"), m.norm, std::vector<int64_t>{c.hidden_size}, -1,
      Init::Ones);
    if (!c.tie_word_embeddings)
      f(std::string("lm_head.weight"), m.lm_head, std::vector<int64_t>{c.vocab_size, c.hidden_size},
        -1, Init::Normal);
  }

  at::Tensor block_forward(int l, const at::Tensor& h, const RopeTables& rope,
                           const at::Tensor& visible, KVCache* cache) const;
  static std::pair<at::Tensor, at::Tensor> cache_append(KVCache& cache, int l, const at::Tensor& k,
                                                        const at::Tensor& v);
};

// --- construction ------------------------------------------------------------------------

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

Model Model::load(const std::string& dir, c10::Device device,
                  std::optional<c10::ScalarType> dtype) {
  Config c = read_config(dir);
  const io::Checkpoint ck = io::Checkpoint::open(dir);
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
  std::set<std::string> used;
  Impl::visit(*impl, [&](const std::string& name, at::Tensor& t, const std::vector<int64_t>& shape,
                         int, Init) {
    if (!ck.has(name))
      fail("{}: missing tensor {} (shape [{}] per {})", ck.path(), name, fmt::join(shape, ", "),
           cfg.source);
    const io::TensorInfo& info = ck.info(name);
    if (info.shape != shape)
      fail("{}: tensor {} has shape [{}], but {} implies [{}]", ck.file_of(name), name,
           fmt::join(info.shape, ", "), cfg.source, fmt::join(shape, ", "));
    if (!file_dtype.empty() && info.dtype != file_dtype)
      fail("{}: tensor {} is {}, but {} says torch_dtype {} ({})", ck.file_of(name), name,
           info.dtype, cfg.source, cfg.torch_dtype, file_dtype);
    // copy=true: the model owns its memory instead of viewing the file's mapping
    t = ck.tensor(name).to(device, impl->dtype, /*non_blocking=*/false, /*copy=*/true);
    used.insert(name);
  });
  for (const std::string& name : ck.names()) {
    if (used.count(name) || derived_buffer(name)) continue;
    // HF also ignores a stored head when it ties it to the embeddings
    if (name == "lm_head.weight" && cfg.tie_word_embeddings) continue;
    fail("{}: unexpected tensor {}: not part of a {} model with {} layers as {} describes it",
         ck.file_of(name), name, cfg.model_type, cfg.n_layers, cfg.source);
  }
  return Model(std::move(impl));
}

Model Model::init(const Config& config, uint64_t seed, c10::Device device, c10::ScalarType dtype) {
  find_arch(config.model_type, "Model::init");
  auto impl = std::make_unique<Impl>(config);
  impl->set_device(device);
  impl->dtype = dtype;
  at::Generator gen = at::detail::createCPUGenerator(seed);
  Impl::visit(*impl, [&](const std::string&, at::Tensor& t, const std::vector<int64_t>& shape, int,
                         Init init) {
    // drawn in fp32 on the CPU so that a seed gives the same model on every device
    at::Tensor x = init == Init::Normal ? at::normal(0.0, 0.02, shape, gen, at::kFloat)
                   : init == Init::Ones ? at::ones(shape, at::kFloat)
                                        : at::zeros(shape, at::kFloat);
    t = x.to(device, dtype);
  });
  return Model(std::move(impl));
}

const Config& Model::config() const { return impl_->config; }
int Model::n_layers() const { return int(impl_->config.n_layers); }
c10::Device Model::device() const { return impl_->device; }
c10::ScalarType Model::dtype() const { return impl_->dtype; }

// --- parameters --------------------------------------------------------------------------

std::vector<Param> Model::parameters() const {
  std::vector<Param> out;
  Impl::visit(*impl_, [&](const std::string& name, const at::Tensor& t, const std::vector<int64_t>&,
                          int layer, Init) {
    out.push_back({name, t, layer});
  });
  return out;
}

std::vector<Param> Model::parameters(int layer) const {
  LT_CHECK(layer >= 0 && layer < n_layers(), "layer {} out of range (model has {} layers)", layer,
           n_layers());
  std::vector<Param> out;
  Impl::visit_block(
      *impl_, layer,
      [&](const std::string& name, const at::Tensor& t, const std::vector<int64_t>&, int l, Init) {
        out.push_back({name, t, l});
      });
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
  std::vector<at::Tensor> src;
  Impl::visit(*impl_, [&](const std::string&, const at::Tensor& t, const std::vector<int64_t>&, int,
                          Init) { src.push_back(t); });
  size_t i = 0;
  Impl::visit(*impl,
              [&](const std::string&, at::Tensor& t, const std::vector<int64_t>&, int, Init) {
                const at::Tensor& s = src[i++];
                t = s.detach().clone();
                t.set_requires_grad(s.requires_grad());
              });
  return Model(std::move(impl));
}

Model& Model::to(c10::Device device, std::optional<c10::ScalarType> dtype) {
  const c10::ScalarType target = dtype.value_or(impl_->dtype);
  Impl::visit(
      *impl_, [&](const std::string&, at::Tensor& t, const std::vector<int64_t>&, int, Init) {
        const bool grad = t.requires_grad();
        t = t.detach().to(device, target);  // a new leaf, not a node hanging off the old tensor
        t.set_requires_grad(grad);
      });
  impl_->set_device(device);
  impl_->dtype = target;
  return *this;
}

void Model::save(const std::string& dir, uint64_t max_shard_bytes) const {
  namespace fs = std::filesystem;
  const Config& c = impl_->config;
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  Impl::visit(*impl_, [&](const std::string& name, const at::Tensor& t, const std::vector<int64_t>&,
                          int, Init) { tensors.emplace_back(name, t.detach()); });
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

at::Tensor intervene(const Intervention& iv, int layer, at::Tensor h) {
  const int64_t B = h.size(0), T = h.size(1);
  switch (iv.kind) {
    case Intervention::Kind::Zero: {
      at::Tensor p = iv.tensor.to(h.device());
      if (p.scalar_type() == at::kBool) {
        LT_CHECK(
            (p.dim() == 1 && p.size(0) == T) || (p.dim() == 2 && p.size(0) == B && p.size(1) == T),
            "intervention after layer {}: zero mask has shape {}, expected [{}] or [{}, {}]", layer,
            shape(p.sizes()), T, B, T);
        return h.masked_fill((p.dim() == 1 ? p.unsqueeze(0) : p).unsqueeze(-1), 0);
      }
      LT_CHECK(p.dim() == 1 && at::isIntegralType(p.scalar_type(), false),
               "intervention after layer {}: zero positions must be int64 [P] or bool [B, T], "
               "found {} {}",
               layer, dtype_name(p.scalar_type()), shape(p.sizes()));
      p = p.to(at::kLong);
      p = at::where(p < 0, p + T, p);
      LT_CHECK(p.numel() == 0 || (p.min().item<int64_t>() >= 0 && p.max().item<int64_t>() < T),
               "intervention after layer {}: zero positions out of range for {} tokens", layer, T);
      return h.index_fill(1, p, 0);
    }
    case Intervention::Kind::Add: return h + iv.tensor.to(h.device(), h.scalar_type());
    case Intervention::Kind::Replace:
      LT_CHECK(iv.tensor.sizes() == h.sizes(),
               "intervention after layer {}: replacement has shape {}, expected {}", layer,
               shape(iv.tensor.sizes()), shape(h.sizes()));
      return iv.tensor.to(h.device(), h.scalar_type());
    case Intervention::Kind::Call: {
      const std::vector<int64_t> dims = h.sizes().vec();
      iv.fn(layer, h);
      LT_CHECK(h.defined() && h.sizes().vec() == dims,
               "intervention after layer {}: the callback left a tensor of shape {}, expected {}",
               layer, h.defined() ? shape(h.sizes()) : "none", shape(dims));
      return h;
    }
  }
  return h;
}

}  // namespace

// Writes this forward's keys and values of block l at position cache.length() and returns
// all of them so far; forward() advances the length once every block has appended.
std::pair<at::Tensor, at::Tensor> Model::Impl::cache_append(KVCache& cache, int l,
                                                            const at::Tensor& k,
                                                            const at::Tensor& v) {
  KVCache::Layer& s = cache.layers_[l];
  const int64_t past = cache.length_, T = k.size(2), need = past + T;
  if (!s.k.defined() || s.k.size(2) < need) {
    // grow geometrically so that token-by-token decoding copies O(n) in total, not O(n^2)
    const int64_t cap =
        std::max({need, cache.capacity_hint_, s.k.defined() ? 2 * s.k.size(2) : int64_t(0)});
    auto grow = [&](const at::Tensor& old, const at::Tensor& like) {
      at::Tensor buf = at::empty({like.size(0), like.size(1), cap, like.size(3)}, like.options());
      if (past > 0) buf.narrow(2, 0, past).copy_(old.narrow(2, 0, past));
      return buf;
    };
    s.k = grow(s.k, k);
    s.v = grow(s.v, v);
  }
  s.k.narrow(2, past, T).copy_(k);
  s.v.narrow(2, past, T).copy_(v);
  return {s.k.narrow(2, 0, need), s.v.narrow(2, 0, need)};
}

at::Tensor Model::Impl::block_forward(int l, const at::Tensor& h, const RopeTables& rope,
                                      const at::Tensor& visible, KVCache* cache) const {
  const Block& b = blocks[l];
  const Config& c = config;
  const int64_t B = h.size(0), T = h.size(1);
  const at::Tensor x = rms_norm(h, b.input_norm, c.rms_norm_eps);
  at::Tensor q = at::linear(x, b.q, b.q_bias).view({B, T, c.n_heads, c.head_dim});
  at::Tensor k = at::linear(x, b.k, b.k_bias).view({B, T, c.n_kv_heads, c.head_dim});
  at::Tensor v =
      at::linear(x, b.v, b.v_bias).view({B, T, c.n_kv_heads, c.head_dim}).transpose(1, 2);
  if (c.qk_norm) {
    q = rms_norm(q, b.q_norm, c.rms_norm_eps);
    k = rms_norm(k, b.k_norm, c.rms_norm_eps);
  }
  q = apply_rope(q.transpose(1, 2), rope);
  k = apply_rope(k.transpose(1, 2), rope);
  if (cache) std::tie(k, v) = cache_append(*cache, l, k, v);
  const at::Tensor a =
      attention(q, k, v, visible).transpose(1, 2).reshape({B, T, c.n_heads * c.head_dim});
  const at::Tensor h2 = h + at::linear(a, b.o, b.o_bias);
  const at::Tensor y = rms_norm(h2, b.post_norm, c.rms_norm_eps);
  return h2 + swiglu(y, b.gate, b.up, b.down, b.gate_bias, b.up_bias, b.down_bias);
}

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

  KVCache* cache = o.cache;
  int64_t past = 0;
  if (cache) {
    LT_CHECK(o.from_layer == 0 && last == L - 1,
             "forward: a KV cache needs the whole stack (no from/to_layer)");
    if (cache->layers_.empty()) cache->layers_.resize(L);
    LT_CHECK(cache->layers_.size() == size_t(L), "forward: KV cache holds {} layers, model has {}",
             cache->layers_.size(), L);
    LT_CHECK(!cache->layers_[0].k.defined() || cache->layers_[0].k.size(0) == B,
             "forward: KV cache has batch {}, input has {}", cache->layers_[0].k.size(0), B);
    past = cache->length_;
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
  const RopeTables rope = rope_tables(m.rope, pos, m.dtype);
  const at::Tensor visible = key_mask.defined() ? visible_keys(key_mask, T, S) : at::Tensor();

  for (const auto& [layer, iv] : o.intervene)
    LT_CHECK(layer >= o.from_layer - 1 && layer <= last,
             "intervention after layer {} never applies: this forward runs blocks {}..{}", layer,
             o.from_layer, last);
  ForwardResult r;
  if (o.capture) r.hidden.resize(last + 2);
  // hidden[l+1] is the residual after block l, interventions included
  auto after = [&](int l) {
    if (auto it = o.intervene.find(l); it != o.intervene.end()) h = intervene(it->second, l, h);
    if (o.capture) r.hidden[l + 1] = h;
  };
  after(o.from_layer - 1);
  for (int l = o.from_layer; l <= last; ++l) {
    h = m.block_forward(l, h, rope, visible, cache);
    after(l);
  }
  if (cache) cache->length_ = S;
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

at::Tensor Model::lens(const at::Tensor& h) const {
  const Impl& m = *impl_;
  LT_CHECK(h.defined() && h.size(-1) == m.config.hidden_size, "lens: expected [..., {}], found {}",
           m.config.hidden_size, h.defined() ? shape(h.sizes()) : "none");
  return at::linear(rms_norm(h.to(m.device, m.dtype), m.norm, m.config.rms_norm_eps), m.head());
}

}  // namespace ltrun::model
