// runtime/train/loss.cpp: next-token cross entropy, skipping autograd in the frozen prefix.
#include "runtime/train/loss.h"

#include <ATen/ATen.h>

#include "runtime/core/error.h"

namespace ltrun::train {

LossPass causal_lm_loss(const model::Model& m, const at::Tensor& batch, int from_layer,
                        bool full_backward) {
  LT_CHECK(batch.dim() == 2 && batch.size(1) >= 2,
           "causal_lm_loss: expected token rows [batch, seq_len + 1], got {} dims", batch.dim());
  const int L = m.n_layers();
  from_layer = std::min(std::max(from_layer, 0), L);
  const int64_t T = batch.size(1) - 1;
  const at::Tensor ids = batch.narrow(1, 0, T).to(at::kLong);
  const at::Tensor targets = batch.narrow(1, 1, T).to(m.device(), at::kLong);
  LossPass lp;
  model::ForwardOptions fo;
  fo.logits = model::Logits::All;
  at::Tensor input = ids;
  if (full_backward) {
    fo.intervene[-1] = model::Intervention::call(
        [](int, at::Tensor& h) { h = h.detach().requires_grad_(true); });
  } else if (from_layer > 0) {
    {
      at::NoGradGuard no_grad;
      model::ForwardOptions pre;
      pre.to_layer = from_layer - 1;
      pre.logits = model::Logits::None;
      lp.entry = m.forward(ids, pre).residual.detach();
    }
    fo.from_layer = from_layer;
    fo.hidden = lp.entry;
    input = at::Tensor();
  }
  const at::Tensor logits = m.forward(input, fo).logits;
  lp.loss = at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}).to(at::kFloat),
                                   targets.reshape({-1}));
  return lp;
}

}  // namespace ltrun::train
