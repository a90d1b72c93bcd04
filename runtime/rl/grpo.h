// runtime/rl/grpo.h: the GRPO family as an objective of the shared training loop
// (runtime/train/loop.h). Each batch of rollouts (P prompts x G samples) is used by
// epochs x mini_batches optimizer steps; each step runs its mini-batch in micro-batches whose
// losses add up to the mini-batch's aggregate (so accumulation is exact for every
// aggregation). Old log-probs are captured right after the rollouts when more than one
// optimizer step uses them (else the ratio is 1 by construction), reference log-probs come
// from the shared-prefix reference (or a full copy), and backward stops at the lowest
// trainable block (ctx.from_layer). The shared-prefix reference never runs the frozen blocks
// below it itself: it resumes from the hidden state that the old-log-prob pass, or (one
// optimizer step per batch) the update's own pass, computes there.
#pragma once
#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/model/model.h"
#include "runtime/rl/loss.h"
#include "runtime/rl/prompts.h"
#include "runtime/rl/reference.h"
#include "runtime/rl/reward.h"
#include "runtime/rl/rollout.h"
#include "runtime/train/loop.h"

namespace ltrun::rl {

// A batch of rows made by the caller instead of sampled here (GrpoOptions::produce): each row a
// prompt, the response trained on (only its tokens enter the loss: a multi-turn agent's
// observations are in the prompt) and its advantage (e.g. GiGPO's, runtime/rl/gigpo.h).
// metrics: logged at the step that uses the batch first.
struct ProducedBatch {
  std::vector<std::vector<int64_t>> prompts, responses;
  std::vector<double> advantages;
  train::Metrics metrics;
};

struct GrpoOptions {
  std::string algo = "grpo";         // preset (loss.h); the three below override it when set
  std::optional<AdvNorm> norm;
  std::optional<Agg> agg;
  std::optional<double> kl;
  double clip_low = 0.2, clip_high = 0.2;
  int64_t prompts = 8;               // P prompts per batch of rollouts
  RolloutOptions rollout;            // G = rollout.group_size, max_response, sampling, seed
  int64_t epochs = 1;                // PPO epochs over each batch of rollouts
  int64_t mini_batches = 1;          // optimizer steps per epoch
  int64_t micro_batch = 16;          // rows per forward / backward
  int64_t chunk = 1024;              // rows of logits at once (logprob.h)
  bool copy_reference = false;       // a full frozen copy instead of the shared prefix
  std::vector<Reward> rewards;       // at least one
  std::string accuracy = "math";     // the reward logged as accuracy ("" : none)
  // Held-out evaluation (evaluate()): greedy answers to these prompts, scored by math_reward.
  std::vector<std::vector<int64_t>> eval_prompts;
  std::vector<PromptItem> eval_items;
  int64_t eval_max_response = 0;     // 0: rollout.max_response
  // Set: batch b's rows come from produce(b) (any number >= mini_batches of them; the
  // mini-batches split them as evenly as they go), not from prompts, rollouts, rewards and
  // group advantages; items, prompt ids and rewards may then be empty. One process only.
  std::function<ProducedBatch(int64_t batch)> produce;
};

// GRPO's own scalar options by key (runtime/core/fields.h): algo, prompts, epochs,
// mini_batches, micro_batch, chunk, copy_reference, accuracy, eval_max_response.
const Fields<GrpoOptions>& grpo_option_fields();

// Rollouts per optimizer step: P * G / mini_batches rows; steps per batch of rollouts:
// epochs * mini_batches.
int64_t grpo_steps_per_rollout(const GrpoOptions& o);

// Greedy answers of `m` to `prompts`, scored against items[i].answer by math_reward: the
// fraction correct. batch: prompts per generate call (0: all). correct (when given): set to
// one entry per item, true where its answer is right (for paired comparisons of two models).
double heldout_accuracy(const model::Model& m, const std::vector<std::vector<int64_t>>& prompts,
                        const std::vector<PromptItem>& items, int64_t max_response,
                        const std::function<std::string(const std::vector<int64_t>&)>& decode,
                        int64_t batch = 64, std::vector<bool>* correct = nullptr);

class GrpoObjective : public train::Objective {
 public:
  // items[i] with its tokenized prompt prompt_ids[i]; batch b of rollouts takes items
  // b*P .. b*P + P - 1 (wrapping) of a seeded order (a fresh shuffle per pass).
  GrpoObjective(model::Model& m, std::vector<PromptItem> items,
                std::vector<std::vector<int64_t>> prompt_ids, GrpoOptions o);
  std::string name() const override { return "grpo"; }
  void start(const model::Model& m,
             const std::function<void(const std::string&, const std::string&)>& param) override;
  int64_t begin_step(const train::StepContext& ctx) override;
  train::MicroLoss micro_batch(const train::StepContext& ctx, int64_t i) override;
  train::Metrics end_step(const train::StepContext& ctx) override;
  train::Metrics evaluate(int64_t step) override;
  train::ObjectiveState state() const override;
  void load_state(const train::ObjectiveState& s) override;

  const Reference* reference() const { return ref_.get(); }
  // The advantages of the rollouts in flight ([rows], this rank's share; undefined before any).
  at::Tensor rollout_advantages() const;
  // Where the reference's pass over the rollouts in flight starts: "update" (the hidden state
  // of the update's own pass at the reference's block), "old_logprobs" (that of the
  // old-log-prob pass), "own" (the reference runs every block itself: a copy, or block 0),
  // "" (no reference, or no rollouts yet).
  std::string reference_entry() const;

 private:
  struct Batch;  // the rollouts in flight
  void make_rollouts(const train::StepContext& ctx, int64_t batch_no);
  std::shared_ptr<Batch> produced_batch(int64_t batch_no);
  void old_and_reference(const train::StepContext& ctx, Batch& b, double* old_s, double* ref_s);
  std::vector<int64_t> prompt_order(int64_t pass) const;

  model::Model& m_;
  std::vector<PromptItem> items_;
  std::vector<std::vector<int64_t>> prompt_ids_;
  GrpoOptions o_;
  Preset p_;
  LossOptions lo_;
  std::unique_ptr<Reference> ref_;
  std::shared_ptr<Batch> cur_;
  // this step
  std::vector<int64_t> rows_;   // the mini-batch's rows
  double denom_ = 0;            // its aggregation divisor
  train::Metrics step_metrics_; // rollout metrics of a step that made rollouts
  int world_ = 1;               // ranks sharing the batch (each holds its share of the rows)
  double sum_clip_ = 0, sum_akl_ = 0, sum_ent_ = 0, sum_pg_ = 0, sum_kl_ = 0, sum_tok_ = 0;
  double ref_update_s_ = 0;     // reference log-probs computed inside this step's update
};

}  // namespace ltrun::rl
