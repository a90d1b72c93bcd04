// runtime/model/blocks.h: the blocks every architecture is built from (RMSNorm, RoPE,
// grouped-query attention, SwiGLU), as functions of tensors. Each follows the HF
// transformers implementation operation by operation, so fp32 results agree with it to
// rounding and bf16 results keep its fp32 islands (norm statistics, RoPE tables, softmax).
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace ltrun::model {

struct RopeScaling;

// HF's LlamaRMSNorm: x * rsqrt(mean(x^2) + eps) in fp32 (fp64 for fp64 x), cast back to x's
// dtype, times weight.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);
// Qwen3.5's (Gemma's) RMSNorm, whose weight stores the offset from 1: the normalised x times
// 1 + weight, both in fp32 (fp64 for fp64 x), then cast to x's dtype.
at::Tensor rms_norm_offset(const at::Tensor& x, const at::Tensor& weight, double eps);

// RoPE inverse frequencies ([dim/2] float32, CPU) and the factor cos/sin are scaled by (yarn),
// computed like transformers' modeling_rope_utils for each rope_type.
struct RopeFreqs {
  at::Tensor inv_freq;
  double attention_factor = 1.0;
};
RopeFreqs rope_freqs(const RopeScaling& s, double theta, int64_t dim,
                     int64_t max_position_embeddings);

// cos and sin ([B, T, dim], `dtype`) for integer positions [B, T], computed in fp32.
struct RopeTables {
  at::Tensor cos, sin;
};
RopeTables rope_tables(const RopeFreqs& f, const at::Tensor& position_ids, at::ScalarType dtype);
// x [B, heads, T, dim] rotated by half-split pairs (HF's rotate_half convention). On the CPU
// with grad mode off (fp32, bf16), one fused pass with the same per-element operations.
at::Tensor apply_rope(const at::Tensor& x, const RopeTables& t);

// q [B, T, H, D], k and v [B, T, KV, D] (the new tokens' heads of the projections; strided,
// with a contiguous last dimension) in one pass: q and k normalised (q_norm / k_norm, as
// rms_norm; undefined: none) and rotated (rope; null: none), k and v written to k_out and
// v_out ([B, KV, T, D], e.g. the KV cache's next T positions), q returned as a contiguous
// [B, H, T, D]. The same values as rms_norm then apply_rope under grad mode off. Only for
// inference on the CPU (fp32, bf16): qkv_heads_fused says whether q and the weights qualify.
// write_at (int64 [B] on the CPU, optional): k_out and v_out are whole caches [B, KV, W, D]
// and row b's tokens go to positions write_at[b].. (the static cache's step: each row at its
// own length, so no separate scatter of keys and values).
bool qkv_heads_fused(const at::Tensor& q, const at::Tensor& q_norm, const at::Tensor& k_norm,
                     const RopeTables* rope);
at::Tensor qkv_heads(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const at::Tensor& q_norm, const at::Tensor& k_norm, double eps,
                     const RopeTables* rope, const at::Tensor& k_out, const at::Tensor& v_out,
                     const at::Tensor& write_at = {});

// Which keys each query sees, bool [B, 1, T, S]: key j is visible to query i when
// j <= i + S - T (causal, the S - T earlier keys being cached) and key_mask[b, j] is set.
at::Tensor visible_keys(const at::Tensor& key_mask, int64_t T, int64_t S);

// Scaled dot-product attention with grouped-query heads: q [B, H, T, D], k and v
// [B, KV, S, D] with KV dividing H (query head h reads kv head h / (H / KV)). `visible` is
// from visible_keys, or undefined for plain causal masking. Scores and softmax are fp32 (fp64
// for fp64 inputs).
// One query per row (T = 1) on the CPU with grad mode off (fp32, bf16): one fused pass
// (decode_attention_fused says when), equal to the explicit path within rounding.
// sdpa: use at::scaled_dot_product_attention where LibTorch has it (2.x) and the
// environment allows it; else, and always on 1.x, an explicit matmul + softmax. Neither copies
// k and v per query head at T = 1 (the query heads of a kv head go together against it).
at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const at::Tensor& visible, bool sdpa = true);
bool have_sdpa();     // LibTorch >= 2.0
// have_sdpa() unless LTRUN_ATTENTION=eager (the explicit path, e.g. to check it against HF
// on a 2.x build); any value but "sdpa" or "eager" is an error naming the variable.
bool sdpa_enabled();
bool decode_attention_fused(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const at::Tensor& visible);

// silu(gate) * up; on the CPU with grad mode off (fp32, bf16), one pass (ATen's operations
// per element; silu's exp within an fp32 ulp of ATen's vectorised one).
at::Tensor silu_mul(const at::Tensor& gate, const at::Tensor& up);

// down(silu(gate(x)) * up(x)); biases may be undefined.
at::Tensor swiglu(const at::Tensor& x, const at::Tensor& gate, const at::Tensor& up,
                  const at::Tensor& down, const at::Tensor& gate_bias = {},
                  const at::Tensor& up_bias = {}, const at::Tensor& down_bias = {});

}  // namespace ltrun::model
