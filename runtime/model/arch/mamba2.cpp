// runtime/model/arch/mamba2.cpp: the Mamba2 mixer (in_proj, causal depthwise conv, SSD scan,
// gated group RMSNorm, out_proj) following transformers' NemotronHMamba2Mixer.torch_forward.
#include "runtime/model/arch/mamba2.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/core/error.h"

namespace ltrun::model {

void Mamba2State::select_rows(const at::Tensor& rows) {
  if (conv.defined()) conv = conv.index_select(0, rows.to(conv.device()));
  if (ssm.defined()) ssm = ssm.index_select(0, rows.to(ssm.device()));
}

void Mamba2Weights::slots(const Config& c, std::vector<Slot>& out, const std::string& p) {
  const Mamba2Config& m = c.mamba;
  const int64_t H = c.hidden_size, I = m.inner(), CD = m.conv_dim();
  const int64_t proj = I + CD + m.heads;  // gate z, conv input (x, B, C), dt
  out.push_back({p + "dt_bias", {m.heads}, ParamPart::Mixer, Init::DtBias, false, &dt_bias});
  out.push_back({p + "A_log", {m.heads}, ParamPart::Mixer, Init::ALog, false, &A_log});
  out.push_back({p + "D", {m.heads}, ParamPart::Mixer, Init::Ones, false, &D});
  out.push_back({p + "conv1d.weight", {CD, 1, m.conv_kernel}, ParamPart::Mixer, Init::Normal, true, &conv_w});
  if (m.conv_bias)
    out.push_back({p + "conv1d.bias", {CD}, ParamPart::Mixer, Init::Zeros, false, &conv_b});
  out.push_back({p + "in_proj.weight", {proj, H}, ParamPart::Mixer, Init::Normal, true, &in_proj});
  if (m.proj_bias)
    out.push_back({p + "in_proj.bias", {proj}, ParamPart::Mixer, Init::Zeros, false, &in_bias});
  out.push_back({p + "norm.weight", {I}, ParamPart::Mixer, Init::Ones, false, &norm});
  out.push_back({p + "out_proj.weight", {H, I}, ParamPart::Mixer, Init::Normal, true, &out_proj});
  if (m.proj_bias)
    out.push_back({p + "out_proj.bias", {H}, ParamPart::Mixer, Init::Zeros, false, &out_bias});
}

// Sums of a masked copy rather than differences of one cumsum, which would cancel badly.
at::Tensor segsum(const at::Tensor& a) {
  const int64_t Q = a.size(-1);
  std::vector<int64_t> sizes = a.sizes().vec();
  sizes.push_back(Q);
  const auto bool_opts = a.options().dtype(at::kBool);
  const at::Tensor strictly_below = at::ones({Q, Q}, bool_opts).tril(-1);
  at::Tensor x = a.unsqueeze(-1).expand(sizes).masked_fill(strictly_below.logical_not(), 0);
  x = x.cumsum(-2);
  return x.masked_fill(at::ones({Q, Q}, bool_opts).tril(0).logical_not(),
                       -std::numeric_limits<double>::infinity());
}

namespace {

// zero-pads dim 1 by `pad` and splits it into chunks: [b, T, ...] → [b, c, Q, ...]
at::Tensor chunked(const at::Tensor& t, int64_t pad, int64_t Q) {
  at::Tensor x = t;
  if (pad > 0) {
    std::vector<int64_t> s = t.sizes().vec();
    s[1] = pad;
    x = at::cat({t, at::zeros(s, t.options())}, 1);
  }
  std::vector<int64_t> s = x.sizes().vec();
  s[1] = x.size(1) / Q;
  s.insert(s.begin() + 2, Q);
  return x.reshape(s);
}

// HF's Zamba2RMSNormGated: y * silu(gate) in fp32, RMS-normalised per group of channels.
at::Tensor gated_group_norm(const at::Tensor& y, const at::Tensor& gate, const at::Tensor& weight,
                            int64_t groups, double eps) {
  const auto acc = at::promote_types(y.scalar_type(), at::kFloat);
  at::Tensor x = y.to(acc) * at::silu(gate.to(acc));
  std::vector<int64_t> s = x.sizes().vec();
  const int64_t last = s.back();
  std::vector<int64_t> g = s;
  g.back() = groups;
  g.push_back(last / groups);
  at::Tensor xg = x.view(g);
  xg = xg * at::rsqrt(xg.pow(2).mean(-1, true) + eps);
  return weight * xg.view(s).to(y.scalar_type());
}

}  // namespace

at::Tensor ssd_chunked(const at::Tensor& x, const at::Tensor& dt, const at::Tensor& A,
                       const at::Tensor& B, const at::Tensor& C, int64_t Q,
                       const at::Tensor& initial, at::Tensor* final_state) {
  const int64_t b = x.size(0), T = x.size(1), h = x.size(2), p = x.size(3), n = B.size(3);
  // a sequence shorter than a chunk is one chunk of its own length: padding it to the config's
  // chunk (HF's 128) would multiply the quadratic in-chunk work for nothing; the result is the
  // same sums (padded steps add zero), so it differs only by rounding
  Q = std::max<int64_t>(1, std::min(Q, T));
  const int64_t pad = (Q - T % Q) % Q;
  // padded steps have dt = 0: no input and a decay of exp(0) = 1, so the final state holds
  const at::Tensor xdt = chunked(x * dt.unsqueeze(-1), pad, Q);       // [b, c, Q, h, p]
  const at::Tensor adt = chunked(dt * A, pad, Q).permute({0, 3, 1, 2});  // [b, h, c, Q]
  const at::Tensor Bc = chunked(B, pad, Q), Cc = chunked(C, pad, Q);  // [b, c, Q, h, n]
  const at::Tensor acum = adt.cumsum(-1);
  // 1. inside each chunk: attention-like scores C_l . B_s weighted by the decay s -> l
  const at::Tensor decay = at::exp(segsum(adt));  // [b, h, c, l, s]
  const at::Tensor scores = at::einsum("bclhn,bcshn->bhcls", {Cc, Bc}) * decay;
  const at::Tensor y_diag = at::einsum("bhcls,bcshp->bclhp", {scores, xdt});
  // 2. each chunk's own contribution to the state at its end
  const at::Tensor to_end = at::exp(acum.narrow(-1, Q - 1, 1) - acum);  // [b, h, c, Q]
  const at::Tensor own = at::einsum("bclhn,bhcl,bclhp->bchpn", {Bc, to_end, xdt});
  // 3. states entering each chunk: a recurrence over chunks, as one matrix of decays
  const at::Tensor init =
      initial.defined() ? initial.to(x.scalar_type()).unsqueeze(1) : at::zeros({b, 1, h, p, n}, x.options());
  const at::Tensor states = at::cat({init, own}, 1);  // [b, c + 1, h, p, n]
  const at::Tensor ends = at::cat({at::zeros({b, h, 1}, acum.options()), acum.select(-1, Q - 1)}, -1);
  const at::Tensor carried =
      at::einsum("bhzc,bchpn->bzhpn", {at::exp(segsum(ends)), states});  // [b, c + 1, h, p, n]
  const int64_t c = carried.size(1) - 1;
  if (final_state) *final_state = carried.select(1, c);
  // 4. the entering state read out by C_l, decayed to step l
  const at::Tensor y_off =
      at::einsum("bclhn,bchpn,bhcl->bclhp", {Cc, carried.narrow(1, 0, c), at::exp(acum)});
  return (y_diag + y_off).reshape({b, c * Q, h, p}).narrow(1, 0, T);
}

at::Tensor ssd_step(const at::Tensor& x, const at::Tensor& dt, const at::Tensor& A,
                    const at::Tensor& B, const at::Tensor& C, at::Tensor& state) {
  const at::Tensor dA = at::exp(dt * A).unsqueeze(-1).unsqueeze(-1);     // [b, h, 1, 1]
  const at::Tensor dBx = (dt.unsqueeze(-1) * x).unsqueeze(-1) * B.unsqueeze(2);  // [b, h, p, n]
  state = state * dA + dBx;
  return at::matmul(state, C.unsqueeze(-1)).squeeze(-1);  // [b, h, p]
}

namespace {

// The fused CPU path of mamba2_mixer (Mamba2Path::Fused): the causal conv, the scan and the
// gated norm as plain loops over contiguous rows, the scan as its recurrence (ssd_step's sums);
// silu and softplus stay ATen's vectorised ops. At the tiny models' heads (head_dim x state =
// 8 x 8) the chunked scan's quadratic in-chunk work and its dozens of small tensor ops cost far
// more than the recurrence's ~4 x head_dim x state flops per token; for an 8B model's 64 x 128
// heads the recurrence is ~4 MFLOP per token beside in_proj's ~150. The same sums as the ops
// path in another order: they agree to rounding (tests/model/test_nemotron_h.cpp).
//
// Every inner loop is one of the row kernels below: contiguous, of a length set at run time,
// with restrict-qualified parameters, so that the compiler vectorises them (pointers declared
// restrict inside a loop body are not enough for GCC, which left these loops scalar).

// o[i] += w[i] * in[i]
template <typename T>
void row_fma(T* __restrict__ o, const T* __restrict__ w, const T* __restrict__ in, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] += w[i] * in[i];
}

// the scan's step for one state row n over a run of heads' channels:
// s[i] = s[i] a[i] + dx[i] bn; y[i] += s[i] cn
template <typename T>
void row_scan(T* __restrict__ s, const T* __restrict__ a, const T* __restrict__ dx, T bn, T cn,
              T* __restrict__ y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    s[i] = s[i] * a[i] + dx[i] * bn;
    y[i] += s[i] * cn;
  }
}

// v[i] = w[i] * (v[i] rs)
template <typename T>
void row_scale(T* __restrict__ v, const T* __restrict__ w, T rs, int64_t n) {
  for (int64_t i = 0; i < n; ++i) v[i] = w[i] * (v[i] * rs);
}

template <typename T>
void row_mul(T* __restrict__ v, const T* __restrict__ z, int64_t n) {
  for (int64_t i = 0; i < n; ++i) v[i] *= z[i];
}

template <typename T>
T row_sumsq(const T* __restrict__ v, int64_t n) {
  T ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += v[i] * v[i];
  return ss;
}

// out [B, T, CD] = the conv's pre-activation: bias + taps over prev (or zeros) ++ the inputs
// xbc (row stride `stride` in zx, offset already applied).
template <typename scalar_t>
void fused_conv(const scalar_t* xbc, int64_t stride, const scalar_t* prev, const scalar_t* w,
                const scalar_t* bias, scalar_t* out, int64_t Bsz, int64_t T, int64_t CD, int64_t K) {
  std::vector<scalar_t> wT(size_t(K * CD));  // taps as [K, CD]: the inner loops run over channels
  for (int64_t ch = 0; ch < CD; ++ch)
    for (int64_t j = 0; j < K; ++j) wT[size_t(j * CD + ch)] = w[ch * K + j];
  at::parallel_for(0, Bsz * T, 16, [&](int64_t begin, int64_t end) {
    std::vector<scalar_t> pv(static_cast<size_t>(CD));
    for (int64_t r = begin; r < end; ++r) {
      const int64_t b = r / T, t = r % T;
      scalar_t* o = out + r * CD;
      for (int64_t ch = 0; ch < CD; ++ch) o[ch] = bias ? bias[ch] : scalar_t(0);
      for (int64_t j = 0; j < K; ++j) {
        const int64_t tau = t + j - (K - 1);  // the input this tap reads
        const scalar_t* in = xbc + (b * T + tau) * stride;
        if (tau < 0) {
          if (!prev) continue;
          for (int64_t ch = 0; ch < CD; ++ch) pv[size_t(ch)] = prev[(b * CD + ch) * (K - 1) + (K - 1 + tau)];
          in = pv.data();
        }
        row_fma(o, wT.data() + j * CD, in, CD);
      }
    }
  });
}

// The recurrence s = exp(dt A) s + dt x B^T, y = s C + D x over conv's rows [B, T, CD]
// (x | B | C), dt [B, T, H]; ssm [B, H, P, N] holds the initial state and receives the final
// one; y [B, T, I]. Heads of one group share B and C, and their channels are contiguous in x
// and y: the work runs over tiles of a group's heads (as many as keep the tile's state near
// 32 KiB, so that it stays in L1/L2 for the whole sequence), with the state held as
// [N, heads x P] so that each state row's update is one contiguous run of heads x P channels.
template <typename scalar_t>
void fused_scan(const scalar_t* conv, const scalar_t* dt, const scalar_t* A_log, const scalar_t* D,
                scalar_t* ssm, scalar_t* y, const Mamba2Config& m, int64_t Bsz, int64_t T) {
  const int64_t I = m.inner(), CD = m.conv_dim(), H = m.heads, P = m.head_dim, N = m.state,
                G = m.groups, per_group = H / G;
  const int64_t tile = std::clamp<int64_t>(int64_t(32768 / sizeof(scalar_t)) / (N * P), 1, per_group);
  const int64_t tiles_per_group = (per_group + tile - 1) / tile;
  at::parallel_for(0, Bsz * G * tiles_per_group, 1, [&](int64_t begin, int64_t end) {
    const int64_t most = tile * P;
    std::vector<scalar_t> st(static_cast<size_t>(N * most)), a(static_cast<size_t>(most)),
        dx(static_cast<size_t>(most)), dl(static_cast<size_t>(most)), neg_a(static_cast<size_t>(tile));
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / (G * tiles_per_group), g = task / tiles_per_group % G;
      const int64_t h0 = g * per_group + task % tiles_per_group * tile;
      const int64_t nh = std::min(tile, g * per_group + per_group - h0), L = nh * P;
      scalar_t* s = st.data();
      for (int64_t j = 0; j < nh; ++j) {
        const scalar_t* s0 = ssm + ((b * H + h0 + j) * P) * N;
        for (int64_t p = 0; p < P; ++p)
          for (int64_t n = 0; n < N; ++n) s[n * L + j * P + p] = s0[p * N + n];
        neg_a[size_t(j)] = -std::exp(A_log[h0 + j]);
        for (int64_t p = 0; p < P; ++p) dl[size_t(j * P + p)] = D[h0 + j];
      }
      for (int64_t t = 0; t < T; ++t) {
        const int64_t r = b * T + t;
        const scalar_t* row = conv + r * CD;
        const scalar_t* x = row + h0 * P;
        const scalar_t *Bv = row + I + g * N, *Cv = row + I + G * N + g * N;
        scalar_t* yo = y + r * I + h0 * P;
        for (int64_t j = 0; j < nh; ++j) {
          const scalar_t d = dt[r * H + h0 + j], dA = std::exp(d * neg_a[size_t(j)]);
          for (int64_t p = 0; p < P; ++p) {
            a[size_t(j * P + p)] = dA;
            dx[size_t(j * P + p)] = d * x[j * P + p];
          }
        }
        std::fill(yo, yo + L, scalar_t(0));
        for (int64_t n = 0; n < N; ++n) row_scan(s + n * L, a.data(), dx.data(), Bv[n], Cv[n], yo, L);
        row_fma(yo, dl.data(), x, L);
      }
      for (int64_t j = 0; j < nh; ++j) {
        scalar_t* s0 = ssm + ((b * H + h0 + j) * P) * N;
        for (int64_t p = 0; p < P; ++p)
          for (int64_t n = 0; n < N; ++n) s0[p * N + n] = s[n * L + j * P + p];
      }
    }
  });
}

// HF's gated group RMSNorm in place on y [B*T, I]: v = y silu(z) (silu_z given), v / rms(v)
// per group of I / G channels, times the weight.
template <typename scalar_t>
void fused_gated_norm(scalar_t* y, const scalar_t* silu_z, const scalar_t* w, int64_t rows,
                      int64_t I, int64_t G, double eps) {
  const int64_t gw = I / G;
  at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      scalar_t* o = y + r * I;
      row_mul(o, silu_z + r * I, I);
      for (int64_t g = 0; g < G; ++g) {
        scalar_t* og = o + g * gw;
        const scalar_t ss = row_sumsq(og, gw);
        const scalar_t rs = scalar_t(1) / std::sqrt(ss / scalar_t(gw) + scalar_t(eps));
        row_scale(og, w + g * gw, rs, gw);
      }
    }
  });
}

bool wants_grad(std::initializer_list<const at::Tensor*> ts) {
  if (!at::GradMode::is_enabled()) return false;
  for (const at::Tensor* t : ts)
    if (t->defined() && t->requires_grad()) return true;
  return false;
}

}  // namespace

bool mamba2_fused_applies(const at::Tensor& x, const Mamba2Weights& w) {
  const auto dt = x.scalar_type();
  return x.device().is_cpu() && (dt == at::kFloat || dt == at::kDouble) &&
         !wants_grad({&x, &w.in_proj, &w.in_bias, &w.conv_w, &w.conv_b, &w.dt_bias, &w.A_log, &w.D,
                      &w.norm, &w.out_proj, &w.out_bias});
}

at::Tensor mamba2_mixer(const at::Tensor& x_in, const Mamba2Weights& w, const Mamba2Config& m,
                        double eps, const at::Tensor& token_mask, Mamba2State* state,
                        Mamba2Path path) {
  const int64_t Bsz = x_in.size(0), T = x_in.size(1), I = m.inner(), CD = m.conv_dim();
  const int64_t H = m.heads, P = m.head_dim, N = m.state, G = m.groups, K = m.conv_kernel;
  const auto dtype = x_in.scalar_type();
  const auto acc = at::promote_types(dtype, at::kFloat);  // fp32 as HF; fp64 for fp64 checks
  const bool fused = path == Mamba2Path::Fused || (path == Mamba2Path::Auto && mamba2_fused_applies(x_in, w));
  LT_CHECK(!fused || mamba2_fused_applies(x_in, w),
           "mamba2 mixer: the fused path needs a CPU fp32 or fp64 input without gradients (got {} on {})",
           c10::toString(dtype), x_in.device().str());
  at::Tensor mask;  // [B, T, 1] in the model's dtype
  if (token_mask.defined()) mask = token_mask.unsqueeze(-1).to(dtype);
  const at::Tensor x = mask.defined() ? x_in * mask : x_in;
  const at::Tensor zxbcdt = at::linear(x, w.in_proj, w.in_bias);
  if (fused) {
    const at::Tensor zx = zxbcdt.contiguous();
    const auto opt = zx.options();
    auto c = [&](const at::Tensor& t) { return t.defined() ? t.to(dtype).contiguous() : t; };
    const at::Tensor prev = state && state->conv.defined() ? c(state->conv) : at::Tensor();
    at::Tensor ssm = state && state->ssm.defined() ? c(state->ssm).clone() : at::zeros({Bsz, H, P, N}, opt);
    at::Tensor conv = at::empty({Bsz, T, CD}, opt);
    const at::Tensor cw = c(w.conv_w), cb = c(w.conv_b), alog = c(w.A_log), d = c(w.D), nw = c(w.norm);
    // the loops read raw pointers: every size they assume is checked here
    LT_CHECK(zx.dim() == 3 && zx.size(-1) == I + CD + H, "mamba2 mixer: in_proj gives {}, expected [B, T, {}]",
             c10::str(zx.sizes()), I + CD + H);
    LT_CHECK(!prev.defined() || prev.sizes() == at::IntArrayRef({Bsz, CD, K - 1}),
             "mamba2 mixer: conv state {} does not match [{}, {}, {}] (batch {})", c10::str(prev.sizes()), Bsz, CD, K - 1, Bsz);
    LT_CHECK(ssm.sizes() == at::IntArrayRef({Bsz, H, P, N}),
             "mamba2 mixer: ssm state {} does not match [{}, {}, {}, {}] (batch {})", c10::str(ssm.sizes()), Bsz, H, P, N, Bsz);
    LT_CHECK(cw.numel() == CD * K && (!cb.defined() || cb.numel() == CD) && alog.numel() == H && d.numel() == H &&
                 w.dt_bias.numel() == H && nw.numel() == I && I % G == 0 && H % G == 0,
             "mamba2 mixer: weight sizes do not match the config (conv {}, A_log {}, D {}, dt_bias {}, norm {})",
             c10::str(cw.sizes()), c10::str(alog.sizes()), c10::str(d.sizes()), c10::str(w.dt_bias.sizes()), c10::str(nw.sizes()));
    at::Tensor y = at::empty({Bsz, T, I}, opt);
    AT_DISPATCH_FLOATING_TYPES(dtype, "mamba2_fused", [&] {
      auto ptr = [](const at::Tensor& t) { return t.defined() ? t.data_ptr<scalar_t>() : nullptr; };
      fused_conv<scalar_t>(zx.data_ptr<scalar_t>() + I, zx.size(-1), ptr(prev), ptr(cw), ptr(cb),
                           ptr(conv), Bsz, T, CD, K);
      at::silu_(conv);
      if (mask.defined()) conv.mul_(mask);
      // the same ops as the ops path
      const at::Tensor dt = at::softplus(zx.narrow(-1, I + CD, H) + w.dt_bias).clamp_min(m.dt_min).contiguous();
      fused_scan<scalar_t>(ptr(conv), ptr(dt), ptr(alog), ptr(d), ptr(ssm), ptr(y), m, Bsz, T);
      const at::Tensor silu_z = at::silu(zx.narrow(-1, 0, I)).contiguous();
      fused_gated_norm<scalar_t>(ptr(y), ptr(silu_z), ptr(nw), Bsz * T, I, G, eps);
    });
    if (state) {  // the last K - 1 conv inputs of prev (or zeros) ++ these
      const at::Tensor xbc = zx.narrow(-1, I, CD).transpose(1, 2);
      const at::Tensor full = T >= K - 1 ? xbc : at::cat({prev.defined() ? prev : at::zeros({Bsz, CD, K - 1}, opt), xbc}, -1);
      state->conv = full.narrow(-1, full.size(-1) - (K - 1), K - 1).contiguous();
      state->ssm = ssm;
    }
    return at::linear(y, w.out_proj, w.out_bias);
  }
  const at::Tensor gate = zxbcdt.narrow(-1, 0, I);
  const at::Tensor xbc = zxbcdt.narrow(-1, I, CD).transpose(1, 2);  // [B, CD, T]
  at::Tensor dt = zxbcdt.narrow(-1, I + CD, H);

  // causal depthwise conv over the previous K-1 inputs (zeros at the start) and these
  const at::Tensor prev = state && state->conv.defined()
                              ? state->conv
                              : at::zeros({Bsz, CD, K - 1}, xbc.options());
  const at::Tensor full = at::cat({prev, xbc}, -1);
  if (state) state->conv = full.narrow(-1, full.size(-1) - (K - 1), K - 1).clone();
  at::Tensor conv = at::silu(at::conv1d(full, w.conv_w, w.conv_b, at::IntArrayRef{1}, at::IntArrayRef{0},
                                          at::IntArrayRef{1}, CD)).transpose(1, 2);
  if (mask.defined()) conv = conv * mask;
  const at::Tensor xs = conv.narrow(-1, 0, I).to(acc).reshape({Bsz, T, H, P});
  auto heads_of = [&](const at::Tensor& g) {  // [B, T, G*N] → [B, T, H, N]
    return g.to(acc).reshape({Bsz, T, G, N}).repeat_interleave(H / G, 2);
  };
  const at::Tensor Bm = heads_of(conv.narrow(-1, I, G * N));
  const at::Tensor Cm = heads_of(conv.narrow(-1, I + G * N, G * N));
  const at::Tensor A = -at::exp(w.A_log.to(acc));
  // HF's torch path floors dt at time_step_min (its CUDA kernels clamp to time_step_limit)
  dt = at::softplus(dt + w.dt_bias).clamp_min(m.dt_min).to(acc);

  at::Tensor y;
  if (state && state->ssm.defined() && T == 1) {
    y = ssd_step(xs.select(1, 0), dt.select(1, 0), A, Bm.select(1, 0), Cm.select(1, 0), state->ssm)
            .unsqueeze(1);
  } else {
    at::Tensor final_state;
    y = ssd_chunked(xs, dt, A, Bm, Cm, m.chunk, state ? state->ssm : at::Tensor(),
                    state ? &final_state : nullptr);
    if (state) state->ssm = final_state;
  }
  y = y + w.D.to(acc).unsqueeze(-1) * xs;
  const at::Tensor normed = gated_group_norm(y.reshape({Bsz, T, I}), gate, w.norm, G, eps);
  return at::linear(normed.to(dtype), w.out_proj, w.out_bias);
}

}  // namespace ltrun::model
