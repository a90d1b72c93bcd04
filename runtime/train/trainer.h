// runtime/train/trainer.h: continued pre-training of a causal LM, the first objective on the
// shared loop (runtime/train/loop.h): micro_batch windows per micro-batch and rank, grad_accum
// micro-batches per optimizer step (global batch = micro_batch x grad_accum x world size),
// validation loss, the data cursor and seed in checkpoints.
// Backward never runs below the lowest trainable block: the frozen prefix runs without grad.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/model/model.h"
#include "runtime/train/loop.h"

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
  // The seed of the data order (shuffled corpora), kept in checkpoints. On resume the
  // checkpoint's seed is used (reseed), so that the order continues whatever the run's seed;
  // when seed_given (asked for explicitly), a different seed in the checkpoint is an error.
  std::optional<uint64_t> seed;
  bool seed_given = false;
  std::function<void(uint64_t)> reseed;
};

// Rows of a [N, seq_len + 1] tensor in order, wrapping around; validation from `val` if given.
DataSource tensor_source(at::Tensor rows, at::Tensor val = {});

// The train split of a packed corpus folder (runtime/data) in windows of seq_len + 1 tokens,
// shuffled by `seed` (seed_given: asked for explicitly, see DataSource::seed); validation: the
// val split's first n_val_batches batches of val_batch windows (none when the split is too
// short). A corpus tokenized with a vocabulary larger than vocab_size is an error naming both.
DataSource corpus_source(const std::string& dir, int64_t vocab_size, int64_t seq_len, uint64_t seed,
                         bool seed_given, int64_t val_batch, int64_t n_val_batches);

struct TrainOptions : LoopOptions {
  int64_t micro_batch = 8, grad_accum = 1;
  bool activation_checkpointing = false;  // recompute blocks in backward (loss.h)
};

// The causal LM's own options by key (runtime/core/fields.h): steps, micro_batch, grad_accum,
// shard_optimizer, overlap_all_reduce, bucket_bytes (> 0), force_full_backward,
// activation_checkpointing.
const Fields<TrainOptions>& train_option_fields();

struct TrainResult : LoopResult {
  double val_loss = -1;
  std::vector<std::pair<int64_t, double>> val_losses;  // (step, loss)
};

// The causal-LM objective: mean next-token cross entropy; `val_loss` from data.validation.
class CausalLm : public Objective {
 public:
  CausalLm(model::Model& m, DataSource& data, const TrainOptions& o);
  std::string name() const override { return "causal_lm"; }
  void start(const model::Model& m,
             const std::function<void(const std::string&, const std::string&)>& param) override;
  int64_t begin_step(const StepContext& ctx) override;
  MicroLoss micro_batch(const StepContext& ctx, int64_t i) override;
  Metrics evaluate(int64_t step) override;
  ObjectiveState state() const override;
  void load_state(const ObjectiveState& s) override;

 private:
  model::Model& m_;
  DataSource& data_;
  TrainOptions o_;
};

// Mean next-token cross entropy of `batch` [B, T + 1] under `m` (no grad).
double eval_loss(const model::Model& m, const std::vector<at::Tensor>& batches);

TrainResult train_causal_lm(model::Model& m, DataSource& data, const TrainOptions& o);

}  // namespace ltrun::train
