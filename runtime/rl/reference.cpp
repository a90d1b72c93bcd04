// runtime/rl/reference.cpp: shared-prefix and copied reference models.
#include "runtime/rl/reference.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <map>

#include "runtime/core/error.h"
#include "runtime/train/freeze.h"

namespace ltrun::rl {

Reference Reference::shared_prefix(const model::Model& policy) {
  Reference r;
  r.kind_ = Kind::SharedPrefix;
  at::NoGradGuard g;
  for (const model::Param& p : policy.parameters())
    if (p.tensor.requires_grad()) r.saved_.emplace_back(p.name, p.tensor.detach().clone());
  LT_CHECK(!r.saved_.empty(), "rl.reference: the policy has no trainable parameter (pick a plan "
                              "with m:train_only(...) first)");
  r.from_layer_ = std::clamp(train::lowest_trainable_layer(policy), 0, policy.n_layers());
  return r;
}

Reference Reference::copy(const model::Model& policy) {
  Reference r;
  r.kind_ = Kind::Copy;
  r.clone_ = std::make_shared<model::Model>(policy.clone());
  r.clone_->set_requires_grad(false);
  r.from_layer_ = 0;
  return r;
}

int64_t Reference::bytes() const {
  int64_t n = 0;
  if (clone_)
    for (const model::Param& p : clone_->parameters()) n += p.tensor.numel() * p.tensor.element_size();
  for (const auto& [name, t] : saved_) n += t.numel() * t.element_size();
  return n;
}

namespace {

// Swaps saved values into the policy's parameters for one scope (storage swap, no copy).
struct Swap {
  std::vector<std::pair<at::Tensor, at::Tensor>> back;  // (parameter, its own value)
  Swap(const model::Model& m, const std::vector<std::pair<std::string, at::Tensor>>& saved) {
    std::map<std::string, at::Tensor> by_name;
    for (const model::Param& p : m.parameters()) by_name.emplace(p.name, p.tensor);
    for (const auto& [name, value] : saved) {
      auto it = by_name.find(name);
      LT_CHECK(it != by_name.end(), "rl.reference: the policy has no parameter {}", name);
      LT_CHECK(it->second.sizes() == value.sizes(), "rl.reference: {} changed shape", name);
      at::Tensor p = it->second;
      back.emplace_back(p, p.detach());
      p.set_(value);
    }
  }
  ~Swap() {
    for (auto& [p, own] : back) p.set_(own);
  }
};

}  // namespace

at::Tensor Reference::logprobs(const model::Model& policy, const SequenceBatch& batch,
                               double temperature, int64_t chunk, const at::Tensor& entry) const {
  at::NoGradGuard g;
  if (kind_ == Kind::Copy) return policy_logprobs(*clone_, batch, 0, temperature, chunk).logp;
  // Every parameter trainable now must have its original value saved: one that started to
  // train after the snapshot has drifted from the reference with nothing to swap back.
  std::map<std::string, bool> have;
  for (const auto& [name, t] : saved_) have[name] = true;
  for (const model::Param& p : policy.parameters())
    LT_CHECK(!p.tensor.requires_grad() || have.count(p.name),
             "rl.reference: {} trains now but was frozen when the reference was made: make a new "
             "reference after changing the plan", p.name);
  Swap swap(policy, saved_);
  return policy_logprobs(policy, batch, from_layer_, temperature, chunk, false, entry).logp;
}

}  // namespace ltrun::rl
