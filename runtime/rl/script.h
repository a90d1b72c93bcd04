// runtime/rl/script.h: lt.rl for scripts (bindings/rl.cpp registers these): grpo (the GRPO
// objective on the shared training loop), accuracy (held-out), advantages, policy_loss,
// preset, rollout, logprobs, entry, reference (the lt.rl.Reference class), rewards
// (math_reward, format_reward), prompt sets (prompts, format_prompt, chat_prompt,
// decontaminate).
//
// A rollouts table (from lt.rl.rollout) holds tensors ids, attention_mask [N, P + R],
// response_mask, logprobs [N, R], numbers prompt_len (P), resp_len (R), tokens, and Lua
// arrays texts, finish, prompt_index (1-based prompt numbers), responses (token id lists).
#pragma once
#include <vector>

#include "runtime/core/options.h"

namespace ltrun::rl {

const std::vector<ScriptFunction>& script_functions();
const ScriptClass& reference_class();  // lt.rl.Reference

}  // namespace ltrun::rl
