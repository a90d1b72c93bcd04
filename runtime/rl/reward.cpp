// runtime/rl/reward.cpp: math answer and format rewards, weighted scoring.
#include "runtime/rl/reward.h"

#include <cctype>
#include <cmath>

#include "runtime/core/error.h"
#include "runtime/eval/math_answer.h"

namespace ltrun::rl {

double math_reward(std::string_view response, std::string_view answer) {
  const auto got = eval::extract_math_answer(response);
  return got && eval::equivalent(*got, answer) ? 1.0 : 0.0;
}

namespace {

bool has_boxed(std::string_view r) {
  const auto b = eval::last_boxed(r);
  if (!b) return false;
  for (char c : *b)
    if (!std::isspace(static_cast<unsigned char>(c))) return true;
  return false;
}

bool has_hash(std::string_view r) {
  const size_t p = r.rfind("####");
  if (p == std::string_view::npos) return false;
  for (size_t i = p + 4; i < r.size() && r[i] != '\n'; ++i)
    if (!std::isspace(static_cast<unsigned char>(r[i]))) return true;
  return false;
}

}  // namespace

double format_reward(std::string_view response, const std::string& form) {
  if (form == "boxed") return has_boxed(response) ? 1 : 0;
  if (form == "hash") return has_hash(response) ? 1 : 0;
  if (form == "any") return has_boxed(response) || has_hash(response) ? 1 : 0;
  fail("rl.format_reward: form '{}': expected boxed, hash or any", form);
}

Scores score(const std::vector<PromptItem>& items, const std::vector<int64_t>& index,
             const std::vector<std::string>& responses, const std::vector<Reward>& rewards) {
  LT_CHECK(index.size() == responses.size(), "rl.score: {} responses but {} item indices",
           responses.size(), index.size());
  LT_CHECK(!rewards.empty(), "rl.score: no reward");
  Scores s;
  s.total.assign(responses.size(), 0.0);
  s.by_reward.assign(rewards.size(), std::vector<double>(responses.size(), 0.0));
  for (size_t i = 0; i < responses.size(); ++i) {
    LT_CHECK(index[i] >= 0 && size_t(index[i]) < items.size(), "rl.score: item index {} out of {}",
             index[i], items.size());
    const PromptItem& it = items[size_t(index[i])];
    for (size_t k = 0; k < rewards.size(); ++k) {
      const double v = rewards[k].fn(it, responses[i]);
      LT_CHECK(std::isfinite(v), "rl.score: reward {} returned {} for item {} ({})", rewards[k].name,
               v, it.id, it.source);
      s.by_reward[k][i] = v;
      s.total[i] += rewards[k].weight * v;
    }
  }
  return s;
}

Reward builtin_reward(const std::string& name, double weight, const std::string& form, const std::string& what) {
  if (name == "math")
    return {name, weight, [](const PromptItem& it, const std::string& r) { return math_reward(r, it.answer); }};
  if (name == "format") {
    format_reward("", form);  // checks the form now
    return {name, weight, [form](const PromptItem&, const std::string& r) { return format_reward(r, form); }};
  }
  fail("{}: not a built-in reward (math, format): give a function", what);
}

}  // namespace ltrun::rl
