// runtime/eval/script.h: the C++ half of lt.eval (bindings/eval.cpp registers these; the Lua half,
// lt.eval.run with its benchmark specs and votes across runs, is lib/lt/tasks/eval.lua): load
// benchmarks, score a model, prompts, answer
// extraction, equivalence, votes and pass@k. Every scored item goes to the current run's
// eval_items (bench, item_id, category, protocol, prediction, answer, correct); math samples
// after the first are item_id#k.
#pragma once
#include <vector>

#include "runtime/core/options.h"

namespace ltrun::eval {

const std::vector<ScriptFunction>& script_functions();

}  // namespace ltrun::eval
