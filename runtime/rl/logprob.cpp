// runtime/rl/logprob.cpp: chunked token log-probs (a custom autograd function that recomputes
// logits chunk by chunk in backward) and the policy pass with a frozen prefix.
#include "runtime/rl/logprob.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <fmt/ranges.h>

#include <algorithm>

#include "runtime/core/error.h"

namespace ltrun::rl {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// log softmax(z)[t] and, optionally, the entropy of softmax(z), for logits z [n, V]
std::pair<at::Tensor, at::Tensor> chunk_logp(const model::Model& m, const at::Tensor& h,
                                             const at::Tensor& t, double temperature, bool ent) {
  at::Tensor z = m.lens(h);
  if (z.scalar_type() != at::kDouble) z = z.to(at::kFloat);
  if (temperature != 1.0) z = z / temperature;
  const at::Tensor ls = z.log_softmax(-1);
  at::Tensor e;
  if (ent) {
    at::NoGradGuard g;
    e = -(ls.exp() * ls).sum(-1);
  }
  return {ls.gather(1, t.unsqueeze(1)).squeeze(1), e};
}

// fp32 for fp32 / bf16 / fp16 models, fp64 for fp64 ones (the gradient checks)
at::ScalarType out_dtype(const at::Tensor& h) {
  return h.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

struct ChunkedLogprob : public torch::autograd::Function<ChunkedLogprob> {
  // inputs: model (opaque), h [N, H], targets [N], temperature, chunk, entropy?, head params
  static variable_list forward(AutogradContext* ctx, const model::Model* m, at::Tensor h,
                               at::Tensor targets, double temperature, int64_t chunk, bool ent,
                               at::TensorList params) {
    const int64_t N = h.size(0);
    at::Tensor lp = at::empty({N}, h.options().dtype(out_dtype(h)));
    at::Tensor e = ent ? at::empty({N}, lp.options()) : at::zeros({0}, lp.options());
    for (int64_t s = 0; s < N; s += chunk) {
      const int64_t n = std::min(chunk, N - s);
      auto [l, en] = chunk_logp(*m, h.narrow(0, s, n), targets.narrow(0, s, n), temperature, ent);
      lp.narrow(0, s, n).copy_(l);
      if (ent) e.narrow(0, s, n).copy_(en);
    }
    ctx->save_for_backward({h, targets});
    ctx->saved_data["model"] = int64_t(reinterpret_cast<intptr_t>(m));
    ctx->saved_data["temperature"] = temperature;
    ctx->saved_data["chunk"] = chunk;
    ctx->saved_data["n_params"] = int64_t(params.size());
    ctx->mark_non_differentiable({e});
    return {lp, e};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& h = saved[0];
    const at::Tensor& targets = saved[1];
    const auto* m = reinterpret_cast<const model::Model*>(intptr_t(ctx->saved_data["model"].toInt()));
    const double temperature = ctx->saved_data["temperature"].toDouble();
    const int64_t chunk = ctx->saved_data["chunk"].toInt();
    const int64_t n_params = ctx->saved_data["n_params"].toInt();
    std::vector<at::Tensor> params;
    for (const model::Param& p : m->parameters())
      if (p.layer == -1 && p.tensor.requires_grad()) params.push_back(p.tensor);
    LT_CHECK(int64_t(params.size()) == n_params,
             "rl: the head's trainable parameters changed between forward and backward");
    const at::Tensor g = grads[0];
    if (!g.defined()) return variable_list(6 + params.size());
    const bool need_h = h.requires_grad();
    at::Tensor gh = need_h ? at::zeros_like(h) : at::Tensor();
    std::vector<at::Tensor> gp(params.size());
    const int64_t N = h.size(0);
    for (int64_t s = 0; s < N; s += chunk) {
      const int64_t n = std::min(chunk, N - s);
      at::AutoGradMode on(true);
      at::Tensor hc = h.narrow(0, s, n).detach().requires_grad_(need_h);
      auto [l, unused] = chunk_logp(*m, hc, targets.narrow(0, s, n), temperature, false);
      std::vector<at::Tensor> inputs;
      if (need_h) inputs.push_back(hc);
      inputs.insert(inputs.end(), params.begin(), params.end());
      if (inputs.empty()) break;
      const variable_list d = torch::autograd::grad({l}, inputs, {g.narrow(0, s, n)},
                                                    /*retain_graph=*/false, /*create_graph=*/false,
                                                    /*allow_unused=*/true);
      size_t k = 0;
      if (need_h) gh.narrow(0, s, n).copy_(d[k++]);
      for (size_t i = 0; i < params.size(); ++i, ++k)
        if (d[k].defined()) gp[i] = gp[i].defined() ? gp[i] + d[k] : d[k];
    }
    variable_list out = {at::Tensor(), gh, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    out.insert(out.end(), gp.begin(), gp.end());
    return out;
  }
};

}  // namespace

TokenLogprobs token_logprobs(const model::Model& m, const at::Tensor& h, const at::Tensor& targets,
                             double temperature, int64_t chunk, bool entropy) {
  LT_CHECK(h.dim() == 3, "rl.token_logprobs: h must be [B, T, hidden], got {} dims", h.dim());
  LT_CHECK(targets.dim() == 2 && targets.size(0) == h.size(0) && targets.size(1) == h.size(1),
           "rl.token_logprobs: targets must be [B, T] = [{}, {}]", h.size(0), h.size(1));
  LT_CHECK(chunk > 0, "rl.token_logprobs: chunk must be > 0, got {}", chunk);
  LT_CHECK(temperature > 0, "rl.token_logprobs: temperature must be > 0, got {}", temperature);
  const int64_t B = h.size(0), T = h.size(1);
  std::vector<at::Tensor> params;
  if (at::GradMode::is_enabled())
    for (const model::Param& p : m.parameters())
      if (p.layer == -1 && p.tensor.requires_grad()) params.push_back(p.tensor);
  const variable_list r = ChunkedLogprob::apply(
      &m, h.reshape({B * T, h.size(2)}), targets.to(h.device(), at::kLong).reshape({B * T}),
      temperature, chunk, entropy, at::TensorList(params));
  TokenLogprobs out;
  out.logp = r[0].view({B, T});
  if (entropy) out.entropy = r[1].view({B, T});
  return out;
}

at::Tensor prefix_entry(const model::Model& m, const SequenceBatch& b, int from_layer) {
  LT_CHECK(from_layer > 0 && from_layer <= m.n_layers(), "rl.prefix_entry: block {} is not in 1..{}", from_layer,
           m.n_layers());
  at::NoGradGuard no_grad;
  model::ForwardOptions pre;
  pre.attention_mask = b.attention_mask.to(m.device(), at::kLong);
  pre.logits = model::Logits::None;
  pre.to_layer = from_layer - 1;
  return m.forward(b.ids.to(m.device(), at::kLong), pre).residual.detach();
}

PolicyPass policy_logprobs(const model::Model& m, const SequenceBatch& b, int from_layer,
                           double temperature, int64_t chunk, bool entropy, const at::Tensor& entry) {
  LT_CHECK(b.ids.dim() == 2 && b.attention_mask.sizes() == b.ids.sizes(),
           "rl.policy_logprobs: ids and attention_mask must both be [B, T]");
  LT_CHECK(b.prompt_len >= 1 && b.resp_len >= 1 && b.prompt_len + b.resp_len == b.ids.size(1),
           "rl.policy_logprobs: prompt_len {} + resp_len {} must equal the {} columns (prompt >= 1)",
           b.prompt_len, b.resp_len, b.ids.size(1));
  const int L = m.n_layers();
  from_layer = std::min(std::max(from_layer, 0), L);
  const at::Tensor ids = b.ids.to(m.device(), at::kLong);
  const at::Tensor mask = b.attention_mask.to(m.device(), at::kLong);
  PolicyPass out;
  model::ForwardOptions fo;
  fo.attention_mask = mask;
  fo.logits = model::Logits::None;
  at::Tensor input = ids;
  if (from_layer > 0) {
    if (entry.defined())
      LT_CHECK(entry.dim() == 3 && entry.size(0) == b.ids.size(0) && entry.size(1) == b.ids.size(1) &&
                   entry.size(2) == m.config().hidden_size,
               "rl.policy_logprobs: entry must be the hidden state [{}, {}, {}] of this batch at block {}, got [{}]",
               b.ids.size(0), b.ids.size(1), m.config().hidden_size, from_layer, fmt::join(entry.sizes(), ", "));
    out.entry = entry.defined() ? entry : prefix_entry(m, b, from_layer);
    fo.from_layer = from_layer;
    fo.hidden = out.entry;
    input = at::Tensor();
  }
  at::Tensor h;
  if (from_layer < L) {
    h = m.forward(input, fo).residual;
  } else {
    h = out.entry;  // nothing but the head trains: the head reads hidden[L]
  }
  // hidden at column c predicts the token at column c + 1
  const at::Tensor hr = h.narrow(1, b.prompt_len - 1, b.resp_len);
  const at::Tensor targets = ids.narrow(1, b.prompt_len, b.resp_len);
  TokenLogprobs t = token_logprobs(m, hr, targets, temperature, chunk, entropy);
  out.logp = t.logp;
  out.entropy = t.entropy;
  return out;
}

}  // namespace ltrun::rl
