// runtime/eval/script.h: lt.eval for scripts (bindings/eval.cpp registers these): load
// benchmarks, score a model (lt.eval.run is completed in lib/lt/tasks/eval.lua), prompts, answer
// extraction, equivalence, votes and pass@k. Every scored item goes to the current run's
// eval_items (bench, item_id, category, protocol, prediction, answer, correct); math samples
// after the first are item_id#k.
#pragma once
#include <vector>

#include "runtime/core/options.h"

namespace ltrun::eval {

const std::vector<ScriptFunction>& script_functions();

}  // namespace ltrun::eval
