// tests/rl/grpo_fixture.h: the GRPO test setting shared by tests/rl/test_grpo.cpp and
// tests/dist/test_grpo_dist.cpp: a tiny qwen3 policy (EOS 3), a "tokenizer" that maps token t
// to the letter 'a' + t % 26, a made-up verifiable reward (the share of a's, b's and c's in 6
// letters), five prompts, and the options both tests start from.
#pragma once
#include <string>
#include <vector>

#include "runtime/model/tiny.h"
#include "runtime/rl/grpo.h"
#include "runtime/train/loop.h"
#include "tests/tiny_spec.h"

namespace ltrun_test::grpo {

inline ltrun::model::Model policy() {
  ltrun::model::TinySpec s = ltrun_test::tiny_spec("qwen3", 3, 4);
  s.eos_token_id = 3;
  return ltrun::model::make_tiny(s);
}

inline std::string letters(const std::vector<int64_t>& t) {
  std::string s;
  for (int64_t x : t) s += char('a' + x % 26);
  return s;
}

// GRPO, kl 0.01, groups of 4, responses of at most 6 tokens, seed 11, 2 epochs x 2
// mini-batches of micro-batches of 3, the "abc" reward; each test sets prompts and the rest.
inline ltrun::rl::GrpoOptions options() {
  ltrun::rl::GrpoOptions o;
  o.algo = "grpo";
  o.kl = 0.01;
  o.rollout.group_size = 4;
  o.rollout.max_response = 6;
  o.rollout.seed = 11;
  o.rollout.decode = letters;
  o.epochs = 2;
  o.mini_batches = 2;
  o.micro_batch = 3;
  o.rewards.push_back({"abc", 1.0, [](const ltrun::rl::PromptItem&, const std::string& r) {
                         double n = 0;
                         for (char c : r) n += c <= 'c' ? 1 : 0;
                         return n / 6;
                       }});
  return o;
}

inline std::vector<ltrun::rl::PromptItem> items() {
  std::vector<ltrun::rl::PromptItem> v;
  for (int i = 0; i < 5; ++i) v.push_back({std::to_string(i), "q" + std::to_string(i), "1", "test"});
  return v;
}
inline std::vector<std::vector<int64_t>> prompt_ids() {
  return {{5, 17, 9}, {12, 4}, {8, 30, 21, 2}, {40, 41}, {7, 7, 7}};
}

inline ltrun::train::LoopOptions loop_options(int64_t steps) {
  ltrun::train::LoopOptions l;
  l.steps = steps;
  l.lr = 3e-3;
  l.decay = "constant";
  l.weight_decay = 0;
  l.progress = false;
  return l;
}

}  // namespace ltrun_test::grpo
