// tests/rl: prompt preparation (runtime/rl/prepare.h): the length limit, GRPO's subsets and
// decontamination, built-in rewards by name.

#include "runtime/rl/prepare.h"
#include "runtime/rl/reward.h"
// Catch2 after the runtime headers: LibTorch brings glog, whose CHECK would otherwise win
#include <catch2/catch.hpp>

using namespace ltrun::rl;

namespace {
std::vector<PromptItem> items(int n, const std::string& stem) {
  std::vector<PromptItem> v;
  for (int i = 0; i < n; i++) v.push_back({std::to_string(i), stem + " number " + std::to_string(i), "1", ""});
  return v;
}
std::string what(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("prompt limit: the smaller of the model's room and max_prompt_tokens, named", "[rl][prepare]") {
  PromptLimit a = prompt_limit(128, 28, std::nullopt, "fn");
  CHECK(a.tokens == 100);
  CHECK(a.why == "the model's max_position_embeddings 128 less max_response 28");
  CHECK(prompt_limit(128, 28, 30, "fn").tokens == 30);
  CHECK(prompt_limit(128, 28, 300, "fn").tokens == 100);
  CHECK(prompt_limit(0, 28, std::nullopt, "fn").tokens == 0);  // no limit
  CHECK(what([] { prompt_limit(64, 64, std::nullopt, "fn"); }).find("fn: max_response 64 leaves no room") == 0);
  CHECK_NOTHROW(check_prompt_length(a, 100, "x", "fn"));
  CHECK(what([&] { check_prompt_length(a, 101, "data.jsonl:3", "fn"); }) ==
        "fn: data.jsonl:3: the prompt is 101 tokens, longer than 100 (the model's max_position_embeddings 128 less "
        "max_response 28); shorten it or drop the item");
}

TEST_CASE("GRPO data: subsets by seed, decontamination against the evaluation questions", "[rl][prepare]") {
  auto train = items(20, "alpha beta gamma delta epsilon zeta eta theta");
  train[3].question = "what is seven plus eight in total";  // shares a 4-gram with an eval question
  auto evals = items(5, "iota kappa lambda mu nu xi omicron pi");
  evals[0].question = "tell me what is seven plus eight please";
  const GrpoData all = prepare_grpo_data(train, evals, 0, 0, 4, 1, "fn");
  CHECK(all.items.size() == 19);
  CHECK(all.removed == 1);
  CHECK(all.evals.size() == 5);
  const GrpoData a = prepare_grpo_data(train, evals, 6, 2, 0, 7, "fn");
  const GrpoData b = prepare_grpo_data(train, evals, 6, 2, 0, 7, "fn");
  const GrpoData c = prepare_grpo_data(train, evals, 6, 2, 0, 8, "fn");
  REQUIRE(a.items.size() == 6);
  REQUIRE(a.evals.size() == 2);
  auto ids = [](const std::vector<PromptItem>& v) {
    std::string s;
    for (const auto& i : v) s += i.id + ",";
    return s;
  };
  CHECK(ids(a.items) == ids(b.items));
  CHECK(ids(a.evals) == ids(sample_prompts(evals, 2, 8)));  // the evaluation subset uses seed + 1
  CHECK(ids(c.items) != ids(a.items));
  auto one = items(1, "same words as the eval set here");
  CHECK(what([&] { prepare_grpo_data(one, items(1, "same words as the eval set here"), 0, 0, 3, 1, "fn"); }) ==
        "fn: decontamination removed every prompt");
}

TEST_CASE("built-in rewards by name; another name is an error naming where", "[rl][reward]") {
  const PromptItem it{"1", "q", "42", ""};
  CHECK(builtin_reward("math", 2.0, "any", "w").fn(it, "so \\boxed{42}") == 1.0);
  CHECK(builtin_reward("math", 2.0, "any", "w").weight == 2.0);
  CHECK(builtin_reward("format", 1.0, "hash", "w").fn(it, "#### 7") == 1.0);
  CHECK(builtin_reward("format", 1.0, "boxed", "w").fn(it, "#### 7") == 0.0);
  CHECK(what([] { builtin_reward("format", 1.0, "boxes", "w"); }).find("form 'boxes'") != std::string::npos);
  CHECK(what([] { builtin_reward("len", 1.0, "any", "lt.rl.grpo: rewards.len"); }) ==
        "lt.rl.grpo: rewards.len: not a built-in reward (math, format): give a function");
}
