// runtime/train/data_parallel.cpp: ZeRO-1 AdamW and the all-reduce overlapped with backward
// (see data_parallel.h).
#include "runtime/train/data_parallel.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <numeric>

#include "runtime/core/error.h"
#include "runtime/dist/dist.h"

namespace ltrun::train {

// ---- ShardedAdamW ----

ShardedAdamW::ShardedAdamW(dist::Group& g, AdamW& opt, std::vector<model::Param> params)
    : g_(g), opt_(opt), params_(std::move(params)), load_(size_t(g.world_size()), 0) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].tensor.requires_grad() || opt_.param_steps(params_[i].name) > 0) idx.push_back(i);
  // largest first, each to the least-loaded rank (ties: the lower rank, the earlier parameter)
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    return params_[a].tensor.numel() > params_[b].tensor.numel();
  });
  for (size_t i : idx) assign(params_[i]);
  const int me = g_.rank();
  opt_.keep_state([&](const std::string& n) { return owner(n) == me; });
}

int ShardedAdamW::owner(const std::string& name) const {
  auto it = owner_.find(name);
  return it == owner_.end() ? -1 : it->second;
}

void ShardedAdamW::assign(const model::Param& p) {
  if (owner_.count(p.name)) return;
  const int r = int(std::min_element(load_.begin(), load_.end()) - load_.begin());
  owner_[p.name] = r;
  load_[size_t(r)] += p.tensor.numel();
}

void ShardedAdamW::step(double lr) {
  std::vector<const model::Param*> updated;
  for (const model::Param& p : params_)
    if (p.tensor.grad().defined()) {
      assign(p);  // a parameter that trains for the first time
      updated.push_back(&p);
    }
  const int me = g_.rank();
  opt_.step(lr, [&](const std::string& n) { return owner(n) == me; });
  at::NoGradGuard ng;
  for (int r = 0; r < g_.world_size(); ++r) {
    std::vector<at::Tensor> flat;
    std::vector<const model::Param*> of;
    for (const model::Param* p : updated)
      if (owner(p->name) == r) {
        flat.push_back(p->tensor.detach().reshape({-1}).to(at::kFloat));
        of.push_back(p);
      }
    if (of.empty()) continue;
    at::Tensor buf = at::cat(flat);
    g_.broadcast(buf, r);
    if (r == me) continue;
    int64_t off = 0;
    for (const model::Param* p : of) {
      const int64_t n = p->tensor.numel();
      p->tensor.detach().copy_(buf.narrow(0, off, n).view(p->tensor.sizes()));
      off += n;
    }
  }
}

std::vector<std::pair<std::string, at::Tensor>> ShardedAdamW::full_state() {
  const int me = g_.rank();
  const int64_t n = int64_t(params_.size());
  // each parameter's step count lives on its owner (0 elsewhere): a sum gives it to all
  at::Tensor steps = at::zeros({n}, at::kLong);
  for (int64_t i = 0; i < n; ++i)
    if (owner(params_[size_t(i)].name) == me) steps[i] = opt_.param_steps(params_[size_t(i)].name);
  g_.all_reduce(steps, dist::ReduceOp::sum);
  const auto t = steps.accessor<int64_t, 1>();
  std::map<std::string, at::Tensor> mine;
  for (auto& [k, v] : opt_.state()) mine[k] = v;
  const c10::Device dev = params_.empty() ? c10::Device(c10::kCPU) : params_[0].tensor.device();
  std::vector<std::pair<std::string, at::Tensor>> out;
  // a master copy (AdamW's master_weights) travels after the moments: every rank knows which
  // parameters have one from the option and the parameter's dtype
  auto chunks = [&](size_t i) { return opt_.has_master(params_[i].tensor) ? 3 : 2; };
  for (int r = 0; r < g_.world_size(); ++r) {
    std::vector<size_t> of;
    int64_t total = 0;
    for (int64_t i = 0; i < n; ++i)
      if (t[i] > 0 && owner(params_[size_t(i)].name) == r) {
        of.push_back(size_t(i));
        total += chunks(size_t(i)) * params_[size_t(i)].tensor.numel();
      }
    if (of.empty()) continue;
    at::Tensor buf;
    if (r == me) {
      std::vector<at::Tensor> flat;
      for (size_t i : of) {
        const std::string& nm = params_[i].name;
        flat.push_back(mine.at("exp_avg." + nm).reshape({-1}));
        flat.push_back(mine.at("exp_avg_sq." + nm).reshape({-1}));
        if (chunks(i) == 3) flat.push_back(mine.at("master." + nm).reshape({-1}));
      }
      buf = at::cat(flat).to(dev);
    } else {
      buf = at::zeros({total}, at::TensorOptions().dtype(at::kFloat).device(dev));
    }
    g_.broadcast(buf, r);
    buf = buf.to(at::kCPU);
    int64_t off = 0;
    for (size_t i : of) {
      const model::Param& p = params_[i];
      const int64_t k = p.tensor.numel();
      out.emplace_back("exp_avg." + p.name, buf.narrow(0, off, k).view(p.tensor.sizes()).clone());
      out.emplace_back("exp_avg_sq." + p.name, buf.narrow(0, off + k, k).view(p.tensor.sizes()).clone());
      out.emplace_back("step." + p.name, at::scalar_tensor(t[int64_t(i)], at::kLong));
      if (chunks(i) == 3)
        out.emplace_back("master." + p.name, buf.narrow(0, off + 2 * k, k).view(p.tensor.sizes()).clone());
      off += chunks(i) * k;
    }
  }
  return out;
}

// ---- OverlappedGrads ----

struct OverlappedGrads::Bucket {
  std::vector<size_t> params;
  std::vector<int64_t> offsets;
  at::Tensor buf;  // fp32, the flattened gradients
  size_t filled = 0;
  std::unique_ptr<dist::Group::Pending> pending;
};

OverlappedGrads::OverlappedGrads(dist::Group& g, std::vector<at::Tensor> params, int64_t bucket_bytes)
    : g_(g), params_(std::move(params)), bucket_bytes_(std::max<int64_t>(bucket_bytes, 1)),
      slot_(params_.size(), {-1, 0}), hook_(params_.size(), -1) {}

OverlappedGrads::~OverlappedGrads() {
  for (size_t i = 0; i < params_.size(); ++i)
    if (hook_[i] >= 0) {
      try {
        params_[i].remove_hook(unsigned(hook_[i]));
      } catch (const std::exception&) {
      }
    }
}

void OverlappedGrads::arm() {
  std::vector<bool> rg(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) rg[i] = params_[i].requires_grad();
  if (rg != layout_of_) {  // the plan changed (or the first step): lay the buckets out again
    buckets_.clear();
    std::fill(slot_.begin(), slot_.end(), std::pair<int, int64_t>{-1, 0});
    int64_t in_bucket = 0;
    for (size_t k = params_.size(); k-- > 0;) {
      if (!rg[k]) continue;
      const int64_t n = params_[k].numel();
      if (buckets_.empty() || (!buckets_.back()->params.empty() && in_bucket + n * 4 > bucket_bytes_)) {
        buckets_.push_back(std::make_unique<Bucket>());
        in_bucket = 0;
      }
      Bucket& b = *buckets_.back();
      slot_[k] = {int(buckets_.size() - 1), in_bucket / 4};
      b.params.push_back(k);
      b.offsets.push_back(in_bucket / 4);
      in_bucket += n * 4;
    }
    for (auto& b : buckets_) {
      int64_t total = 0;
      for (size_t k : b->params) total += params_[k].numel();
      b->buf = at::zeros({total}, params_[b->params[0]].options().dtype(at::kFloat));
    }
    for (size_t k = 0; k < params_.size(); ++k)
      if (rg[k] && hook_[k] < 0)
        hook_[k] = int(params_[k].register_hook([this, k](const at::Tensor& grad) { on_grad(k, grad); }));
    layout_of_ = rg;
  }
  got_.assign(params_.size(), false);
  for (auto& b : buckets_) {
    b->filled = 0;
    b->pending.reset();
  }
  next_ = 0;
  armed_ = true;
}

void OverlappedGrads::on_grad(size_t i, const at::Tensor& grad) {
  if (!armed_ || slot_[i].first < 0) return;
  LT_CHECK(!got_[i], "train: overlap_all_reduce: parameter {} got two gradients in the last "
           "micro-batch's backward (several backward passes); train without overlap_all_reduce", i);
  at::NoGradGuard ng;
  Bucket& b = *buckets_[size_t(slot_[i].first)];
  const at::Tensor& acc = params_[i].grad();  // earlier micro-batches' sum
  // the same sum AccumulateGrad makes next (acc + grad), so the result is the non-overlapped one
  const at::Tensor total = acc.defined() ? acc + grad : grad;
  b.buf.narrow(0, slot_[i].second, params_[i].numel()).copy_(total.reshape({-1}));
  got_[i] = true;
  if (++b.filled == b.params.size()) launch_ready();
}

void OverlappedGrads::launch_ready() {
  while (next_ < buckets_.size() && buckets_[next_]->filled == buckets_[next_]->params.size()) {
    buckets_[next_]->pending = g_.all_reduce_start(buckets_[next_]->buf);
    ++next_;
  }
}

uint64_t OverlappedGrads::finish() {
  LT_CHECK(armed_, "train: OverlappedGrads::finish without arm");
  armed_ = false;
  at::NoGradGuard ng;
  // parameters that got no gradient in this backward: what earlier micro-batches left, or 0
  for (auto& bp : buckets_) {
    Bucket& b = *bp;
    for (size_t j = 0; j < b.params.size(); ++j) {
      const size_t k = b.params[j];
      if (got_[k]) continue;
      at::Tensor slot = b.buf.narrow(0, b.offsets[j], params_[k].numel());
      if (params_[k].grad().defined()) slot.copy_(params_[k].grad().reshape({-1}));
      else slot.zero_();
      got_[k] = true;
      ++b.filled;
    }
  }
  launch_ready();
  uint64_t bytes = 0;
  const double w = double(g_.world_size());
  for (auto& bp : buckets_) {
    Bucket& b = *bp;
    b.pending->wait();
    b.pending.reset();
    b.buf.div_(w);
    bytes += uint64_t(b.buf.numel()) * 4;
    for (size_t j = 0; j < b.params.size(); ++j) {
      at::Tensor& p = params_[b.params[j]];
      at::Tensor part = b.buf.narrow(0, b.offsets[j], p.numel()).view(p.sizes()).to(p.dtype());
      if (p.grad().defined()) p.mutable_grad().copy_(part);
      else p.mutable_grad() = part.clone();
    }
  }
  return bytes;
}

}  // namespace ltrun::train
