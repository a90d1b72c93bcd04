// runtime/model/arch/gated_deltanet.cpp: the Gated DeltaNet mixer (in_proj_qkv, causal
// depthwise conv with SiLU, L2-normalised q and k, beta = sigmoid(b), decay g = -exp(A_log) *
// softplus(a + dt_bias), the delta rule, a gated RMSNorm per head, out_proj) following
// transformers' Qwen3_5GatedDeltaNet and its torch fallbacks.
#include "runtime/model/arch/gated_deltanet.h"

#include <ATen/ATen.h>

#include <cmath>

#include "runtime/core/error.h"
#include "runtime/model/arch/mamba2.h"

namespace ltrun::model {

void GatedDeltaNetState::select_rows(const at::Tensor& rows) {
  if (conv.defined()) conv = conv.index_select(0, rows.to(conv.device()));
  if (recurrent.defined()) recurrent = recurrent.index_select(0, rows.to(recurrent.device()));
}

void GatedDeltaNetState::append_rows(const LayerState& other_state, int64_t, int64_t, int64_t) {
  const auto* other = dynamic_cast<const GatedDeltaNetState*>(&other_state);
  LT_CHECK(other && conv.defined() && recurrent.defined() && other->conv.defined() && other->recurrent.defined(),
           "decode state: a Gated DeltaNet state can take only the rows of another one that has run");
  conv = at::cat({conv, other->conv.to(conv.device())});
  recurrent = at::cat({recurrent, other->recurrent.to(recurrent.device())});
}

void GatedDeltaNetWeights::slots(const Config& c, std::vector<Slot>& out, const std::string& p) {
  const GatedDeltaNetConfig& m = c.gdn;
  const int64_t H = c.hidden_size, hv = m.v_heads;
  out.push_back({p + "dt_bias", {hv}, ParamPart::Mixer, Init::Ones, false, &dt_bias});
  out.push_back({p + "A_log", {hv}, ParamPart::Mixer, Init::ALogUniform, false, &A_log});
  out.push_back({p + "conv1d.weight", {m.conv_dim(), 1, m.conv_kernel}, ParamPart::Mixer, Init::Normal, true, &conv_w});
  out.push_back({p + "norm.weight", {m.v_head_dim}, ParamPart::Mixer, Init::Ones, false, &norm});
  out.push_back({p + "out_proj.weight", {H, m.value_dim()}, ParamPart::Mixer, Init::Normal, true, &out_proj});
  out.push_back({p + "in_proj_qkv.weight", {m.conv_dim(), H}, ParamPart::Mixer, Init::Normal, true, &in_qkv});
  out.push_back({p + "in_proj_z.weight", {m.value_dim(), H}, ParamPart::Mixer, Init::Normal, true, &in_z});
  out.push_back({p + "in_proj_b.weight", {hv, H}, ParamPart::Mixer, Init::Normal, true, &in_b});
  out.push_back({p + "in_proj_a.weight", {hv, H}, ParamPart::Mixer, Init::Normal, true, &in_a});
}

namespace {

// [b, T, h, d] → [b, h, c, Q, d] (zero-padded to c * Q tokens); [b, T, h] → [b, h, c, Q]
at::Tensor to_chunks(const at::Tensor& t, int64_t pad, int64_t Q) {
  at::Tensor x = t.transpose(1, 2);  // [b, h, T, ...]
  if (pad > 0) {
    std::vector<int64_t> s = x.sizes().vec();
    s[2] = pad;
    x = at::cat({x, at::zeros(s, x.options())}, 2);
  }
  std::vector<int64_t> s = x.sizes().vec();
  s[2] = x.size(2) / Q;
  s.insert(s.begin() + 3, Q);
  return x.reshape(s);
}

// HF's l2norm: x / sqrt(sum(x^2) + 1e-6) over the last dim
at::Tensor l2norm(const at::Tensor& x) { return x * at::rsqrt(x.pow(2).sum(-1, true) + 1e-6); }

}  // namespace

at::Tensor gated_delta_chunked(const at::Tensor& q_in, const at::Tensor& k_in, const at::Tensor& v_in,
                               const at::Tensor& g_in, const at::Tensor& beta_in, int64_t chunk,
                               const at::Tensor& initial, at::Tensor* final_state) {
  const int64_t b = q_in.size(0), T = q_in.size(1), h = q_in.size(2), dk = q_in.size(3),
                dv = v_in.size(3), Q = chunk, pad = (Q - T % Q) % Q;
  const at::Tensor q = to_chunks(q_in * (1.0 / std::sqrt(double(dk))), pad, Q);  // [b, h, c, Q, dk]
  const at::Tensor k = to_chunks(k_in, pad, Q);
  const at::Tensor v = to_chunks(v_in, pad, Q);                  // [b, h, c, Q, dv]
  const at::Tensor g = to_chunks(g_in, pad, Q);                  // [b, h, c, Q]
  const at::Tensor beta = to_chunks(beta_in, pad, Q).unsqueeze(-1);  // [b, h, c, Q, 1]
  const int64_t c = q.size(2);

  // decay[t][s] = exp(g_{s+1} + ... + g_t) for s <= t (from the write at s to step t), else 0;
  // gamma_t = g_1 + ... + g_t (from the chunk's entering state to step t)
  const at::Tensor decay = at::exp(segsum(g));                  // [b, h, c, Q, Q]
  const at::Tensor gamma = g.cumsum(-1).unsqueeze(-1);           // [b, h, c, Q, 1]
  const at::Tensor to_end = decay.select(-2, Q - 1).unsqueeze(-1);  // [b, h, c, Q, 1]

  // The writes u_t = beta_t (v_t - S_{t-1}^T k_t) within a chunk solve
  //   u_t + beta_t sum_{s<t} decay[t][s] (k_t . k_s) u_s = beta_t v_t - beta_t e^gamma_t S0^T k_t,
  // a unit lower-triangular system: u = X_v - X_k S0 with [X_v, X_k] its solution for the
  // right-hand sides [beta v, beta e^gamma k].
  const at::Tensor kb = k * beta;
  const at::Tensor strictly_below =
      at::ones({Q, Q}, q.options().dtype(at::kBool)).tril(-1);
  const at::Tensor L = (at::matmul(kb, k.transpose(-1, -2)) * decay).masked_fill(strictly_below.logical_not(), 0);
  const at::Tensor X = at::linalg_solve_triangular(L, at::cat({v * beta, kb * at::exp(gamma)}, -1),
                                                   /*upper=*/false, /*left=*/true, /*unitriangular=*/true);
  const at::Tensor Xv = X.narrow(-1, 0, dv), Xk = X.narrow(-1, dv, dk);
  const at::Tensor scores = at::matmul(q, k.transpose(-1, -2)) * decay;  // [b, h, c, Q, Q], causal
  const at::Tensor q_from_start = q * at::exp(gamma);
  const at::Tensor k_to_end = k * to_end;

  at::Tensor S = initial.defined() ? initial.to(q.scalar_type())
                                   : at::zeros({b, h, dk, dv}, q.options());
  std::vector<at::Tensor> outs;
  outs.reserve(size_t(c));
  for (int64_t i = 0; i < c; ++i) {
    const at::Tensor u = Xv.select(2, i) - at::matmul(Xk.select(2, i), S);  // [b, h, Q, dv]
    outs.push_back(at::matmul(q_from_start.select(2, i), S) + at::matmul(scores.select(2, i), u));
    S = S * at::exp(gamma.select(2, i).select(-2, Q - 1)).unsqueeze(-1) +
        at::matmul(k_to_end.select(2, i).transpose(-1, -2), u);
  }
  if (final_state) *final_state = S;
  return at::cat(outs, 2).narrow(2, 0, T).transpose(1, 2);  // [b, T, h, dv]
}

at::Tensor gated_delta_step(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const at::Tensor& g, const at::Tensor& beta, at::Tensor& state) {
  const double scale = 1.0 / std::sqrt(double(q.size(-1)));
  const at::Tensor decayed = state * at::exp(g).unsqueeze(-1).unsqueeze(-1);
  const at::Tensor held = at::matmul(k.unsqueeze(-2), decayed).squeeze(-2);  // S^T k [b, h, dv]
  const at::Tensor write = (v - held) * beta.unsqueeze(-1);
  state = decayed + k.unsqueeze(-1) * write.unsqueeze(-2);
  return at::matmul((q * scale).unsqueeze(-2), state).squeeze(-2);
}

at::Tensor gated_deltanet_mixer(const at::Tensor& x_in, const GatedDeltaNetWeights& w,
                                const GatedDeltaNetConfig& m, double eps,
                                const at::Tensor& token_mask, GatedDeltaNetState* state) {
  const int64_t B = x_in.size(0), T = x_in.size(1), CD = m.conv_dim(), K = m.conv_kernel;
  const int64_t hk = m.k_heads, hv = m.v_heads, dk = m.k_head_dim, dv = m.v_head_dim;
  const auto dtype = x_in.scalar_type();
  const auto acc = at::promote_types(dtype, at::kFloat);  // fp32 as HF; fp64 for fp64 checks
  const at::Tensor x = token_mask.defined() ? x_in * token_mask.unsqueeze(-1).to(dtype) : x_in;
  const at::Tensor mixed = at::linear(x, w.in_qkv).transpose(1, 2);  // [B, CD, T]
  const at::Tensor z = at::linear(x, w.in_z).reshape({B, T, hv, dv});
  const at::Tensor beta = at::sigmoid(at::linear(x, w.in_b)).to(acc);
  const at::Tensor g =
      -at::exp(w.A_log.to(acc)) * at::softplus(at::linear(x, w.in_a).to(acc) + w.dt_bias.to(acc));

  // causal depthwise conv over the previous K-1 inputs (zeros at the start) and these, SiLU
  const at::Tensor prev = state && state->conv.defined() ? state->conv : at::zeros({B, CD, K - 1}, mixed.options());
  const at::Tensor full = at::cat({prev, mixed}, -1);
  if (state) state->conv = full.narrow(-1, full.size(-1) - (K - 1), K - 1).clone();
  const at::Tensor conv = at::silu(at::conv1d(full, w.conv_w, at::Tensor(), at::IntArrayRef{1}, at::IntArrayRef{0},
                                              at::IntArrayRef{1}, CD)).transpose(1, 2);  // [B, T, CD]
  auto heads = [&](int64_t from, int64_t n, int64_t d) { return conv.narrow(-1, from, n * d).reshape({B, T, n, d}).to(acc); };
  at::Tensor q = l2norm(heads(0, hk, dk)), k = l2norm(heads(hk * dk, hk, dk));
  const at::Tensor v = heads(2 * hk * dk, hv, dv);
  if (hv != hk) {
    q = q.repeat_interleave(hv / hk, 2);
    k = k.repeat_interleave(hv / hk, 2);
  }

  at::Tensor o;  // [B, T, hv, dv]
  if (state && state->recurrent.defined() && T == 1) {
    o = gated_delta_step(q.select(1, 0), k.select(1, 0), v.select(1, 0), g.select(1, 0), beta.select(1, 0),
                         state->recurrent).unsqueeze(1);
  } else {
    at::Tensor final_state;
    o = gated_delta_chunked(q, k, v, g, beta, m.chunk, state ? state->recurrent : at::Tensor(),
                            state ? &final_state : nullptr);
    if (state) state->recurrent = final_state;
  }
  // HF's Qwen3_5RMSNormGated: normalise o (fp32), cast, scale, times silu(z) in fp32, cast
  o = o.to(dtype).to(acc);
  const at::Tensor normed = (o * at::rsqrt(o.pow(2).mean(-1, true) + eps)).to(dtype);
  const at::Tensor gated = ((w.norm * normed).to(acc) * at::silu(z.to(acc))).to(dtype);
  return at::linear(gated.reshape({B, T, hv * dv}), w.out_proj);
}

}  // namespace ltrun::model
