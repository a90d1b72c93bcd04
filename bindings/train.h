// bindings/train.h: what other binding files take from the training binding.
#pragma once
#include <lua.hpp>

#include "runtime/train/loop.h"

namespace ltrun::lua {

// The training loop's metric sink: the run context's sink (the current run of this process),
// or an empty one without a store. The one way training (the causal LM, GRPO) logs.
train::MetricSink train_sink(lua_State* L);

// The options every training loop shares (lt.train.causal_lm, lt.rl.grpo), one meaning per
// name: lr, warmup, decay, min_lr_ratio, weight_decay, betas = {b1, b2}, eps, clip_grad (the
// gradient-norm clip; 0: none), lr_mult = {[block] = x}, eval_every, checkpoint_dir,
// checkpoint_every, keep_checkpoints, resume, stop_after, log, progress. `defaults` holds the
// caller's defaults; the table at idx overrides them. Old names are refused naming the new
// (clip: clip_grad or clip_ratio). Does not check for unknown keys (the caller does, with
// kLoopOptions among its own).
train::LoopOptions read_loop_options(lua_State* L, int idx, const char* fn, const train::LoopOptions& defaults);
extern const std::vector<const char*> kLoopOptions;

// The lt.Model methods of training: m:freeze(spec), m:train_only(spec), m:n_trainable();
// bindings/model.cpp registers them with its own.
const luaL_Reg* model_train_methods();

}  // namespace ltrun::lua
