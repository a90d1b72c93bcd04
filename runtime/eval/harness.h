// runtime/eval/harness.h: scoring a model on benchmark items. Multiple choice under three
// protocols: `logit` (the probability of each option letter right after the prompt; " A"
// and "A" are both counted), `generate` (greedy text, first valid option letter) and `cloze`
// (the options are not shown: each is scored by the sum of the log-probabilities of its
// tokens as the continuation of the item's cloze context, prompt.h's cloze_prompt; the
// highest sum wins, the earlier option on a tie; a model that cannot yet bind answers to
// option letters can still be scored on what it knows); math
// (GSM8K, MATH) by generation with stop strings, answer extraction and equivalence, k samples
// for avg@k / pass@k. Prompts of similar length are batched together (left padding + mask).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "runtime/core/fields.h"
#include "runtime/core/run_context.h"
#include "runtime/eval/benchmark.h"

namespace ltrun::model { class Model; }
namespace ltrun::text { class Tokenizer; }

namespace ltrun::eval {

struct HarnessOptions {
  std::vector<std::string> protocols = {"logit", "generate"};  // multiple choice only; or "cloze"
  int shots = 0;               // k-shot examples from the pool's dev split (same subject)
  int batch_size = 16;
  int max_new_tokens = 0;      // 0: 16 for multiple choice, 256 for math
  int samples = 1;             // math: generations per item (avg@k, pass@k)
  double temperature = 0.0;    // math sampling; 0 = greedy
  double top_p = 1.0;
  uint64_t seed = 0;
  // math: the prompt with "{question}" replaced by the item's question ("": math_prompt's);
  // for models trained on their own prompt format (the embedded tiny math model)
  std::string math_template;
  // generate: continuous batching (model::GenerateOptions::refill) with batch_size rows decoding
  // at once, items taken in their order; each item samples from its own stream (its index), so
  // results do not depend on batch_size. Off (the default): length buckets of batch_size, a seed
  // per bucket (what every eval figure so far was measured with).
  bool refill = false;
  std::function<void(size_t done, size_t total)> progress;  // called after each batch
};

// The options scripts set by key (runtime/core/fields.h): protocols, shots (>= 0),
// batch_size (>= 1), max_new_tokens (>= 0), samples (>= 1), top_p, template (math_template), refill.
// temperature, seed and progress are the caller's (temperature's default depends on samples).
const Fields<HarnessOptions>& harness_option_fields();

struct ItemResult {
  const Item* item = nullptr;
  std::string protocol;      // "logit", "generate", "generate_contains"
  std::string prediction;    // option letter, or the extracted math answer
  bool correct = false;
  std::string output;        // generated text ("" for logit)
  std::string prompt;        // the text the model was given (with its shots)
  std::vector<double> choice_probs;  // logit: P(letter) per option
  std::vector<double> choice_logp;   // cloze: Σ log P(continuation tokens) per option
  int sample = 0;            // math: which of the samples
};

// By key (runtime/core/fields.h): protocol, prediction, output, correct, sample (the item's
// id and the cloze choice_logp are the caller's).
const Fields<ItemResult>& item_result_fields();

struct Score {
  int n = 0, correct = 0;
  double acc() const { return n ? double(correct) / n : 0.0; }
};

// Multiple choice under the generate protocol is scored by two rules (choice_answer.h):
// protocol "generate" is the first-letter rule, "generate_contains" the inclusion rule of the
// paper's appendix (same outputs, one more summary and one more row per item).
struct Summary {
  std::string bench, protocol;
  Score all;  // the micro average: correct / n over every labelled item
  std::map<std::string, Score> by_subject, by_category;
  // C-Eval's and CMMLU's "Average" as their papers report it: the macro mean of the
  // per-category accuracies (categories without a labelled item, and "", left out); 0 if none.
  double acc_macro() const;
  double avg_at_k = 0, pass_at_k = 0;  // math with samples > 1 (pass@samples)
  int samples = 1;
};

struct HarnessResult {
  std::vector<ItemResult> items;
  std::vector<Summary> summaries;  // one per protocol (and generate_contains for multiple choice)
};

// Scores `items`; shots come from `pool` (items with split "dev" and the same subject).
HarnessResult evaluate(const model::Model& m, const text::Tokenizer& tok, const std::vector<Item>& items,
                       const std::vector<Item>& pool, const HarnessOptions& opt);

// The prompt a math item gets (zero-shot, step by step, answer marked as the benchmarks do);
// with a template, the template with each "{question}" replaced by the question.
std::string math_prompt(const Item& item, const std::string& tmpl = "");
// The prompt the harness gives an item: math_prompt for GSM8K and MATH-500 items (shots
// unused), else choice_prompt with the shots.
std::string item_prompt(const Item& item, const std::vector<Item>& shots = {});

// Text stored per item (eval_items.prompt, .output): at most this many bytes each, cut at a
// UTF-8 character boundary, "…[cut: N bytes]" appended (N: the whole text's length).
constexpr size_t kEvalTextBytes = 4000;
std::string cap_eval_text(const std::string& s);

// Writes a result to the current run: every item to eval_items (sample k > 0 as "ID#k"; correct
// only where the item has an answer; its prompt (on sample 0's row only) and output cut by
// cap_eval_text) and the metrics BENCH/PROTOCOL/acc, .../acc_macro (when
// categories are known), .../acc/CATEGORY, and BENCH/avg@K, BENCH/pass@K (samples K > 1).
void log_result(RunSink& sink, const std::string& bench, const HarnessResult& res);

}  // namespace ltrun::eval
