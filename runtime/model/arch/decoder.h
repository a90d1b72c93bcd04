// runtime/model/arch/decoder.h (internal): the attention sublayer shared by the decoder block
// (qwen3, qwen2, llama) and nemotron_h's attention layers, and its decode state.
#pragma once
#include "runtime/model/arch.h"

namespace ltrun::model {

// Keys and values of one attention layer, [B, kv_heads, capacity, head_dim]; the first
// `past` positions are valid.
struct KVState : LayerState {
  at::Tensor k, v;
  std::pair<at::Tensor, at::Tensor> append(const at::Tensor& k_new, const at::Tensor& v_new,
                                           int64_t past, int64_t capacity_hint);
  // Grows the buffers (if needed) for T more positions after `past` and returns those
  // positions' views [B, kv_heads, T, head_dim] for the caller to fill; then k and v's first
  // past + T positions are the keys and values so far.
  std::pair<at::Tensor, at::Tensor> reserve(int64_t B, int64_t heads, int64_t T, int64_t dim,
                                            const at::TensorOptions& o, int64_t past, int64_t capacity_hint);
  // A forward's keys and values [B, kv_heads, T, head_dim] into the state: at `past` (append),
  // or for a static cache (in.write_at) row b's at position write_at[b] of the preallocated
  // buffers, in place (a scatter: no reallocation, no host synchronisation). Returns the keys
  // and values to attend over: the first past + T positions, or all of a static cache's.
  std::pair<at::Tensor, at::Tensor> put(const at::Tensor& k_new, const at::Tensor& v_new, const LayerInput& in);
  std::unique_ptr<LayerState> prefix_rows(const std::vector<int64_t>& lengths,
                                          int64_t width) const override;
  void select_rows(const at::Tensor& rows) override;
  void append_rows(const LayerState& other, int64_t past, int64_t other_past, int64_t width) override;
  void cat_rows(const std::vector<const LayerState*>& others) override;
};

// q/k/v/o projections (biases and q/k norms as the config says) and grouped-query attention;
// RoPE when config.rope.
struct AttentionWeights {
  at::Tensor q, k, v, o, q_bias, k_bias, v_bias, o_bias, q_norm, k_norm;
  at::Tensor qkv, qkv_bias;  // q, k, v (and their biases) as views of one buffer (fuse())
  void fuse();
  // names after `prefix` ("self_attn.", "mixer."), all ParamPart::Mixer
  void slots(const Config& c, std::vector<Slot>& out, const std::string& prefix);
  // x [B, T, H] (normalised) → o_proj's output [B, T, H]; state: a KVState or null
  at::Tensor forward(const at::Tensor& x, const LayerInput& in, LayerState* state) const;
};

}  // namespace ltrun::model
