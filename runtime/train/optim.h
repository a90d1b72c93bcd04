// runtime/train/optim.h: parameter groups (per-layer learning-rate multipliers, no weight
// decay on norms and biases), AdamW through ATen's multi-tensor kernels, and the learning-rate schedule.
#pragma once
#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "runtime/model/model.h"

namespace ltrun::train {

struct ParamGroup {
  std::string name;  // "layer.3", "layer.3.no_decay", "other", ...
  double lr_mult = 1.0, weight_decay = 0.0;
  std::vector<model::Param> params;
};

// Groups the trainable parameters of `m` (requires_grad), or all of them with
// include_frozen (the training loop's groups, so that a plan changed during a run is covered):
// one group per (layer, decay or not). lr_mult[layer] multiplies the learning rate of block
// `layer` (-1: embeddings, final norm, head); norms and biases get no weight decay. Errors on
// a multiplier for a missing layer.
std::vector<ParamGroup> param_groups(const model::Model& m, double weight_decay,
                                     const std::map<int, double>& lr_mult = {},
                                     bool include_frozen = false);

// Whether weight decay skips this parameter, as its architecture tags it (Param::decay:
// norm weights, biases, Mamba2's A_log, D and dt_bias are not decayed).
bool no_decay(const model::Param& p);

struct AdamWOptions {
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  // Master weights: for a parameter stored in a narrower float (bf16, fp16) the optimizer
  // keeps an fp32 copy, updates the copy from the upcast gradient and writes it rounded back
  // into the parameter. Without it the update is applied to an fp32 copy made afresh each
  // step from the parameter, so an update below half the parameter's ulp is rounded away
  // every step. fp32 parameters are their own master either way. The master is the value
  // that trains: a bf16 parameter written outside the optimizer during a run is overwritten
  // by its master at its next update.
  bool master_weights = false;
};

// AdamW (Loshchilov & Hutter; PyTorch's torch.optim.AdamW without amsgrad), for step t >= 1:
//   p <- p * (1 - lr * wd)
//   m <- b1 m + (1 - b1) g,  v <- b2 v + (1 - b2) g^2
//   p <- p - lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
// The update runs through ATen's multi-tensor kernels: _fused_adamw_ on CUDA with LibTorch
// >= 2.1 (fp32 parameters), else the _foreach_ operations (on a GPU a few launches per group
// instead of several per parameter; on the CPU the same per-tensor operations, bit for bit).
// State is kept in fp32 whatever the parameter dtype. It is made for a parameter the first
// time it has a gradient, with its own step count t (bias correction as PyTorch's per-parameter
// `step`), so groups may hold frozen parameters that start training later in a run.
class AdamW {
 public:
  AdamW(std::vector<ParamGroup> groups, AdamWOptions o = {});

  // One update with base learning rate `lr` (times each group's lr_mult). Parameters without
  // a gradient are skipped (no decay, no state change).
  void step(double lr);
  // ZeRO-1 (runtime/train/data_parallel.h): updates only the parameters with a gradient for
  // which owned(name) is true; the others keep their values and make no state.
  void step(double lr, const std::function<bool(const std::string&)>& owned);
  void zero_grad();
  int64_t steps() const { return t_; }  // step() calls
  const std::vector<ParamGroup>& groups() const { return groups_; }
  // Parameters of the groups that have a gradient now.
  std::vector<model::Param> with_grad() const;
  // The step count of one parameter's state (0: never updated).
  int64_t param_steps(const std::string& name) const;

  // exp_avg.NAME / exp_avg_sq.NAME tensors (CPU) and step.NAME (int64 scalar) of every
  // parameter with state, and master.NAME (fp32) of those with a master copy, plus the step
  // count. load_state checks names and shapes; a checkpoint without step.NAME (older ones)
  // gives every parameter `steps`; with master_weights, one without master.NAME (written
  // without the option) starts the copy from the parameter; master.NAME without the option
  // is an error (the run would continue from the rounded parameter instead).
  std::vector<std::pair<std::string, at::Tensor>> state() const;
  void load_state(const std::vector<std::pair<std::string, at::Tensor>>& tensors, int64_t steps);
  // Drops the state of the parameters for which keep(name) is false (ZeRO-1: another rank's).
  void keep_state(const std::function<bool(const std::string&)>& keep);
  // Bytes of the state held (exp_avg, exp_avg_sq and master copies).
  int64_t state_bytes() const;
  const AdamWOptions& options() const { return o_; }
  // Whether parameter p gets an fp32 master copy (master_weights, p not fp32).
  bool has_master(const at::Tensor& p) const;

 private:
  struct Moments {
    at::Tensor m, v;
    int64_t t = 0;
    at::Tensor master;  // fp32 copy of the parameter (has_master), else undefined
  };
  std::vector<ParamGroup> groups_;
  AdamWOptions o_;
  std::map<std::string, Moments> state_;  // parameter name -> its state
  int64_t t_ = 0;
};

// The step counts _fused_adamw_ reads (its state_steps): n fp32 scalars of value t, each a view
// of one tensor of n elements made with `options`, so a step allocates (and on CUDA fills) one
// tensor for all of a group's parameters instead of one per parameter.
std::vector<at::Tensor> step_counters(int64_t n, int64_t t, const at::TensorOptions& options);

// Global L2 norm of the gradients of `params`; if max_norm > 0 and it is larger, scales the
// gradients down to max_norm. Returns the norm before clipping.
double clip_grad_norm(const std::vector<model::Param>& params, double max_norm);

// Linear warmup over round(warmup * total) steps, then linear or cosine decay to
// min_ratio * lr at step `total` (as HF, the last step still moves). `step` counts from 0.
struct Schedule {
  double lr = 3e-5, warmup = 0.0, min_ratio = 0.0;
  int64_t total = 1;
  std::string decay = "cosine";  // cosine | linear | constant
  double at(int64_t step) const;
};

}  // namespace ltrun::train
