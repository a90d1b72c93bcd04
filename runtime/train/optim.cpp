// runtime/train/optim.cpp: parameter groups, AdamW, gradient clipping, the LR schedule.
#include "runtime/train/optim.h"

#include <ATen/ATen.h>
#include <torch/version.h>  // TORCH_VERSION_MAJOR / MINOR: _fused_adamw_ from 2.1
#include <fmt/format.h>

#include <cmath>
#include <ATen/core/grad_mode.h>

#include "runtime/core/error.h"

namespace ltrun::train {

// The architecture tags each parameter (biases, norms, Mamba2's A_log / D / dt_bias: no decay).
bool no_decay(const model::Param& p) { return !p.decay; }

std::vector<ParamGroup> param_groups(const model::Model& m, double weight_decay,
                                     const std::map<int, double>& lr_mult, bool include_frozen) {
  for (const auto& [l, x] : lr_mult) {
    LT_CHECK(l >= -1 && l < m.n_layers(), "lr_mult: layer {} out of range -1..{}", l,
             m.n_layers() - 1);
    LT_CHECK(x >= 0 && std::isfinite(x), "lr_mult[{}] = {}: expected a finite number >= 0", l, x);
  }
  std::map<std::pair<int, bool>, ParamGroup> by;
  for (const model::Param& p : m.parameters()) {
    if (!include_frozen && !p.tensor.requires_grad()) continue;
    const bool nd = no_decay(p);
    ParamGroup& g = by[{p.layer, nd}];
    if (g.params.empty()) {
      g.name = (p.layer >= 0 ? fmt::format("layer.{}", p.layer) : std::string("other")) +
               (nd ? ".no_decay" : "");
      auto it = lr_mult.find(p.layer);
      g.lr_mult = it == lr_mult.end() ? 1.0 : it->second;
      g.weight_decay = nd ? 0.0 : weight_decay;
    }
    g.params.push_back(p);
  }
  std::vector<ParamGroup> out;
  for (auto& [k, g] : by) out.push_back(std::move(g));
  return out;
}

AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions o) : groups_(std::move(groups)), o_(o) {
  std::map<std::string, int> seen;
  for (const ParamGroup& g : groups_)
    for (const model::Param& p : g.params)
      LT_CHECK(seen[p.name]++ == 0, "AdamW: parameter {} is in two groups", p.name);
}

std::vector<model::Param> AdamW::with_grad() const {
  std::vector<model::Param> out;
  for (const ParamGroup& g : groups_)
    for (const model::Param& p : g.params)
      if (p.tensor.grad().defined()) out.push_back(p);
  return out;
}

int64_t AdamW::param_steps(const std::string& name) const {
  auto it = state_.find(name);
  return it == state_.end() ? 0 : it->second.t;
}

void AdamW::zero_grad() {
  for (ParamGroup& g : groups_)
    for (model::Param& p : g.params)
      if (p.tensor.grad().defined()) p.tensor.mutable_grad() = at::Tensor();
}

void AdamW::step(double lr) { step(lr, {}); }

void AdamW::keep_state(const std::function<bool(const std::string&)>& keep) {
  for (auto it = state_.begin(); it != state_.end();)
    it = keep(it->first) ? std::next(it) : state_.erase(it);
}

int64_t AdamW::state_bytes() const {
  int64_t b = 0;
  for (const auto& [name, st] : state_)
    b += int64_t(st.m.nbytes()) + int64_t(st.v.nbytes()) +
         (st.master.defined() ? int64_t(st.master.nbytes()) : 0);
  return b;
}

bool AdamW::has_master(const at::Tensor& p) const {
  return o_.master_weights && p.scalar_type() != at::kFloat;
}

namespace {

// The parameters of one group that share a step count (so one bias correction): their fp32
// values (the parameter itself when fp32, its master copy, else a temporary copy; the last
// two are written back after), gradients (fp32) and moments, as lists for ATen's
// multi-tensor kernels.
struct UpdateList {
  std::vector<at::Tensor> params, w, grad, m, v;
  bool temporaries = false;  // some w is a temporary copy of a narrower parameter
};

// _fused_adamw_ (LibTorch >= 2.1, CUDA): one kernel for the whole update of fp32 parameters
// whose moments share their dtype. Its formula is AdamW's with the bias corrections folded
// into the step size (rounding apart, the same update). Returns false where it does not apply.
bool fused_update(UpdateList& u, double lr, double wd, const AdamWOptions& o, int64_t t) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  // fp32 parameters or master copies; a temporary copy of a bf16 parameter keeps the foreach
  // path (as before the master-weights option)
  if (u.temporaries) return false;
  for (const at::Tensor& w : u.w)
    if (!w.is_cuda() || w.scalar_type() != at::kFloat) return false;
  // the kernel reads step t of each parameter (it does not advance them)
  const std::vector<at::Tensor> steps = step_counters(int64_t(u.w.size()), t, u.w[0].options());
  at::_fused_adamw_(u.w, u.grad, u.m, u.v, {}, steps, lr, o.beta1, o.beta2, wd, o.eps,
                    /*amsgrad=*/false, /*maximize=*/false);
  return true;
#else
  return false;
#endif
}

// AdamW over lists (the per-tensor update of the class comment) with ATen's foreach kernels:
// on CUDA a few multi-tensor launches for the whole list, on the CPU the same per-tensor
// operations as a loop (the same rounding as updating one tensor at a time).
void foreach_update(UpdateList& u, double lr, double wd, const AdamWOptions& o, int64_t t) {
  const double bc1 = 1 - std::pow(o.beta1, double(t));
  const double bc2 = 1 - std::pow(o.beta2, double(t));
  if (wd != 0) at::_foreach_mul_(u.w, 1 - lr * wd);
  at::_foreach_mul_(u.m, o.beta1);
  at::_foreach_add_(u.m, u.grad, 1 - o.beta1);
  at::_foreach_mul_(u.v, o.beta2);
  at::_foreach_addcmul_(u.v, u.grad, u.grad, 1 - o.beta2);
  std::vector<at::Tensor> denom = at::_foreach_div(u.v, bc2);
  at::_foreach_sqrt_(denom);
  at::_foreach_add_(denom, o.eps);
  at::_foreach_addcdiv_(u.w, u.m, denom, -lr / bc1);
}

}  // namespace

std::vector<at::Tensor> step_counters(int64_t n, int64_t t, const at::TensorOptions& options) {
  return at::full({n}, double(t), options.dtype(at::kFloat)).unbind(0);
}

void AdamW::step(double lr, const std::function<bool(const std::string&)>& owned) {
  ++t_;
  at::NoGradGuard no_grad;
  for (ParamGroup& g : groups_) {
    const double glr = lr * g.lr_mult;
    std::map<int64_t, UpdateList> by_steps;  // a parameter that started late has fewer steps
    for (model::Param& p : g.params) {
      const at::Tensor& grad0 = p.tensor.grad();
      if (!grad0.defined() || (owned && !owned(p.name))) continue;
      auto it = state_.find(p.name);
      if (it == state_.end()) {
        at::Tensor z = at::zeros_like(p.tensor, p.tensor.options().dtype(at::kFloat));
        at::Tensor master = has_master(p.tensor) ? p.tensor.detach().to(at::kFloat) : at::Tensor();
        it = state_.emplace(p.name, Moments{z, z.clone(), 0, master}).first;
      }
      Moments& st = it->second;
      if (has_master(p.tensor) && !st.master.defined()) st.master = p.tensor.detach().to(at::kFloat);
      UpdateList& u = by_steps[++st.t];
      u.params.push_back(p.tensor);
      if (st.master.defined()) {
        u.w.push_back(st.master);
      } else if (p.tensor.dtype() == at::kFloat) {
        u.w.push_back(p.tensor);
      } else {
        u.w.push_back(p.tensor.to(at::kFloat));
        u.temporaries = true;
      }
      u.grad.push_back(grad0.to(at::kFloat));
      u.m.push_back(st.m);
      u.v.push_back(st.v);
    }
    for (auto& [t, u] : by_steps) {
      if (!fused_update(u, glr, g.weight_decay, o_, t)) foreach_update(u, glr, g.weight_decay, o_, t);
      for (size_t i = 0; i < u.params.size(); ++i)
        if (!u.w[i].is_same(u.params[i])) u.params[i].copy_(u.w[i]);
    }
  }
}

std::vector<std::pair<std::string, at::Tensor>> AdamW::state() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& [name, st] : state_) {
    out.emplace_back("exp_avg." + name, st.m.to(at::kCPU));
    out.emplace_back("exp_avg_sq." + name, st.v.to(at::kCPU));
    out.emplace_back("step." + name, at::scalar_tensor(st.t, at::kLong));
    if (st.master.defined()) out.emplace_back("master." + name, st.master.to(at::kCPU));
  }
  return out;
}

void AdamW::load_state(const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                       int64_t steps) {
  std::map<std::string, const model::Param*> params;
  for (const ParamGroup& g : groups_)
    for (const model::Param& p : g.params) params[p.name] = &p;
  std::map<std::string, at::Tensor> by(tensors.begin(), tensors.end());
  std::map<std::string, Moments> loaded;
  for (const auto& [key, t] : by) {
    if (key.rfind("exp_avg.", 0) != 0) continue;
    const std::string name = key.substr(8);
    auto p = params.find(name);
    LT_CHECK(p != params.end(), "optimizer state: {} is not a parameter of this model", name);
    auto sq = by.find("exp_avg_sq." + name);
    LT_CHECK(sq != by.end(), "optimizer state: exp_avg.{} without exp_avg_sq.{}", name, name);
    const at::Tensor& w = p->second->tensor;
    LT_CHECK(t.sizes() == w.sizes() && sq->second.sizes() == w.sizes(),
             "optimizer state: {} has the wrong shape", key);
    auto st = by.find("step." + name);
    const int64_t ps = st == by.end() ? steps : st->second.item<int64_t>();
    LT_CHECK(ps >= 0 && ps <= steps, "optimizer state: step.{} = {} outside 0..{}", name, ps, steps);
    const auto opts = w.options().dtype(at::kFloat);
    // the master copy as saved (bit for bit, so that a resumed run continues exactly); a
    // checkpoint written without master weights starts it from the parameter
    at::Tensor master;
    if (has_master(w)) {
      auto mk = by.find("master." + name);
      if (mk == by.end()) {
        master = w.detach().to(at::kFloat);
      } else {
        LT_CHECK(mk->second.sizes() == w.sizes() && mk->second.scalar_type() == at::kFloat,
                 "optimizer state: master.{} has the wrong shape or dtype (expected fp32)", name);
        master = mk->second.to(opts).clone();
      }
    }
    loaded[name] = Moments{t.to(opts).clone(), sq->second.to(opts).clone(), ps, master};
  }
  for (const auto& [key, t] : by) {
    if (key.rfind("exp_avg_sq.", 0) == 0)
      LT_CHECK(loaded.count(key.substr(11)), "optimizer state: {} without exp_avg.{}", key,
               key.substr(11));
    if (key.rfind("master.", 0) == 0) {
      const std::string name = key.substr(7);
      LT_CHECK(loaded.count(name), "optimizer state: {} without exp_avg.{}", key, name);
      LT_CHECK(loaded[name].master.defined(),
               "optimizer state: {} is a master copy, but this run keeps none for {} (resume with "
               "master_weights = true, or the parameter is fp32 now)", key, name);
    }
  }
  state_ = std::move(loaded);
  t_ = steps;
}

double clip_grad_norm(const std::vector<model::Param>& params, double max_norm) {
  at::NoGradGuard no_grad;
  at::Tensor total;
  for (const model::Param& p : params) {
    const at::Tensor& g = p.tensor.grad();
    if (!g.defined()) continue;
    at::Tensor s = g.to(at::kFloat).pow(2).sum();
    total = total.defined() ? total + s : s;
  }
  if (!total.defined()) return 0.0;
  const double norm = std::sqrt(total.item<double>());
  if (max_norm > 0 && norm > max_norm) {
    const double coef = max_norm / (norm + 1e-6);
    for (const model::Param& p : params)
      if (p.tensor.grad().defined()) p.tensor.mutable_grad().mul_(coef);
  }
  return norm;
}

double Schedule::at(int64_t step) const {
  const int64_t warm = int64_t(std::lround(warmup * double(total)));
  if (step < warm) return lr * double(step + 1) / double(warm);
  if (decay == "constant") return lr;
  const int64_t span = total - warm;
  const double x = double(step - warm) / double(std::max<int64_t>(span, 1));  // as HF: > 0 at the end
  const double lo = lr * min_ratio;
  if (decay == "linear") return lo + (lr - lo) * (1 - x);
  if (decay == "cosine") return lo + (lr - lo) * 0.5 * (1 + std::cos(M_PI * x));
  fail("schedule: unknown decay '{}': expected cosine, linear or constant", decay);
}

}  // namespace ltrun::train
