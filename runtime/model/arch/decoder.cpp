// runtime/model/arch/decoder.cpp: the qwen3 / qwen2 / llama block (pre-norm attention with
// RoPE, then a pre-norm SwiGLU MLP) and the attention decode state (keys and values) that
// nemotron_h's attention layers share.
#include "runtime/model/arch/decoder.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <ATen/core/grad_mode.h>

#include "runtime/core/error.h"

namespace ltrun::model {

std::pair<at::Tensor, at::Tensor> KVState::reserve(int64_t B, int64_t heads, int64_t T, int64_t dim,
                                                   const at::TensorOptions& o, int64_t past,
                                                   int64_t capacity_hint) {
  const int64_t need = past + T;
  if (!k.defined() || k.size(2) < need) {
    // grow geometrically so that token-by-token decoding copies O(n) in total, not O(n^2)
    const int64_t cap = std::max({need, capacity_hint, k.defined() ? 2 * k.size(2) : int64_t(0)});
    auto grow = [&](const at::Tensor& old) {
      at::Tensor buf = at::empty({B, heads, cap, dim}, o);
      if (past > 0) buf.narrow(2, 0, past).copy_(old.narrow(2, 0, past));
      return buf;
    };
    k = grow(k);
    v = grow(v);
  }
  return {k.narrow(2, past, T), v.narrow(2, past, T)};
}

// Writes this forward's keys and values at position `past` and returns all of them so far.
std::pair<at::Tensor, at::Tensor> KVState::append(const at::Tensor& k_new, const at::Tensor& v_new,
                                                  int64_t past, int64_t capacity_hint) {
  const int64_t T = k_new.size(2);
  auto [kd, vd] = reserve(k_new.size(0), k_new.size(1), T, k_new.size(3), k_new.options(), past, capacity_hint);
  kd.copy_(k_new);
  vd.copy_(v_new);
  return {k.narrow(2, 0, past + T), v.narrow(2, 0, past + T)};
}

std::pair<at::Tensor, at::Tensor> KVState::put(const at::Tensor& k_new, const at::Tensor& v_new,
                                               const LayerInput& in) {
  if (!in.write_at.defined()) return append(k_new, v_new, in.past, in.capacity_hint);
  LT_CHECK(k.defined() && k_new.size(2) == 1 && k.size(0) == k_new.size(0),
           "static cache: one new position per row into keys of {} rows, found keys {} for {} rows",
           k.defined() ? k.size(0) : 0, c10::str(k_new.sizes()), k_new.size(0));
  const at::Tensor at = in.write_at.view({-1, 1, 1, 1}).expand(k_new.sizes());
  k.scatter_(2, at, k_new);
  v.scatter_(2, at, v_new);
  return {k, v};
}

std::unique_ptr<LayerState> KVState::prefix_rows(const std::vector<int64_t>& lengths,
                                                 int64_t width) const {
  auto out = std::make_unique<KVState>();
  const int64_t R = int64_t(lengths.size());
  // padded positions hold zeros (masked out by the caller's attention_mask)
  out->k = at::zeros({R, k.size(1), width, k.size(3)}, k.options());
  out->v = at::zeros({R, v.size(1), width, v.size(3)}, v.options());
  for (int64_t i = 0; i < R; ++i) {
    const int64_t n = lengths[size_t(i)];
    if (n == 0) continue;
    out->k[i].narrow(1, width - n, n).copy_(k[0].narrow(1, 0, n));
    out->v[i].narrow(1, width - n, n).copy_(v[0].narrow(1, 0, n));
  }
  return out;
}

// the whole buffer (its spare capacity too), so the next appends do not regrow it
void KVState::select_rows(const at::Tensor& rows) {
  if (!k.defined()) return;
  const at::Tensor r = rows.to(k.device());
  k = k.index_select(0, r);
  v = v.index_select(0, r);
}

// one new buffer, right-aligned at `width`, with the spare capacity of the roomier state, so
// that the next appends do not regrow it
void KVState::append_rows(const LayerState& other_state, int64_t past, int64_t other_past, int64_t width) {
  const auto* other = dynamic_cast<const KVState*>(&other_state);
  LT_CHECK(other && k.defined() && other->k.defined(), "decode state: attention keys and values can take "
           "only the rows of another attention state that has run");
  const int64_t B1 = k.size(0), B2 = other->k.size(0);
  const int64_t spare = std::max<int64_t>({k.size(2) - past, other->k.size(2) - other_past, 1});
  auto join = [&](const at::Tensor& a, const at::Tensor& b) {
    at::Tensor out = at::zeros({B1 + B2, a.size(1), width + spare, a.size(3)}, a.options());
    const int64_t n = std::min(past, width), m = std::min(other_past, width);
    out.narrow(0, 0, B1).narrow(2, width - n, n).copy_(a.narrow(2, past - n, n));
    out.narrow(0, B1, B2).narrow(2, width - m, m).copy_(b.narrow(2, other_past - m, m));
    return out;
  };
  k = join(k, other->k);
  v = join(v, other->v);
}

void KVState::cat_rows(const std::vector<const LayerState*>& others) {
  LT_CHECK(k.defined(), "decode state: attention keys and values can join rows only after a run");
  std::vector<at::Tensor> ks{k}, vs{v};
  for (const LayerState* s : others) {
    const auto* o = dynamic_cast<const KVState*>(s);
    LT_CHECK(o && o->k.defined() && o->k.size(2) == k.size(2), "decode state: attention keys and values join "
             "only the rows of another attention state of the same {} positions", k.size(2));
    ks.push_back(o->k);
    vs.push_back(o->v);
  }
  k = at::cat(ks, 0);
  v = at::cat(vs, 0);
}

void AttentionWeights::slots(const Config& c, std::vector<Slot>& out, const std::string& p) {
  const int64_t H = c.hidden_size, q_out = c.n_heads * c.head_dim, kv_out = c.n_kv_heads * c.head_dim;
  auto linear = [&](const char* name, at::Tensor& w, at::Tensor& b, bool has_bias, int64_t o,
                    int64_t i) {
    out.push_back({p + name + ".weight", {o, i}, ParamPart::Mixer, Init::Normal, true, &w});
    if (has_bias) out.push_back({p + name + ".bias", {o}, ParamPart::Mixer, Init::Zeros, false, &b});
  };
  linear("q_proj", q, q_bias, c.qkv_bias, q_out, H);
  linear("k_proj", k, k_bias, c.qkv_bias, kv_out, H);
  linear("v_proj", v, v_bias, c.qkv_bias, kv_out, H);
  linear("o_proj", o, o_bias, c.o_bias, H, q_out);
  if (c.qk_norm) {
    out.push_back({p + "q_norm.weight", {c.head_dim}, ParamPart::Mixer, Init::Ones, false, &q_norm});
    out.push_back({p + "k_norm.weight", {c.head_dim}, ParamPart::Mixer, Init::Ones, false, &k_norm});
  }
}

at::Tensor fuse_rows(const std::vector<at::Tensor*>& parts) {
  for (const at::Tensor* p : parts)
    if (!p->defined() || p->scalar_type() != parts[0]->scalar_type() ||
        p->device() != parts[0]->device() || p->sizes().slice(1) != parts[0]->sizes().slice(1))
      return {};
  std::vector<at::Tensor> rows;
  for (const at::Tensor* p : parts) rows.push_back(p->detach());
  const at::Tensor buf = at::cat(rows, 0);
  int64_t off = 0;
  for (at::Tensor* p : parts) {
    const bool grad = p->requires_grad();
    const int64_t n = p->size(0);
    *p = buf.narrow(0, off, n);
    if (grad) p->requires_grad_(true);
    off += n;
  }
  return buf;
}

bool rows_of(const at::Tensor& buf, const std::vector<const at::Tensor*>& parts) {
  if (!buf.defined()) return false;
  const char* pos = static_cast<const char*>(buf.data_ptr());
  for (const at::Tensor* p : parts) {
    if (!p->defined() || !p->is_contiguous() || static_cast<const char*>(p->data_ptr()) != pos) return false;
    pos += p->nbytes();
  }
  return pos == static_cast<const char*>(buf.data_ptr()) + buf.nbytes();
}

namespace {
// a weight the current forward must differentiate: then the fused buffer (no autograd edge to
// the parameter views) cannot stand in for them
bool needs_grad(std::initializer_list<const at::Tensor*> ws) {
  if (!at::GradMode::is_enabled()) return false;
  for (const at::Tensor* w : ws)
    if (w->defined() && w->requires_grad()) return true;
  return false;
}
}  // namespace

void AttentionWeights::fuse() {
  qkv = fuse_rows({&q, &k, &v});
  qkv_bias = q_bias.defined() ? fuse_rows({&q_bias, &k_bias, &v_bias}) : at::Tensor();
}

at::Tensor AttentionWeights::forward(const at::Tensor& x, const LayerInput& in,
                                     LayerState* state) const {
  const Config& c = in.config;
  const int64_t B = x.size(0), T = x.size(1);
  const int64_t qo = c.n_heads * c.head_dim, ko = c.n_kv_heads * c.head_dim;
  at::Tensor qh, kh, vh;
  if (rows_of(qkv, {&q, &k, &v}) && (!q_bias.defined() || rows_of(qkv_bias, {&q_bias, &k_bias, &v_bias})) &&
      !needs_grad({&q, &k, &v, &q_bias, &k_bias, &v_bias})) {
    const at::Tensor y = at::linear(x, qkv, qkv_bias);  // one GEMM: [B, T, qo + 2 ko]
    qh = y.narrow(-1, 0, qo).view({B, T, c.n_heads, c.head_dim});
    kh = y.narrow(-1, qo, ko).view({B, T, c.n_kv_heads, c.head_dim});
    vh = y.narrow(-1, qo + ko, ko).view({B, T, c.n_kv_heads, c.head_dim}).transpose(1, 2);
  } else {
    qh = at::linear(x, q, q_bias).view({B, T, c.n_heads, c.head_dim});
    kh = at::linear(x, k, k_bias).view({B, T, c.n_kv_heads, c.head_dim});
    vh = at::linear(x, v, v_bias).view({B, T, c.n_kv_heads, c.head_dim}).transpose(1, 2);
  }
  // Inference on the CPU: the norms, RoPE and the cache write in one pass (blocks.h), the
  // keys and values going straight to their place in the cache
  const at::Tensor qn = c.qk_norm ? q_norm : at::Tensor(), kn = c.qk_norm ? k_norm : at::Tensor();
  const RopeTables* rope = c.rope ? in.rope : nullptr;
  if ((!c.rope || rope) && qkv_heads_fused(qh, qn, kn, rope)) {
    const at::Tensor vt = vh.transpose(1, 2);  // back to [B, T, KV, D]: the projection's layout
    auto* kv = static_cast<KVState*>(state);
    at::Tensor kd, vd, write_at;
    // the static cache's step: each row's key and value straight to its own position (write_at)
    // in the preallocated buffers, where put's scatter_ would be two more kernels
    const bool in_place = kv && in.write_at.defined() && in.write_at.is_cpu() && kv->k.defined() &&
                          kv->k.size(0) == B && T == 1;
    if (in_place) {
      kd = kv->k, vd = kv->v, write_at = in.write_at;
    } else if (kv && !in.write_at.defined()) {
      std::tie(kd, vd) = kv->reserve(B, c.n_kv_heads, T, c.head_dim, x.options(), in.past, in.capacity_hint);
    } else {
      kd = at::empty({B, c.n_kv_heads, T, c.head_dim}, x.options());
      vd = at::empty({B, c.n_kv_heads, T, c.head_dim}, x.options());
    }
    qh = qkv_heads(qh, kh, vt, qn, kn, c.rms_norm_eps, rope, kd, vd, write_at);
    if (in_place) {
      kh = kv->k;
      vh = kv->v;
    } else if (kv && in.write_at.defined()) {
      std::tie(kh, vh) = kv->put(kd, vd, in);
    } else if (kv) {
      kh = kv->k.narrow(2, 0, in.past + T);
      vh = kv->v.narrow(2, 0, in.past + T);
    } else {
      kh = kd;
      vh = vd;
    }
    const at::Tensor a =
        attention(qh, kh, vh, in.visible).transpose(1, 2).reshape({B, T, c.n_heads * c.head_dim});
    return at::linear(a, o, o_bias);
  }
  if (c.qk_norm) {
    qh = rms_norm(qh, q_norm, c.rms_norm_eps);
    kh = rms_norm(kh, k_norm, c.rms_norm_eps);
  }
  qh = qh.transpose(1, 2);
  kh = kh.transpose(1, 2);
  if (c.rope) {
    qh = apply_rope(qh, *in.rope);
    kh = apply_rope(kh, *in.rope);
  }
  if (state) std::tie(kh, vh) = static_cast<KVState*>(state)->put(kh, vh, in);
  const at::Tensor a =
      attention(qh, kh, vh, in.visible).transpose(1, 2).reshape({B, T, c.n_heads * c.head_dim});
  return at::linear(a, o, o_bias);
}

namespace {

class DecoderLayer final : public Layer {
 public:
  explicit DecoderLayer(const Config& c) : c_(c) {}
  const std::string& kind() const override {
    static const std::string k = "decoder";
    return k;
  }
  std::vector<Site> sites() const override {
    return {Site::MixerOut, Site::ResidMid, Site::MlpOut};
  }
  void slots(std::vector<Slot>& out) override {
    const int64_t H = c_.hidden_size, I = c_.intermediate_size;
    attn_.slots(c_, out, "self_attn.");
    auto linear = [&](const char* name, at::Tensor& w, at::Tensor& b, int64_t o, int64_t i) {
      out.push_back({std::string("mlp.") + name + ".weight", {o, i}, ParamPart::Mlp, Init::Normal, true, &w});
      if (c_.mlp_bias)
        out.push_back({std::string("mlp.") + name + ".bias", {o}, ParamPart::Mlp, Init::Zeros, false, &b});
    };
    linear("gate_proj", gate_, gate_bias_, I, H);
    linear("up_proj", up_, up_bias_, I, H);
    linear("down_proj", down_, down_bias_, H, I);
    out.push_back({"input_layernorm.weight", {H}, ParamPart::Norm, Init::Ones, false, &input_norm_});
    out.push_back({"post_attention_layernorm.weight", {H}, ParamPart::Norm, Init::Ones, false, &post_norm_});
  }
  at::Tensor forward(const at::Tensor& h, const LayerInput& in, LayerState* state,
                     Hooks& hooks) const override {
    const double eps = c_.rms_norm_eps;
    const at::Tensor a = hooks.at(Site::MixerOut, attn_.forward(rms_norm(h, input_norm_, eps), in, state));
    const at::Tensor h2 = hooks.at(Site::ResidMid, h + a);
    const at::Tensor y = rms_norm(h2, post_norm_, eps);
    at::Tensor mlp;
    if (rows_of(gate_up_, {&gate_, &up_}) && (!gate_bias_.defined() || rows_of(gate_up_bias_, {&gate_bias_, &up_bias_})) &&
        !needs_grad({&gate_, &up_, &gate_bias_, &up_bias_})) {
      const int64_t I = gate_.size(0);
      const at::Tensor gu = at::linear(y, gate_up_, gate_up_bias_);  // one GEMM: [B, T, 2 I]
      mlp = at::linear(silu_mul(gu.narrow(-1, 0, I), gu.narrow(-1, I, I)), down_, down_bias_);
    } else {
      mlp = swiglu(y, gate_, up_, down_, gate_bias_, up_bias_, down_bias_);
    }
    return h2 + hooks.at(Site::MlpOut, mlp);
  }
  std::unique_ptr<LayerState> new_state() const override { return std::make_unique<KVState>(); }
  void fuse() override {
    attn_.fuse();
    gate_up_ = fuse_rows({&gate_, &up_});
    gate_up_bias_ = gate_bias_.defined() ? fuse_rows({&gate_bias_, &up_bias_}) : at::Tensor();
  }

 private:
  const Config& c_;
  AttentionWeights attn_;
  at::Tensor gate_, up_, down_, gate_bias_, up_bias_, down_bias_, input_norm_, post_norm_;
  at::Tensor gate_up_, gate_up_bias_;  // gate and up as views of one buffer (fuse())
};

}  // namespace

std::unique_ptr<Layer> make_decoder_layer(const Config& c) { return std::make_unique<DecoderLayer>(c); }
std::unique_ptr<Layer> make_decoder_layer_at(const Config& c, int) { return make_decoder_layer(c); }

}  // namespace ltrun::model
