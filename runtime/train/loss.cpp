// runtime/train/loss.cpp: next-token cross entropy, skipping autograd in the frozen prefix.
#include "runtime/train/loss.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

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

at::Tensor checkpointed_loss_backward(const model::Model& m, const at::Tensor& batch, int from_layer,
                                      double scale) {
  const int L = m.n_layers();
  from_layer = std::min(std::max(from_layer, 0), L);
  if (L < 2 || from_layer >= L - 1) {  // at most one block runs with grad: nothing to save
    LossPass lp = causal_lm_loss(m, batch, from_layer);
    (lp.loss * scale).backward();
    return lp.loss.detach();
  }
  const int64_t T = batch.size(1) - 1;
  const at::Tensor ids = batch.narrow(1, 0, T).to(at::kLong);
  const at::Tensor targets = batch.narrow(1, 1, T).to(m.device(), at::kLong);
  // 1. the residual entering every block, without a graph
  std::vector<at::Tensor> entry;
  {
    at::NoGradGuard no_grad;
    model::ForwardOptions fo;
    fo.capture = true;
    fo.to_layer = L - 2;
    fo.logits = model::Logits::None;
    entry = m.forward(ids, fo).hidden;  // entry[l] = hidden[l], l = 0 .. L-1
  }
  // 2. the last block, final norm, head and loss, with grad from its saved input
  at::Tensor h = entry[size_t(L - 1)].detach().requires_grad_(true);
  model::ForwardOptions top;
  top.from_layer = L - 1;
  top.hidden = h;
  top.logits = model::Logits::All;
  const at::Tensor logits = m.forward(at::Tensor(), top).logits;
  const at::Tensor loss = at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}).to(at::kFloat),
                                                 targets.reshape({-1}));
  (loss * scale).backward();
  at::Tensor grad = h.grad();
  // 3. each block below, recomputed from its saved input, down to the lowest trainable one;
  //    block 0 starts from the token ids so that trainable embeddings get their gradient
  for (int l = L - 2; l >= from_layer; --l) {
    model::ForwardOptions fo;
    fo.to_layer = l;
    fo.logits = model::Logits::None;
    at::Tensor in;
    if (l > 0) {
      in = entry[size_t(l)].detach().requires_grad_(l > from_layer);
      fo.from_layer = l;
      fo.hidden = in;
    }
    const at::Tensor out = m.forward(l > 0 ? at::Tensor() : ids, fo).residual;
    out.backward(grad);
    if (l > from_layer) grad = in.grad();
  }
  return loss.detach();
}

}  // namespace ltrun::train
