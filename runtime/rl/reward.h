// runtime/rl/reward.h: verifiable rewards of a response: math answer match (the evaluation
// area's extraction and equivalence), a format reward, and weighted sums of any reward
// functions, each one kept for logging.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/rl/prompts.h"

namespace ltrun::rl {

// 1 when the final answer of `response` (eval::extract_math_answer: "#### N", \boxed{},
// "answer is", else the last number) is eval::equivalent to `answer`, else 0.
double math_reward(std::string_view response, std::string_view answer);

// 1 when the response states a final answer in the asked form, else 0:
//   "boxed": a closed \boxed{...} with something in it;
//   "hash":  a "####" followed by an answer on its line (GSM8K);
//   "any":   either.
double format_reward(std::string_view response, const std::string& form = "any");

struct Reward {
  std::string name;  // logged as reward/<name>
  double weight = 1.0;
  std::function<double(const PromptItem& item, const std::string& response)> fn;
};

// A built-in reward by name: "math" (math_reward against the item's answer) or "format"
// (format_reward in `form`); another name is an error naming it (`what`: where it was asked).
Reward builtin_reward(const std::string& name, double weight, const std::string& form, const std::string& what);

struct Scores {
  std::vector<double> total;                 // per response: sum of weight * value
  std::vector<std::vector<double>> by_reward;  // [reward][response] unweighted values
};

// Scores responses[i] against items[index[i]] with every reward. A reward that returns a
// non-finite value is an error naming it and the item.
Scores score(const std::vector<PromptItem>& items, const std::vector<int64_t>& index,
             const std::vector<std::string>& responses, const std::vector<Reward>& rewards);

}  // namespace ltrun::rl
