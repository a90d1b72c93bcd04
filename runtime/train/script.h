// runtime/train/script.h: training for scripts (bindings/train.cpp registers these): lt.layers
// (freeze specs as plain tables), lt.train (causal_lm, param_groups, weight_change, freeze,
// train_only, eval_loss, latest_checkpoint) and the lt.Model methods m:freeze(spec),
// m:train_only(spec), m:n_trainable().
//
// A spec is data: {layers = {0, 1}, part = "attention"|"mlp"|"norms"} for blocks (0-based
// numbers as in model.layers.N), a string "embeddings" | "final_norm" | "lm_head" | "all",
// a number (one block), or a list of specs (their union). nil or {} selects nothing.
#pragma once
#include <vector>

#include "runtime/core/options.h"
#include "runtime/core/run_context.h"
#include "runtime/train/loop.h"

namespace ltrun::train {

const std::vector<ScriptFunction>& layer_functions();  // lt.layers
const std::vector<ScriptFunction>& train_functions();  // lt.train
const std::vector<ScriptFunction>& model_methods();    // model:freeze, ...

// The training loop's metric sink: the run's sink (the current run of this process), or an
// empty one without a store. The one way training (the causal LM, GRPO) logs.
MetricSink metric_sink(RunSink* sink);

// The options every training loop shares (lt.train.causal_lm, lt.rl.grpo), one meaning per
// name: lr, warmup, decay, min_lr_ratio, weight_decay, betas = {b1, b2}, eps, clip_grad (the
// gradient-norm clip; 0: none), lr_mult = {[block] = x}, eval_every, checkpoint_dir,
// checkpoint_every, keep_checkpoints, resume, stop_after, log, progress. `defaults` holds the
// caller's defaults; the table overrides them. Old names are refused naming the new (clip:
// clip_grad or clip_ratio). Then checks the table against `api`, the caller's declaration,
// which lists loop_option_docs(defaults) among its own options (runtime/core/api.h).
LoopOptions loop_options(const Options& o, const LoopOptions& defaults, const RunContext& run, const ApiDoc& api);
// The loop's options with `defaults` (the same the function passes to loop_options) as their
// declared defaults.
std::vector<OptionDoc> loop_option_docs(const LoopOptions& defaults);

}  // namespace ltrun::train
