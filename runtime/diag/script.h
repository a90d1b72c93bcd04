// runtime/diag/script.h: lt.diag, the LayerTracer study for scripts (bindings/diag.cpp
// registers these): trace (Task Particle, Layer-wise Sensitivity, group means, profiles,
// split scores) and its measures (js, tp_ratio, delta_js, normalise, split_score, splits,
// split_layer).
//
// Series follow out.hidden of model:forward: a residual series (p_target, js) has keys
// 0..N (0 = the embeddings, l+1 = after block l); a block series (tp_ratio, ls_djs, tp, ls)
// is the plain array 1..N, entry l+1 = block l, which is what lt.run.log_layers expects.
// Token positions (context) count from 0, as tensor indices do.
#pragma once
#include <vector>

#include "runtime/core/options.h"

namespace ltrun::diag {

const std::vector<ScriptFunction>& script_functions();

}  // namespace ltrun::diag
