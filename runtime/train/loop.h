// runtime/train/loop.h: the training loop every objective shares: micro-batches with gradient
// accumulation, global-norm clipping, AdamW over parameter groups that follow the freeze plan
// as it changes, the learning-rate schedule, bf16 autocast on CUDA, interrupts, checkpoints
// with exact resume, and a progress line with ETA. It never writes to the run store: metrics
// and params go to a MetricSink (the Lua binding's sink is the one place that writes them).
//
// Adding an objective (causal LM: runtime/train/trainer.cpp; GRPO builds on the same):
//   1. Derive from Objective. begin_step(ctx) prepares optimizer step ctx.step (draw data, or
//      sample rollouts when the previous ones are used up) and returns how many micro-batches
//      it has; micro_batch(ctx, i) runs micro-batch i forward and returns its loss with the
//      scale its gradient gets (1 / grad_accum for a plain mean; tokens_i / tokens for a token
//      mean across micro-batches). The loop calls backward on loss * scale, unless the
//      objective did that itself (backward_done, e.g. activation checkpointing). The step's
//      loss is sum_i scale_i * value_i.
//   2. end_step(ctx) returns the step's own named metrics (reward mean, clip fraction, ...);
//      the loop logs them after loss, lr, grad_norm and tokens_per_s, at step ctx.step + 1.
//   3. evaluate(step) returns held-out metrics (val_loss), logged every eval_every steps and
//      at the end.
//   4. state() / load_state() carry what the objective needs to continue exactly (data
//      cursor and seed, its RNG, rollouts in flight) into the checkpoint; the loop itself
//      saves the weights, the optimizer, the schedule position and the global CPU RNG.
//      state() is taken at the start of every step (an interrupt in the middle of a step
//      saves the state of its start), so it must be cheap and must not alias tensors that
//      are later changed in place.
// Objectives use ctx.from_layer: blocks below it have no trainable parameter, so they run
// without autograd (train/loss.h), and backward stops there.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/fields.h"
#include "runtime/model/model.h"
#include "runtime/train/optim.h"

namespace ltrun::dist {
class Group;
}

namespace ltrun::train {

using Metrics = std::vector<std::pair<std::string, double>>;

// Where the loop reports. Every member may be empty (then nothing is reported that way).
struct MetricSink {
  std::function<void(const std::string& name, double value, int64_t step)> metric;
  std::function<void(const std::string& key, const std::string& value)> param;
  // Makes everything reported so far durable; called before a checkpoint is published, so
  // that a run killed after it and resumed from it leaves no hole in its curves.
  std::function<void()> flush;
};

// What an objective carries from one process to the next (see the header comment).
struct ObjectiveState {
  nlohmann::json json = nlohmann::json::object();
  std::vector<std::pair<std::string, at::Tensor>> tensors;
};

// The step an objective works on.
struct StepContext {
  int64_t step = 0;    // 0-based optimizer step
  int64_t steps = 0;   // total optimizer steps of the run
  double lr = 0;       // base learning rate of this step
  int from_layer = 0;  // blocks below it are frozen this step: run them without grad
  bool cuda = false;   // the model is on CUDA (micro_batch runs under bf16 autocast if enabled)
  // Data-parallel ranks: every rank runs the same micro-batch indices on its own share of
  // the data (the causal LM draws the global micro-batch, micro_batch x world_size rows, on
  // every rank and keeps rows [rank x micro_batch, (rank + 1) x micro_batch), so the cursor
  // is the same on every rank and a checkpoint resumes on another world size).
  int rank = 0, world_size = 1;
  // The ranks' group (nullptr in one process), for an objective whose statistics span the
  // ranks (GRPO's batch metrics, token counts). Collectives in begin_step and end_step only
  // (every rank calls those once per step; micro-batch counts may differ between ranks).
  dist::Group* group = nullptr;
};

struct MicroLoss {
  at::Tensor loss;      // scalar; with a graph unless backward_done
  double value = 0;     // loss as a number (for the log and the finite check)
  double scale = 1;     // backward runs on loss * scale
  int64_t tokens = 0;   // tokens this micro-batch trained on (throughput)
  bool backward_done = false;  // the objective already accumulated the gradients of loss * scale
};

class Objective {
 public:
  virtual ~Objective() = default;
  virtual std::string name() const = 0;  // "causal_lm", "grpo": for messages
  // Called once before the first step of this process (after a resume restored state).
  virtual void start(const model::Model&, const std::function<void(const std::string&, const std::string&)>& param) {
    (void)param;
  }
  virtual int64_t begin_step(const StepContext& ctx) = 0;  // returns the number of micro-batches (> 0)
  virtual MicroLoss micro_batch(const StepContext& ctx, int64_t i) = 0;
  virtual Metrics end_step(const StepContext&) { return {}; }
  virtual Metrics evaluate(int64_t /*step*/) { return {}; }
  virtual ObjectiveState state() const { return {}; }
  virtual void load_state(const ObjectiveState&) {}
};

struct LoopOptions {
  int64_t steps = 100;  // optimizer steps
  double lr = 3e-5, warmup = 0.0, min_lr_ratio = 0.0;
  std::string decay = "cosine";  // cosine | linear | constant
  double weight_decay = 0.01, beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  double clip = 1.0;              // global grad norm; 0: no clipping
  // AdamW keeps fp32 master copies of bf16/fp16 parameters (AdamWOptions::master_weights);
  // checkpoints carry them
  bool master_weights = false;
  std::map<int, double> lr_mult;  // block -> learning-rate multiplier (-1: non-block params)
  int64_t eval_every = 0;         // steps; 0: only at the end
  std::string checkpoint_dir;     // "" = none
  int64_t checkpoint_every = 0;   // 0: only at the end (when checkpoint_dir is set)
  int64_t keep_checkpoints = 2;
  std::vector<std::string> checkpoint_files;  // copied into every checkpoint (tokenizer.json)
  bool resume = false;            // continue from checkpoint_dir/latest (an error when it is missing)
  // Ctrl-C / SIGTERM: between steps, or between the micro-batches of a step (which is then
  // dropped), the loop writes a checkpoint of the last finished step into checkpoint_dir and
  // throws ltrun::Interrupted.
  int64_t stop_after = -1;        // stop after this step (with a checkpoint); -1: never
  bool progress = true;           // a progress line on stderr when it is a terminal
  bool autocast = true;           // bf16 autocast when the model is on CUDA (fp32 on CPU)
  // Benchmarks only: backward through the frozen prefix too (from_layer stays 0).
  bool force_full_backward = false;
  MetricSink sink;  // used on rank 0 only
  // Data parallel (runtime/dist): parameters broadcast from rank 0 at the start; after each
  // step's micro-batches the gradients of the parameters that require grad are averaged over
  // the ranks in buckets (frozen ones cost no communication); the step's loss and tokens are
  // reduced too. Rank 0 alone reports and writes checkpoints. Ctrl-C is agreed on at step
  // boundaries (a max-reduce of the flag), so every rank stops after the same step.
  // nullptr or a group of 1: one process.
  dist::Group* group = nullptr;
  // With a group (runtime/train/data_parallel.h): ZeRO-1, each rank keeps the AdamW moments
  // of its shard of the trainable parameters, updates those and broadcasts them; checkpoints
  // gather the full state on rank 0, so they resume sharded or not, on any world size.
  bool shard_optimizer = false;
  // With a group: the gradient average starts during the last micro-batch's backward, bucket
  // by bucket (grad hooks, async all-reduce); same result as averaging after backward.
  bool overlap_all_reduce = false;
  int64_t bucket_bytes = 25 << 20;  // gradient bytes per all-reduce (fp32)
  // After each optimizer step (1-based step, its loss). May change the freeze plan: the next
  // step's parameter groups, from_layer and clipping follow it.
  std::function<void(int64_t step, double loss)> on_step;
};

struct StepLog {
  int64_t step;  // 0-based
  double loss, lr, grad_norm, tokens_per_s;
  int64_t tokens = 0;
  Metrics metrics;  // the objective's end_step metrics
};

struct LoopResult {
  int64_t steps_done = 0, start_step = 0, tokens = 0;
  int64_t trainable_params = 0, total_params = 0;  // at the start
  int lowest_trainable_layer = 0;                  // at the start
  double final_loss = 0, wall_s = 0, tokens_per_s = 0;
  bool stopped_early = false;
  uint64_t bytes_all_reduced = 0;  // gradients averaged over the ranks (this process)
  int64_t optimizer_state_bytes = 0;  // AdamW moments held by this process at the end
  std::vector<StepLog> log;                                     // steps of this process
  std::vector<std::pair<int64_t, Metrics>> evals;              // (step, evaluate())
};

LoopResult run_loop(model::Model& m, Objective& obj, const LoopOptions& o);

// The loop options and results by the keys scripts use (runtime/core/fields.h): lr, warmup,
// decay, min_lr_ratio, weight_decay, eps, clip_grad (clip), eval_every (>= 0), checkpoint_dir,
// checkpoint_every (>= 0), keep_checkpoints (>= 1), resume, stop_after (>= -1), progress;
// steps (steps_done), start_step, tokens, trainable_params, total_params,
// lowest_trainable_layer, final_loss, wall_s, tokens_per_s, bytes_all_reduced,
// optimizer_state_bytes, stopped_early.
const Fields<LoopOptions>& loop_option_fields();
const Fields<LoopResult>& loop_result_fields();

// The checkpoint format: DIR/step-NNNNNNNN/{config.json, model.safetensors,
// generation_config.json, optimizer.safetensors, objective.safetensors (when the objective
// has tensors), trainer_state.json} and DIR/latest naming the newest complete one (written
// last, atomically). Returns "" when there is none.
std::string latest_checkpoint(const std::string& dir);

// bf16 autocast for CUDA only, for the lifetime of the guard (CPU runs fp32).
struct AutocastGuard {
  bool on = false;
  explicit AutocastGuard(bool enable);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;
};

}  // namespace ltrun::train
