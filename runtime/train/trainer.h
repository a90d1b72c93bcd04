// runtime/train/trainer.h: continued pre-training of a causal LM: micro-batches with gradient
// accumulation, AdamW over parameter groups, warmup + decay, global-norm clipping, bf16
// autocast on CUDA, validation, checkpoints with exact resume, logging to the active run.
// Backward never runs below the lowest trainable block: the frozen prefix runs without grad.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "runtime/model/model.h"
#include "runtime/train/optim.h"

namespace ltrun::train {

// Where batches come from. next(B) returns int64 [B, seq_len + 1] (inputs = [:, :-1], targets
// = [:, 1:]) and advances the cursor; seek() restores a cursor saved in a checkpoint.
struct DataSource {
  std::function<at::Tensor(int64_t batch)> next;
  std::function<uint64_t()> cursor;
  std::function<void(uint64_t)> seek;
  // validation batches, each int64 [b, seq_len + 1]; empty: no validation
  std::function<std::vector<at::Tensor>()> validation;
  std::string describe;  // for the run params
};

// Rows of a [N, seq_len + 1] tensor in order, wrapping around; validation from `val` if given.
DataSource tensor_source(at::Tensor rows, at::Tensor val = {});

struct TrainOptions {
  int64_t steps = 100;  // optimizer steps
  double lr = 3e-5, warmup = 0.0, min_lr_ratio = 0.0;
  std::string decay = "cosine";  // cosine | linear | constant
  double weight_decay = 0.01, beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  double clip = 1.0;            // global grad norm; 0: no clipping
  int64_t micro_batch = 8, grad_accum = 1;
  std::map<int, double> lr_mult;  // block -> learning-rate multiplier (-1: non-block params)
  int64_t eval_every = 0;         // steps; 0: only at the end (when there is validation data)
  std::string checkpoint_dir;     // "" = none
  int64_t checkpoint_every = 0;   // 0: only at the end (when checkpoint_dir is set)
  int64_t keep_checkpoints = 2;
  std::vector<std::string> checkpoint_files;  // copied into every checkpoint (tokenizer.json)
  bool resume = false;            // continue from checkpoint_dir/latest when it exists
  // (a Ctrl-C between steps also writes a checkpoint there before the run ends interrupted)
  int64_t stop_after = -1;        // stop after this step (with a checkpoint); -1: never
  bool log = true;                // metrics into the active run
  bool progress = true;           // a progress line on stderr when it is a terminal
  bool autocast = true;           // bf16 autocast when the model is on CUDA (fp32 on CPU)
  bool activation_checkpointing = false;  // recompute blocks in backward (loss.h)
  // Benchmarks only: make the embeddings require grad so that backward runs through the
  // frozen prefix too (what skipping it saves).
  bool force_full_backward = false;
  std::function<void(int64_t step, double loss)> on_step;  // after each optimizer step
};

struct StepLog {
  int64_t step;  // 0-based
  double loss, lr, grad_norm, tokens_per_s;
};

struct TrainResult {
  int64_t steps_done = 0, start_step = 0, tokens = 0;
  int64_t trainable_params = 0, total_params = 0;
  int lowest_trainable_layer = 0;
  double final_loss = 0, val_loss = -1, wall_s = 0, tokens_per_s = 0;
  bool stopped_early = false;
  std::vector<StepLog> log;                             // steps of this process
  std::vector<std::pair<int64_t, double>> val_losses;  // (step, loss)
  std::vector<std::string> notes;
};

// Mean next-token cross entropy of `batch` [B, T + 1] under `m` (no grad).
double eval_loss(const model::Model& m, const std::vector<at::Tensor>& batches);

TrainResult train_causal_lm(model::Model& m, DataSource& data, const TrainOptions& o);

// The trainer's checkpoint format: DIR/step-NNNNNNNN/{config.json, model.safetensors,
// generation_config.json, optimizer.safetensors, trainer_state.json} and DIR/latest naming the
// newest complete one (written last, atomically). Returns "" when there is none.
std::string latest_checkpoint(const std::string& dir);

}  // namespace ltrun::train
