// runtime/eval/script.cpp: lt.eval's functions over script values (runtime/eval/script.h).
#include "runtime/eval/script.h"

#include <fmt/format.h>

#include "runtime/core/env.h"
#include "runtime/core/run_context.h"
#include "runtime/eval/benchmark.h"
#include "runtime/eval/choice_answer.h"
#include "runtime/eval/harness.h"
#include "runtime/eval/math_answer.h"
#include "runtime/eval/metrics.h"
#include "runtime/model/handle.h"

namespace ltrun::eval {
namespace {

Value item_value(const Item& it) {
  Value v = Value::record(it, item_fields());
  if (!it.cloze.empty()) v.set("cloze", it.cloze);
  if (!it.cloze_choices.empty()) v.set("cloze_choices", it.cloze_choices);
  return v;
}

Item read_item(const Value& t, const std::string& fn, int arg) {
  if (!t.is_table()) fail("{}: argument {}: expected a table, got {}", fn, arg, t.type_name());
  auto field = [&](const char* k, bool required) {
    auto v = text_of(t[k]);
    if (!v && required) fail("{}: item field '{}' is missing", fn, k);
    return v.value_or("");
  };
  const Options o(t, fn);
  Item it;
  it.bench = field("bench", false);
  if (it.bench.empty()) it.bench = "mcq";
  it.id = field("id", true);
  it.question = field("question", true);
  it.answer = field("answer", false);
  it.subject = field("subject", false);
  it.category = field("category", false);
  it.split = field("split", false);
  it.source = "item " + it.id;
  it.solution = field("solution", false);
  it.cloze = field("cloze", false);
  it.choices = o.strings("choices");
  it.cloze_choices = o.strings("cloze_choices");
  return it;
}

std::vector<Item> read_items(const Value& t, const std::string& fn, int arg) {
  if (!t.is_table()) fail("{}: argument {}: expected a table, got {}", fn, arg, t.type_name());
  std::vector<Item> items;
  for (const Value& x : t.tab().array) items.push_back(read_item(x, fn, arg));
  return items;
}

// lt.eval.load(format, path) → array of items (all splits)
List load(const Args& a) {
  Value out = Value::table();
  for (const Item& it : load_benchmark(parse_format(a.string(1)), a.string(2))) out.push(item_value(it));
  return {out};
}

// summary[protocol] = {acc, acc_macro, n, correct, by_category = {cat = acc}, by_subject = {...}};
// protocol "generate_contains": the generate outputs under the inclusion rule
Value summary_value(const Summary& sum) {
  Value v = Value::table().set("acc", sum.all.acc()).set("acc_macro", sum.acc_macro());
  v.set("n", sum.all.n).set("correct", sum.all.correct);
  for (auto [name, table] : {std::pair{"by_category", &sum.by_category}, std::pair{"by_subject", &sum.by_subject}}) {
    Value by = Value::table();
    for (const auto& [k, sc] : *table)
      if (!k.empty()) by.set(k, sc.acc());
    v.set(name, by);
  }
  if (sum.samples > 1) v.set("avg_at_k", sum.avg_at_k).set("pass_at_k", sum.pass_at_k).set("k", sum.samples);
  return v;
}

// one prediction: {id, protocol, prediction, output, correct, sample, choice_logp (cloze)}
Value item_result_value(const ItemResult& r) {
  Value v = Value::record(r, item_result_fields()).set("id", r.item->id);
  if (!r.choice_logp.empty()) v.set("choice_logp", r.choice_logp);  // cloze: the score of each option
  return v;
}

// lt.eval.score(model, items, pool, {protocols=, shots=, batch_size=, max_new_tokens=,
//   samples=, temperature=, top_p=, seed = (stream "eval"), bench=, template=} (math: the
//   prompt, "{question}" replaced) → {[protocol] = summary, items = {predictions in item
//   order per protocol}}; logs items and accuracies to the current run (eval::log_result)
const ApiDoc& kScore = declare_api(
    {"lt.eval.score", "lt.eval.score(m, items, pool[, opts]) → {[protocol] = summary, items = {...}}",
     "scores a model on benchmark items under the harness's protocols; logs to the run",
     {{"protocols", "strings", "protocols to run (cloze, letter, generate, math, ...)"},
      {"shots", "integer", "few-shot examples drawn from pool"},
      {"batch_size", "integer", "rows per forward pass"},
      {"max_new_tokens", "integer", "generation budget of generative protocols"},
      {"samples", "integer", "samples per item (majority vote past 1)"},
      {"temperature", "number", "sampling temperature (default 0, or 0.7 with samples > 1)"},
      {"top_p", "number", "nucleus sampling mass"},
      {"seed", "integer", "sampling seed (default: the run's stream \"eval\")"},
      {"bench", "string", "the name results are logged under (default: the items' bench)"},
      {"template", "string", "math: the prompt, with {question} replaced"},
      {"refill", "boolean", "continuous batching of generation"}}});

List score(const Args& a) {
  const model::ModelHandle& h = model::model_arg(a, 1);
  if (!h.tok) fail("{}: {} has no tokenizer.json, which evaluation needs", a.fn(), h.path);
  const auto items = read_items(a[2], a.fn(), 2);
  const auto pool = a[3].is_table() ? read_items(a[3], a.fn(), 3) : std::vector<Item>{};
  const Options opts = a.options(4);
  HarnessOptions o;
  opts.check(kScore).read(o, harness_option_fields());
  o.temperature = opts.number("temperature").value_or(o.samples > 1 ? 0.7 : 0.0);
  o.seed = opts.seed(a.run().stream("eval"));
  const std::string bench = opts.string("bench").value_or(items.empty() ? "" : items[0].bench);
  if (stderr_is_terminal())
    o.progress = [&](size_t done, size_t total) {
      fmt::print(stderr, "\reval {}: {}/{} items", bench, done, total);
      if (done == total) fmt::print(stderr, "\n");
    };
  const auto res = evaluate(*h.m, *h.tok, items, pool, o);
  if (RunSink* sink = a.run().sink) log_result(*sink, bench, res);
  Value out = Value::table();
  for (const Summary& sum : res.summaries) out.set(sum.protocol, summary_value(sum));
  Value rs = Value::table();
  for (const ItemResult& r : res.items) rs.push(item_result_value(r));
  return {out.set("items", rs)};
}

// lt.eval.prompt(item[, shots]) → the prompt the harness gives the item
List prompt(const Args& a) {
  return {item_prompt(read_item(a[1], a.fn(), 1), a[2].is_table() ? read_items(a[2], a.fn(), 2) : std::vector<Item>{})};
}

// lt.eval.contains_option(output, answer_letter, answer_text) → whether the correct option
// appears in the output (the generate protocol's inclusion rule, "generate_contains")
List contains_option_fn(const Args& a) { return {contains_option(a.string(1), a.string(2), a.string(3))}; }

List extract_choice_fn(const Args& a) { return {extract_choice(a.string(1), a.none(2) ? 4 : a.int_(2, 1))}; }

List extract_math(const Args& a) {
  auto x = extract_math_answer(a.string(1));
  return {x ? Value(*x) : Value()};
}

List equivalent_fn(const Args& a) { return {equivalent(a.string(1), a.string(2))}; }

// lt.eval.vote(answers[, {compare="exact"|"math"}]) → answer, votes, total. Empty answers
// abstain (as do entries that are not strings); ties go to the earliest answer among the tied groups.
const ApiDoc& kVote = declare_api({"lt.eval.vote", "lt.eval.vote(answers[, opts]) → answer, votes, total",
                                   "majority vote; empty answers abstain; ties go to the earliest",
                                   {{"compare", "string", "exact | math (default exact)"}}});

List vote_fn(const Args& a) {
  std::vector<std::string> answers;
  for (const Value& x : a.table(1).tab().array) answers.push_back(text_of(x).value_or(""));
  const Options o = a.options(2).check(kVote);
  const Vote v = vote(answers, parse_compare(o.string("compare").value_or("exact"), a.fn()));
  return {v.answer, v.votes, v.total};
}

List pass_at_k_fn(const Args& a) { return {pass_at_k(a.int_(1), a.int_(2), a.int_(3))}; }

}  // namespace

const std::vector<ScriptFunction>& script_functions() {
  static const std::vector<ScriptFunction> fs = {
      {"lt.eval.load", load},
      {"lt.eval.score", score},
      {"lt.eval.prompt", prompt},
      {"lt.eval.extract_choice", extract_choice_fn},
      {"lt.eval.contains_option", contains_option_fn},
      {"lt.eval.extract_math", extract_math},
      {"lt.eval.equivalent", equivalent_fn},
      {"lt.eval.vote", vote_fn},
      {"lt.eval.pass_at_k", pass_at_k_fn}};
  return fs;
}

}  // namespace ltrun::eval
