// runtime/model/blocks.cpp: RMSNorm, RoPE (default, linear, llama3, yarn), grouped-query
// attention and SwiGLU, mirroring HF transformers' Llama/Qwen code operation by operation.
#include "runtime/model/blocks.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <ATen/record_function.h>
#include <torch/version.h>  // TORCH_VERSION_MAJOR; on the include path of both LibTorch builds

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/core/error.h"
#include "runtime/kernels/rmsnorm.h"
#include "runtime/model/config.h"

namespace ltrun::model {

namespace {
// fp32, or fp64 for fp64 inputs (the gradient checks run in double)
at::ScalarType accumulate_type(at::ScalarType t) { return at::promote_types(t, at::kFloat); }
}  // namespace

// The fused CUDA kernel where it applies (inference on GPU), else the same formula in ATen.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  return kernels::rmsnorm(x, weight, eps);
}

at::Tensor rms_norm_offset(const at::Tensor& x, const at::Tensor& weight, double eps) {
  const at::Tensor xf = x.to(accumulate_type(x.scalar_type()));
  const at::Tensor normed = xf * at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return (normed * (weight.to(xf.scalar_type()) + 1)).to(x.scalar_type());
}

// --- RoPE --------------------------------------------------------------------------------

namespace {

// base ** (arange(0, dim, 2) / dim) in float32, the denominator of every inv_freq formula
at::Tensor pos_freqs(double base, int64_t dim) {
  return at::pow(base, at::arange(0, dim, 2, at::kLong).to(at::kFloat) / dim);
}

at::Tensor llama3_inv_freq(const RopeScaling& s, const at::Tensor& inv_freq) {
  const double factor = *s.factor;
  const double old_context = double(s.original_max_position_embeddings);
  const double low_freq_wavelen = old_context / s.low_freq_factor;
  const double high_freq_wavelen = old_context / s.high_freq_factor;
  const at::Tensor wavelen = inv_freq.reciprocal() * (2 * M_PI);
  // long wavelengths are divided by factor, short ones kept, the band between interpolated
  at::Tensor out = at::where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq);
  const at::Tensor smooth = (wavelen.reciprocal() * old_context - s.low_freq_factor) /
                            (s.high_freq_factor - s.low_freq_factor);
  const at::Tensor smoothed = (1 - smooth) * out / factor + smooth * out;
  const at::Tensor medium = (wavelen >= high_freq_wavelen).logical_and(wavelen <= low_freq_wavelen);
  return at::where(medium, smoothed, out);
}

double yarn_mscale(double scale, double mscale) {
  return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

RopeFreqs yarn(const RopeScaling& s, double base, int64_t dim, int64_t max_pos) {
  // transformers >= 5 semantics: an explicit factor wins; 4.x recomputed it as
  // max_position_embeddings / original_max_position_embeddings whenever the latter was set.
  const double original =
      double(s.original_max_position_embeddings ? s.original_max_position_embeddings : max_pos);
  const double factor = s.factor ? *s.factor : double(max_pos) / original;
  RopeFreqs out;
  if (s.attention_factor) {
    out.attention_factor = *s.attention_factor;
  } else if (s.mscale.value_or(0) != 0 && s.mscale_all_dim.value_or(0) != 0) {
    out.attention_factor = yarn_mscale(factor, *s.mscale) / yarn_mscale(factor, *s.mscale_all_dim);
  } else {
    out.attention_factor = yarn_mscale(factor, 1.0);
  }
  // dimension index at which a frequency completes `rotations` turns over the original context
  auto correction_dim = [&](double rotations) {
    return (dim * std::log(original / (rotations * 2 * M_PI))) / (2 * std::log(base));
  };
  double low = correction_dim(s.beta_fast), high = correction_dim(s.beta_slow);
  if (s.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, double(dim - 1));
  if (low == high) high += 0.001;  // HF: prevent a division by zero
  const at::Tensor ramp = ((at::arange(dim / 2, at::kFloat) - low) / (high - low)).clamp(0, 1);
  const at::Tensor extrapolation_factor = 1 - ramp;
  const at::Tensor freqs = pos_freqs(base, dim);
  const at::Tensor extrapolation = 1.0 / freqs;
  const at::Tensor interpolation = 1.0 / (factor * freqs);
  out.inv_freq = interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor;
  return out;
}

}  // namespace

RopeFreqs rope_freqs(const RopeScaling& s, double theta, int64_t dim, int64_t max_pos) {
  if (s.type == "yarn") return yarn(s, theta, dim, max_pos);
  LT_CHECK(s.type == "default" || s.factor, "RoPE type \"{}\" needs a factor", s.type);
  RopeFreqs out;
  out.inv_freq = 1.0 / pos_freqs(theta, dim);
  if (s.type == "linear")
    out.inv_freq = out.inv_freq / *s.factor;
  else if (s.type == "llama3")
    out.inv_freq = llama3_inv_freq(s, out.inv_freq);
  else
    LT_CHECK(s.type == "default", "unsupported RoPE type \"{}\"", s.type);
  return out;
}

RopeTables rope_tables(const RopeFreqs& f, const at::Tensor& position_ids, at::ScalarType dtype) {
  const at::Tensor inv = f.inv_freq.to(position_ids.device());
  const at::Tensor freqs = position_ids.to(at::kFloat).unsqueeze(-1) * inv;  // [B, T, dim/2]
  const at::Tensor emb = at::cat({freqs, freqs}, -1);
  return {(emb.cos() * f.attention_factor).to(dtype), (emb.sin() * f.attention_factor).to(dtype)};
}

namespace {

// One rotated row: the formula's operations per element in x's dtype (so the same rounding);
// rope_cpu and the fused q/k pass below share it.
template <class T>
void rope_row(const T* x, const T* c, const T* s, T* y, int64_t D) {
  const int64_t half = D / 2;
  for (int64_t j = 0; j < D; ++j) {
    const T rot = j < half ? static_cast<T>(-x[j + half]) : x[j - half];
    const T a = x[j] * c[j], bb = rot * s[j];
    y[j] = a + bb;
  }
}

// RoPE for inference on the CPU in one pass (ATen's formula is five operators: neg, cat and
// three products and sums, each a full pass): row (b, h, i) of x [B, H, T, D] (any strides
// but a contiguous last dimension) against row (b, i) of cos and sin [B, T, D], the same
// operations per element in x's dtype as the formula below (so the same rounding). Recorded as
// one operator for profile.h's kernel counts. Returns a contiguous [B, H, T, D].
at::Tensor rope_cpu(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  at::RecordFunction guard(at::RecordScope::FUNCTION);
  if (guard.isActive()) guard.before("ltrun::rope");
  const at::Tensor c = cos.contiguous(), s = sin.contiguous();
  const int64_t B = x.size(0), H = x.size(1), T = x.size(2), D = x.size(3);
  at::Tensor y = at::empty({B, H, T, D}, x.options().memory_format(at::MemoryFormat::Contiguous));
  const int64_t sb = x.stride(0), sh = x.stride(1), st = x.stride(2);
  AT_DISPATCH_FLOATING_TYPES_AND(at::kBFloat16, x.scalar_type(), "ltrun::rope", [&] {
    const scalar_t* xp = x.data_ptr<scalar_t>();
    const scalar_t* cp = c.data_ptr<scalar_t>();
    const scalar_t* sp = s.data_ptr<scalar_t>();
    scalar_t* yp = y.data_ptr<scalar_t>();
    at::parallel_for(0, B * H * T, 64, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        const int64_t b = r / (H * T), h = (r / T) % H, i = r % T;
        const scalar_t* xr = xp + b * sb + h * sh + i * st;
        const scalar_t* cr = cp + (b * T + i) * D;
        const scalar_t* sr = sp + (b * T + i) * D;
        rope_row(xr, cr, sr, yp + r * D, D);
      }
    });
  });
  return y;
}

}  // namespace

at::Tensor apply_rope(const at::Tensor& x, const RopeTables& t) {
  if (x.device().is_cpu() && !at::GradMode::is_enabled() && x.dim() == 4 && x.stride(-1) == 1 &&
      x.size(-1) % 2 == 0 && (x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16) &&
      t.cos.scalar_type() == x.scalar_type() && t.sin.scalar_type() == x.scalar_type() &&
      t.cos.dim() == 3 && t.cos.size(0) == x.size(0) && t.cos.size(1) == x.size(2) &&
      t.cos.size(2) == x.size(3) && t.sin.sizes() == t.cos.sizes())
    return rope_cpu(x, t.cos, t.sin);
  const int64_t half = x.size(-1) / 2;
  const at::Tensor rotated = at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * t.cos.unsqueeze(1) + rotated * t.sin.unsqueeze(1);
}

namespace {
std::string shape(at::IntArrayRef s) { return fmt::format("[{}]", fmt::join(s, ", ")); }
bool cpu_inference(const at::Tensor& x) {
  return x.device().is_cpu() && !at::GradMode::is_enabled() &&
         (x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16);
}
// a weight or table that the fused loops can read beside x
bool same_kind(const at::Tensor& w, const at::Tensor& x) {
  return !w.defined() || (w.device() == x.device() && w.scalar_type() == x.scalar_type());
}
}  // namespace

bool qkv_heads_fused(const at::Tensor& q, const at::Tensor& q_norm, const at::Tensor& k_norm,
                     const RopeTables* rope) {
  if (!cpu_inference(q) || q.dim() != 4 || !same_kind(q_norm, q) || !same_kind(k_norm, q)) return false;
  if (rope)
    return rope->cos.scalar_type() == q.scalar_type() && rope->sin.scalar_type() == q.scalar_type() &&
           rope->cos.dim() == 3 && rope->cos.size(0) == q.size(0) && rope->cos.size(1) == q.size(1) &&
           rope->cos.size(2) == q.size(3) && rope->sin.sizes() == rope->cos.sizes() && q.size(3) % 2 == 0;
  return true;
}

// One pass over the new tokens' heads: per row, the q/k norm (kernels::rmsnorm_row, as
// rms_norm's CPU loop), RoPE (rope_row, as apply_rope's CPU pass) and the write to its place
// (q's [B, H, T, D] output, k_out, v_out). The plain path is five to six kernels: two norms,
// two rotations, two cache copies. Recorded as one operator for profile.h's kernel counts.
at::Tensor qkv_heads(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const at::Tensor& q_norm, const at::Tensor& k_norm, double eps,
                     const RopeTables* rope, const at::Tensor& k_out, const at::Tensor& v_out,
                     const at::Tensor& write_at) {
  const int64_t B = q.size(0), T = q.size(1), H = q.size(2), KV = k.size(2), D = q.size(3);
  LT_CHECK(qkv_heads_fused(q, q_norm, k_norm, rope), "qkv_heads: inputs of shape {} do not qualify for the fused pass",
           shape(q.sizes()));
  for (const at::Tensor* t : {&q, &k, &v, &k_out, &v_out})
    LT_CHECK(t->dim() == 4 && t->stride(-1) == 1 && t->size(-1) == D && t->scalar_type() == q.scalar_type() &&
                 t->is_cpu(),
             "qkv_heads: every tensor needs [.., {}] {} with a contiguous last dimension, found {}", D,
             c10::toString(q.scalar_type()), shape(t->sizes()));
  // without write_at k_out holds exactly the new positions; with it, a whole cache of W
  const int64_t W = write_at.defined() ? k_out.size(2) : T;
  LT_CHECK(k.sizes() == v.sizes() && k.size(0) == B && k.size(1) == T &&
               k_out.sizes() == at::IntArrayRef({B, KV, W, D}) && v_out.sizes() == k_out.sizes(),
           "qkv_heads: k {} / v {} / k_out {} / v_out {} do not match q {}", shape(k.sizes()),
           shape(v.sizes()), shape(k_out.sizes()), shape(v_out.sizes()), shape(q.sizes()));
  at::Tensor at_pos;  // row b's first position in k_out / v_out
  if (write_at.defined()) {
    LT_CHECK(write_at.dim() == 1 && write_at.size(0) == B && write_at.scalar_type() == at::kLong && write_at.is_cpu(),
             "qkv_heads: write_at must be int64 [{}] on the CPU, found {} {}", B, shape(write_at.sizes()),
             c10::toString(write_at.scalar_type()));
    at_pos = write_at.contiguous();
    const int64_t* p = at_pos.data_ptr<int64_t>();
    for (int64_t b = 0; b < B; ++b)
      LT_CHECK(p[b] >= 0 && p[b] + T <= W, "qkv_heads: row {} writes positions {}..{} of a cache of {}", b, p[b],
               p[b] + T - 1, W);
  }
  const int64_t* at_p = at_pos.defined() ? at_pos.data_ptr<int64_t>() : nullptr;
  at::RecordFunction guard(at::RecordScope::FUNCTION);
  if (guard.isActive()) guard.before("ltrun::qkv_heads");
  at::Tensor y = at::empty({B, H, T, D}, q.options().memory_format(at::MemoryFormat::Contiguous));
  at::Tensor cos, sin;
  if (rope) cos = rope->cos.contiguous(), sin = rope->sin.contiguous();
  const at::Tensor qn = q_norm.defined() ? q_norm.contiguous() : at::Tensor();
  const at::Tensor kn = k_norm.defined() ? k_norm.contiguous() : at::Tensor();
  const int64_t per = H + 2 * KV;  // rows per token: q heads, k heads, v heads
  AT_DISPATCH_FLOATING_TYPES_AND(at::kBFloat16, q.scalar_type(), "ltrun::qkv_heads", [&] {
    using T_ = scalar_t;
    const T_* cp = rope ? cos.data_ptr<T_>() : nullptr;
    const T_* sp = rope ? sin.data_ptr<T_>() : nullptr;
    const T_* qw = qn.defined() ? qn.data_ptr<T_>() : nullptr;
    const T_* kw = kn.defined() ? kn.data_ptr<T_>() : nullptr;
    at::parallel_for(0, B * T * per, 16, [&](int64_t lo, int64_t hi) {
      std::vector<T_> tmp(static_cast<size_t>(D));
      for (int64_t r = lo; r < hi; ++r) {
        const int64_t b = r / (T * per), i = (r / per) % T, j = r % per;
        const at::Tensor* src;
        int64_t head;
        T_* dst;
        const T_* w;
        bool rotate;
        if (j < H) {
          src = &q, head = j, w = qw, rotate = true;
          dst = y.data_ptr<T_>() + ((b * H + head) * T + i) * D;
        } else if (j < H + KV) {
          src = &k, head = j - H, w = kw, rotate = true;
          const int64_t t = (at_p ? at_p[b] : 0) + i;
          dst = k_out.data_ptr<T_>() + b * k_out.stride(0) + head * k_out.stride(1) + t * k_out.stride(2);
        } else {
          src = &v, head = j - H - KV, w = nullptr, rotate = false;
          const int64_t t = (at_p ? at_p[b] : 0) + i;
          dst = v_out.data_ptr<T_>() + b * v_out.stride(0) + head * v_out.stride(1) + t * v_out.stride(2);
        }
        const T_* x = src->data_ptr<T_>() + b * src->stride(0) + i * src->stride(1) + head * src->stride(2);
        rotate = rotate && cp;
        if (w) {
          kernels::rmsnorm_row(x, w, rotate ? tmp.data() : dst, D, eps);
          x = tmp.data();
        }
        if (rotate)
          rope_row(x, cp + (b * T + i) * D, sp + (b * T + i) * D, dst, D);
        else if (!w)
          std::copy(x, x + D, dst);
      }
    });
  });
  return y;
}

// --- attention ---------------------------------------------------------------------------

at::Tensor visible_keys(const at::Tensor& key_mask, int64_t T, int64_t S) {
  at::Tensor causal = at::ones({T, S}, key_mask.options().dtype(at::kBool)).tril(S - T);
  return causal.unsqueeze(0).logical_and(key_mask.to(at::kBool).unsqueeze(1)).unsqueeze(1);
}

bool have_sdpa() { return TORCH_VERSION_MAJOR >= 2; }

bool sdpa_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("LTRUN_ATTENTION");
    const std::string v = e ? e : "";
    LT_CHECK(v.empty() || v == "sdpa" || v == "eager",
             "LTRUN_ATTENTION must be \"sdpa\" or \"eager\", found \"{}\"", v);
    return have_sdpa() && v != "eager";
  }();
  return on;
}

namespace {

// the most negative finite value: -inf would turn rows with no visible key (left padding)
// into NaN, and NaN times a zero attention weight still poisons the rows that read them
double lowest(at::ScalarType t) {
  switch (t) {
    case at::kBFloat16: return -3.38953138925153547590470800371487866880e38;
    case at::kHalf: return -65504.0;
    case at::kDouble: return std::numeric_limits<double>::lowest();
    default: return std::numeric_limits<float>::lowest();
  }
}

// 0 where visible, lowest(dtype) elsewhere; `visible` undefined means causal
at::Tensor additive_mask(const at::Tensor& visible, int64_t T, int64_t S,
                         const at::TensorOptions& o) {
  const at::Tensor v = visible.defined()
                           ? visible
                           : at::ones({T, S}, o.dtype(at::kBool)).tril(S - T).view({1, 1, T, S});
  return at::zeros(v.sizes(), o).masked_fill(v.logical_not(), lowest(o.dtype().toScalarType()));
}

}  // namespace

namespace {

// Decode attention (one query per row) for inference on the CPU in one pass per head: q.K,
// the scale, the visible-key mask, softmax and .V, where the plain path is the mask's three
// kernels (built in every block), two batched products and a softmax. Per element it follows
// the explicit path below: each score rounded to q's dtype, scaled in that dtype, then fp32
// with the mask's lowest() added, softmax in fp32, probabilities rounded to q's dtype, the
// weighted sum in fp32 rounded once. Its sums run in another order than BLAS's (and SDPA's),
// so it equals them within rounding, not bit for bit (tests/model/test_fused.cpp). Returns
// [B, H, 1, D] laid out as [B, 1, H, D], so the caller's transpose back is a view.
at::Tensor decode_attention_cpu(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                const at::Tensor& visible) {
  at::RecordFunction guard(at::RecordScope::FUNCTION);
  if (guard.isActive()) guard.before("ltrun::decode_attention");
  const int64_t B = q.size(0), H = q.size(1), D = q.size(3), KV = k.size(1), S = k.size(2);
  const int64_t rep = H / KV;
  at::Tensor y = at::empty({B, 1, H, D}, q.options().memory_format(at::MemoryFormat::Contiguous));
  const bool* vis = visible.defined() ? visible.data_ptr<bool>() : nullptr;
  const int64_t vis_b = visible.defined() ? visible.stride(0) : 0, vis_s = visible.defined() ? visible.stride(3) : 0;
  const float low = std::numeric_limits<float>::lowest();
  AT_DISPATCH_FLOATING_TYPES_AND(at::kBFloat16, q.scalar_type(), "ltrun::decode_attention", [&] {
    using T_ = scalar_t;
    // ATen multiplies a tensor by a scalar in fp32 for fp32 and bf16 (fp64 for fp64)
    using acc_t = std::conditional_t<std::is_same_v<T_, double>, double, float>;
    const acc_t scale = static_cast<acc_t>(std::pow(double(D), -0.5));
    const T_* qp = q.data_ptr<T_>();
    const T_* kp = k.data_ptr<T_>();
    const T_* vp = v.data_ptr<T_>();
    T_* yp = y.data_ptr<T_>();
    at::parallel_for(0, B * H, 1, [&](int64_t lo, int64_t hi) {
      std::vector<float> p(static_cast<size_t>(S));
      std::vector<float> acc(static_cast<size_t>(D));
      for (int64_t r = lo; r < hi; ++r) {
        const int64_t b = r / H, h = r % H, g = h / rep;
        const T_* qr = qp + b * q.stride(0) + h * q.stride(1);
        const T_* kb = kp + b * k.stride(0) + g * k.stride(1);
        const T_* vb = vp + b * v.stride(0) + g * v.stride(1);
        float mx = low;
        for (int64_t j = 0; j < S; ++j) {
          const T_* kr = kb + j * k.stride(2);
          float dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += static_cast<float>(qr[d]) * static_cast<float>(kr[d]);
          const T_ s = static_cast<T_>(static_cast<acc_t>(static_cast<T_>(dot)) * scale);
          float x = static_cast<float>(s);
          if (vis && !vis[b * vis_b + j * vis_s]) x += low;
          p[size_t(j)] = x;
          mx = std::max(mx, x);
        }
        float sum = 0;
        for (int64_t j = 0; j < S; ++j) sum += (p[size_t(j)] = std::exp(p[size_t(j)] - mx));
        std::fill(acc.begin(), acc.end(), 0.f);
        for (int64_t j = 0; j < S; ++j) {
          const float pj = static_cast<float>(static_cast<T_>(p[size_t(j)] / sum));
          const T_* vr = vb + j * v.stride(2);
          for (int64_t d = 0; d < D; ++d) acc[size_t(d)] += pj * static_cast<float>(vr[d]);
        }
        T_* yr = yp + (b * H + h) * D;
        for (int64_t d = 0; d < D; ++d) yr[d] = static_cast<T_>(acc[size_t(d)]);
      }
    });
  });
  return y.transpose(1, 2);
}

}  // namespace

bool decode_attention_fused(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const at::Tensor& visible) {
  if (!cpu_inference(q) || q.dim() != 4 || q.size(2) != 1 || k.dim() != 4 || v.sizes() != k.sizes() ||
      !same_kind(k, q) || !same_kind(v, q) || q.stride(-1) != 1 || k.stride(-1) != 1 || v.stride(-1) != 1 ||
      k.size(0) != q.size(0) || k.size(3) != q.size(3) || k.size(1) == 0 || q.size(1) % k.size(1) != 0)
    return false;
  return !visible.defined() ||
         (visible.device().is_cpu() && visible.scalar_type() == at::kBool && visible.dim() == 4 &&
          visible.size(0) == q.size(0) && visible.size(1) == 1 && visible.size(2) == 1 &&
          visible.size(3) == k.size(2));
}

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const at::Tensor& visible, bool sdpa) {
  // one query per row on the CPU for inference: the fused pass (a plain causal T = 1 sees every key)
  if (decode_attention_fused(q, k, v, visible)) return decode_attention_cpu(q, k, v, visible);
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3);
  const int64_t KV = k.size(1), S = k.size(2);
  LT_CHECK(H % KV == 0, "attention: {} query heads are not a multiple of {} kv heads", H, KV);
  const int64_t rep = H / KV;
  const bool need_mask = visible.defined() || T > 1;
  // checked on every build, so a mistyped LTRUN_ATTENTION is an error on 1.x builds too
  [[maybe_unused]] const bool use_sdpa = sdpa && sdpa_enabled();
#if TORCH_VERSION_MAJOR >= 2
  if (use_sdpa && T == 1 && rep > 1) {
    // One query per row (a decode step): the rep query heads of a kv head are that head's
    // queries, [B, KV, rep, D], against the unexpanded keys and values, as the explicit path
    // below. Expanding K and V (reshape copies an expanded tensor) wrote the whole cache once
    // per query head, every block, every step: ~7 GB a step at batch 64 of Qwen3-0.6B.
    c10::optional<at::Tensor> mask;
    if (visible.defined()) mask = additive_mask(visible, 1, S, q.options());  // [B, 1, 1, S]: over KV and rep
    return at::scaled_dot_product_attention(q.reshape({B, KV, rep, D}), k, v, mask, 0.0, false)
        .reshape({B, H, 1, D});
  }
  if (use_sdpa) {
    auto expand = [&](const at::Tensor& x) {
      return rep == 1 ? x : x.unsqueeze(2).expand({B, KV, rep, S, D}).reshape({B, H, S, D});
    };
    // the fused kernels take is_causal only for square masks; others get an additive mask
    const bool square_causal = !visible.defined() && T == S && T > 1;
    c10::optional<at::Tensor> mask;
    if (need_mask && !square_causal) mask = additive_mask(visible, T, S, q.options());
    return at::scaled_dot_product_attention(q, expand(k), expand(v), mask, 0.0, square_causal);
  }
#endif
  // Grouped heads without copying k and v: the `rep` query heads of one kv head are stacked
  // along the query axis, so one batched matmul per kv head serves them all.
  const at::Tensor qg = q.reshape({B, KV, rep * T, D});
  at::Tensor scores = (at::matmul(qg, k.transpose(-1, -2)) * std::pow(double(D), -0.5))
                          .view({B, H, T, S})
                          .to(accumulate_type(q.scalar_type()));
  if (need_mask) scores = scores + additive_mask(visible, T, S, scores.options());
  const at::Tensor probs = at::softmax(scores, -1).to(q.scalar_type());
  return at::matmul(probs.view({B, KV, rep * T, S}), v).view({B, H, T, D});
}

namespace {

// silu(gate) * up for inference on the CPU in one pass (ATen: two kernels, silu then the
// product), with their operations per element: silu in fp32 (x / (1 + exp(-x)), as ATen's
// kernel; its vectorised exp may differ from std::exp by an fp32 ulp) rounded to x's dtype,
// then the product in fp32 rounded once.
at::Tensor silu_mul_cpu(const at::Tensor& gate, const at::Tensor& up) {
  at::RecordFunction guard(at::RecordScope::FUNCTION);
  if (guard.isActive()) guard.before("ltrun::silu_mul");
  at::Tensor y = at::empty(gate.sizes(), gate.options().memory_format(at::MemoryFormat::Contiguous));
  const int64_t cols = gate.size(-1), rows = cols ? gate.numel() / cols : 0, nd = gate.dim();
  AT_DISPATCH_FLOATING_TYPES_AND(at::kBFloat16, gate.scalar_type(), "ltrun::silu_mul", [&] {
    using T_ = scalar_t;
    const T_* gp = gate.data_ptr<T_>();
    const T_* up_ = up.data_ptr<T_>();
    T_* yp = y.data_ptr<T_>();
    at::parallel_for(0, rows, 16, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        int64_t og = 0, ou = 0, rest = r;  // row r's offsets through the strides (last dim excluded)
        for (int64_t d = nd - 2; d >= 0; --d) {
          og += (rest % gate.size(d)) * gate.stride(d);
          ou += (rest % gate.size(d)) * up.stride(d);
          rest /= gate.size(d);
        }
        const T_* g = gp + og;
        const T_* u = up_ + ou;
        T_* o = yp + r * cols;
        for (int64_t j = 0; j < cols; ++j) {
          const float x = static_cast<float>(g[j]);
          const T_ s = static_cast<T_>(x / (1.f + std::exp(-x)));
          o[j] = static_cast<T_>(static_cast<float>(s) * static_cast<float>(u[j]));
        }
      }
    });
  });
  return y;
}

}  // namespace

at::Tensor silu_mul(const at::Tensor& gate, const at::Tensor& up) {
  if (cpu_inference(gate) && same_kind(up, gate) && gate.sizes() == up.sizes() && gate.dim() >= 1 &&
      gate.stride(-1) == 1 && up.stride(-1) == 1)
    return silu_mul_cpu(gate, up);
  return at::silu(gate) * up;
}

at::Tensor swiglu(const at::Tensor& x, const at::Tensor& gate, const at::Tensor& up,
                  const at::Tensor& down, const at::Tensor& gate_bias, const at::Tensor& up_bias,
                  const at::Tensor& down_bias) {
  return at::linear(silu_mul(at::linear(x, gate, gate_bias), at::linear(x, up, up_bias)), down, down_bias);
}

}  // namespace ltrun::model
