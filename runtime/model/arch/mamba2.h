// runtime/model/arch/mamba2.h (internal; tests use it): the Mamba2 mixer of nemotron_h as HF
// transformers' torch path computes it, and its decode state. The state-space recurrence
//     s_t = exp(dt_t * A) * s_{t-1} + dt_t * x_t (outer) B_t,    y_t = s_t . C_t + D * x_t
// is run in two forms that must agree: the chunked SSD scan (prefill: matmuls within chunks
// of `chunk` tokens, a short recurrence across chunks) and one step at a time (decode).
#pragma once
#include "runtime/model/arch.h"

namespace ltrun::model {

struct Mamba2Weights {
  at::Tensor in_proj, in_bias, conv_w, conv_b, dt_bias, A_log, D, norm, out_proj, out_bias;
  // names after `prefix` ("mixer."), all ParamPart::Mixer; A_log, D, dt_bias, norm and
  // biases not decayed
  void slots(const Config& c, std::vector<Slot>& out, const std::string& prefix);
};

// What a Mamba2 layer keeps between steps: the last conv_kernel - 1 inputs of the causal
// conv [B, conv_dim, K-1] and the SSM state [B, heads, head_dim, state] in fp32 (fp64 for
// an fp64 model).
struct Mamba2State : LayerState {
  at::Tensor conv, ssm;
  void select_rows(const at::Tensor& rows) override;
};

// a [..., Q] → [..., Q, Q] with out[i][j] = a[j+1] + ... + a[i] for i >= j and -inf above the
// diagonal: exp(out) is the decay from step j to step i (also Gated DeltaNet's chunks).
at::Tensor segsum(const at::Tensor& a);

// The scan without the D term, fp32. x [b, T, h, p], dt [b, T, h] (after softplus), A [h]
// (negative), B and C [b, T, h, n] (groups already expanded to heads). initial: [b, h, p, n]
// or undefined (zeros). Returns y [b, T, h, p]; the state after the last token goes to
// *final_state when given.
at::Tensor ssd_chunked(const at::Tensor& x, const at::Tensor& dt, const at::Tensor& A,
                       const at::Tensor& B, const at::Tensor& C, int64_t chunk,
                       const at::Tensor& initial, at::Tensor* final_state);
// One token: x [b, h, p], dt [b, h], B and C [b, h, n]; `state` [b, h, p, n] is advanced in
// place (a new tensor is assigned). Returns y [b, h, p] (without D).
at::Tensor ssd_step(const at::Tensor& x, const at::Tensor& dt, const at::Tensor& A,
                    const at::Tensor& B, const at::Tensor& C, at::Tensor& state);

// Which implementation the mixer runs. Ops: tensor ops (any device and dtype, autograd; the
// chunked scan for prefill, the step form for one token after a state). Fused: one CPU pass
// from in_proj's output to out_proj's input with the scan as its recurrence (fp32 or fp64,
// no gradients): a 4-layer stack at hidden 256 prefills 2.6x (64 tokens) to 4.9x (2048) as fast
// (README, Layer kinds). Auto: Fused where it applies.
enum class Mamba2Path { Auto, Ops, Fused };
bool mamba2_fused_applies(const at::Tensor& x, const Mamba2Weights& w);

// The mixer: x [B, T, hidden] (normalised) → out_proj's output [B, T, hidden]. token_mask
// [B, T] bool zeroes padded positions as HF does (undefined: none). state: null, or this
// layer's state, read and extended (one new token takes the step form, more the chunked
// scan from the stored state).
at::Tensor mamba2_mixer(const at::Tensor& x, const Mamba2Weights& w, const Mamba2Config& m,
                        double eps, const at::Tensor& token_mask, Mamba2State* state,
                        Mamba2Path path = Mamba2Path::Auto);

}  // namespace ltrun::model
