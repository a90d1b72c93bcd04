// runtime/model/arch/gated_deltanet.h (internal; tests use it): the Gated DeltaNet mixer of
// qwen3_5's linear_attention layers as HF transformers' torch path computes it
// (Qwen3_5GatedDeltaNet), and its decode state. Per value head, with a state S [dk, dv],
// a decay g_t <= 0 (log space) and a write strength beta_t in (0, 1):
//     S <- exp(g_t) S;   S <- S + k_t (beta_t (v_t - S^T k_t))^T;   o_t = S^T q_t / sqrt(dk)
// (the delta rule: the value S already holds for k_t is replaced, not added to). It runs in
// two forms that must agree: chunked (prefill: within a chunk of Q tokens the writes are the
// solution of one unit lower-triangular system, a short recurrence carries S across chunks)
// and one token at a time (decode).
#pragma once
#include "runtime/model/arch.h"

namespace ltrun::model {

struct GatedDeltaNetWeights {
  at::Tensor in_qkv, in_z, in_b, in_a, conv_w, dt_bias, A_log, norm, out_proj;
  // names after `prefix` ("linear_attn."), in HF's state_dict order, all ParamPart::Mixer;
  // dt_bias, A_log and the norm are not decayed
  void slots(const Config& c, std::vector<Slot>& out, const std::string& prefix);
};

// What a Gated DeltaNet layer keeps between steps: the last conv_kernel - 1 inputs of the
// causal conv [B, conv_dim, K-1] (model dtype) and the state S [B, v_heads, dk, dv] in fp32
// (fp64 for an fp64 model).
struct GatedDeltaNetState : LayerState {
  at::Tensor conv, recurrent;
  void select_rows(const at::Tensor& rows) override;
  void append_rows(const LayerState& other, int64_t past, int64_t other_past, int64_t width) override;
};

// The delta rule, chunked, in q's dtype (fp32 or fp64). q and k [b, T, h, dk] (L2-normalised,
// key heads already repeated to the value heads), v [b, T, h, dv], g [b, T, h] (log decay),
// beta [b, T, h]. q is scaled by 1/sqrt(dk) here. initial: [b, h, dk, dv] or undefined
// (zeros). Returns o [b, T, h, dv]; the state after the last token goes to *final_state
// when given.
at::Tensor gated_delta_chunked(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const at::Tensor& g, const at::Tensor& beta, int64_t chunk,
                               const at::Tensor& initial, at::Tensor* final_state);
// One token: q, k [b, h, dk], v [b, h, dv], g and beta [b, h]; `state` [b, h, dk, dv] is
// advanced (a new tensor is assigned). Returns o [b, h, dv].
at::Tensor gated_delta_step(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const at::Tensor& g, const at::Tensor& beta, at::Tensor& state);

// The mixer: x [B, T, hidden] (normalised) → out_proj's output [B, T, hidden]. token_mask
// [B, T] bool zeroes padded inputs as HF does (undefined: none). state: null, or this
// layer's state, read and extended (one new token takes the step form, more the chunked form
// from the stored state).
at::Tensor gated_deltanet_mixer(const at::Tensor& x, const GatedDeltaNetWeights& w,
                                const GatedDeltaNetConfig& m, double eps,
                                const at::Tensor& token_mask, GatedDeltaNetState* state);

}  // namespace ltrun::model
