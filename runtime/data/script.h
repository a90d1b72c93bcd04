// runtime/data/script.h: lt.data for scripts (bindings/data.cpp registers these): pack (text /
// JSONL / folders → uint32 token shards + index.json), info (what a packed corpus holds),
// windows (token rows [n, seq_len + 1] in the trainer's deterministic shuffled order).
#pragma once
#include <vector>

#include "runtime/core/options.h"

namespace ltrun::data {

const std::vector<ScriptFunction>& script_functions();

}  // namespace ltrun::data
