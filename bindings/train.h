// bindings/train.h: what other binding files take from the training binding.
#pragma once
#include "runtime/train/loop.h"

namespace ltrun::lua {

// The training loop's metric sink: the current run of this process. The one place where
// training (the causal LM, GRPO) writes to the store.
train::MetricSink run_sink();

}  // namespace ltrun::lua
