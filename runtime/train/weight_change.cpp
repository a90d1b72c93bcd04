// runtime/train/weight_change.cpp: per-layer L2 norms of trained - base (computed in fp64).
#include "runtime/train/weight_change.h"

#include <ATen/ATen.h>

#include <cmath>
#include <ATen/core/grad_mode.h>

#include "runtime/core/error.h"

namespace ltrun::train {

WeightChange weight_change(const model::Model& trained, const model::Model& base) {
  LT_CHECK(trained.n_layers() == base.n_layers(),
           "weight_change: models have {} and {} layers", trained.n_layers(), base.n_layers());
  const auto a = trained.parameters(), b = base.parameters();
  LT_CHECK(a.size() == b.size(), "weight_change: models have {} and {} tensors", a.size(), b.size());
  at::NoGradGuard g;
  WeightChange w;
  std::vector<double> sq(size_t(trained.n_layers()), 0.0), base_sq(sq);
  for (size_t i = 0; i < a.size(); ++i) {
    LT_CHECK(a[i].name == b[i].name && a[i].tensor.sizes() == b[i].tensor.sizes(),
             "weight_change: tensor {} does not match the base's {}", a[i].name, b[i].name);
    const at::Tensor x = a[i].tensor.detach().to(at::kCPU, at::kDouble);
    const at::Tensor y = b[i].tensor.detach().to(at::kCPU, at::kDouble);
    const double d = (x - y).pow(2).sum().item<double>();
    if (a[i].layer >= 0) {
      sq[size_t(a[i].layer)] += d;
      base_sq[size_t(a[i].layer)] += y.pow(2).sum().item<double>();
    } else if (a[i].part == model::ParamPart::Embeddings) {
      w.embeddings = std::sqrt(d);
    } else if (a[i].part == model::ParamPart::Norm) {
      w.final_norm = std::sqrt(d);
    } else if (a[i].part == model::ParamPart::Head) {
      w.lm_head = std::sqrt(d);
    }
  }
  for (size_t l = 0; l < sq.size(); ++l) {
    w.layers.push_back(std::sqrt(sq[l]));
    w.relative.push_back(base_sq[l] > 0 ? std::sqrt(sq[l] / base_sq[l]) : 0.0);
  }
  return w;
}

const Fields<WeightChange>& weight_change_fields() {
  static const Fields<WeightChange> f = {{"layers", &WeightChange::layers},
                                         {"relative", &WeightChange::relative},
                                         {"embeddings", &WeightChange::embeddings},
                                         {"final_norm", &WeightChange::final_norm},
                                         {"lm_head", &WeightChange::lm_head}};
  return f;
}

}  // namespace ltrun::train
