// bindings/eval.cpp: lt.eval: load benchmarks, score a model (lt.eval.run is completed in
// lib/lt/eval.lua), answer extraction, equivalence, votes and pass@k; lt.stats.jaccard.
// Every scored item goes to the current run's eval_items (bench, item_id, category,
// protocol, prediction, answer, correct); math samples after the first are item_id#k.
#include <lua.hpp>

#include <algorithm>
#include <cmath>

#include "bindings/luat.h"
#include "bindings/model.h"
#include "runtime/core/env.h"
#include "runtime/eval/benchmark.h"
#include "runtime/eval/choice_answer.h"
#include "runtime/eval/harness.h"
#include "runtime/eval/math_answer.h"
#include "runtime/eval/metrics.h"
#include "runtime/eval/prompt.h"

namespace ltrun::lua {
namespace {

void push_item(lua_State* L, const eval::Item& it) {
  lua_createtable(L, 0, 10);
  set_fields(L, it, eval::item_fields());
  if (!it.cloze.empty()) set_field(L, "cloze", it.cloze);
  if (!it.cloze_choices.empty()) set_array(L, "cloze_choices", it.cloze_choices);
}

std::string field(lua_State* L, int t, const char* k, const char* fn, bool required) {
  lua_getfield(L, t, k);
  std::string v;
  if (lua_isstring(L, -1)) v = lua_tostring(L, -1);
  else if (required) fail("{}: item field '{}' is missing", fn, k);
  lua_pop(L, 1);
  return v;
}

eval::Item read_item(lua_State* L, int t, const char* fn) {
  check_table(L, t, fn);
  eval::Item it;
  it.bench = field(L, t, "bench", fn, false);
  if (it.bench.empty()) it.bench = "mcq";
  it.id = field(L, t, "id", fn, true);
  it.question = field(L, t, "question", fn, true);
  it.answer = field(L, t, "answer", fn, false);
  it.subject = field(L, t, "subject", fn, false);
  it.category = field(L, t, "category", fn, false);
  it.split = field(L, t, "split", fn, false);
  it.source = "item " + it.id;
  it.solution = field(L, t, "solution", fn, false);
  it.cloze = field(L, t, "cloze", fn, false);
  it.choices = opt_strings(L, t, "choices", fn);
  it.cloze_choices = opt_strings(L, t, "cloze_choices", fn);
  return it;
}

std::vector<eval::Item> read_items(lua_State* L, int t, const char* fn) {
  check_table(L, t, fn);
  std::vector<eval::Item> items;
  for (int i = 1; i <= int(lua_objlen(L, t)); i++) {
    lua_rawgeti(L, t, i);
    items.push_back(read_item(L, lua_gettop(L), fn));
    lua_pop(L, 1);
  }
  return items;
}

// lt.eval.load(format, path) → array of items (all splits)
int l_load(lua_State* L) {
  const auto fmt_name = check_string(L, 1, "lt.eval.load");
  const auto items = eval::load_benchmark(eval::parse_format(fmt_name), check_string(L, 2, "lt.eval.load"));
  push_list(L, items, [L](const eval::Item& it) { push_item(L, it); });
  return 1;
}

eval::HarnessOptions read_harness_options(lua_State* L, int opts, const char* fn) {
  eval::HarnessOptions o;
  read_fields(L, opts, fn, o, eval::harness_option_fields(), true, {"temperature", "seed", "bench"});
  o.temperature = opt_number(L, opts, "temperature", fn).value_or(o.samples > 1 ? 0.7 : 0.0);
  o.seed = opt_seed(L, opts, fn, "eval");
  return o;
}

// summary[protocol] = {acc, acc_macro, n, correct, by_category = {cat = acc}, by_subject = {...}};
// protocol "generate_contains": the generate outputs under the inclusion rule
void push_summary(lua_State* L, const eval::Summary& sum) {
  lua_createtable(L, 0, 8);
  set_field(L, "acc", sum.all.acc());
  set_field(L, "acc_macro", sum.acc_macro());
  set_field(L, "n", sum.all.n);
  set_field(L, "correct", sum.all.correct);
  for (auto [name, table] : {std::pair{"by_category", &sum.by_category}, std::pair{"by_subject", &sum.by_subject}}) {
    lua_newtable(L);
    for (const auto& [k, sc] : *table)
      if (!k.empty()) set_field(L, k.c_str(), sc.acc());
    lua_setfield(L, -2, name);
  }
  if (sum.samples > 1) {
    set_field(L, "avg_at_k", sum.avg_at_k);
    set_field(L, "pass_at_k", sum.pass_at_k);
    set_field(L, "k", sum.samples);
  }
}

// one prediction: {id, protocol, prediction, output, correct, sample, choice_logp (cloze)}
void push_item_result(lua_State* L, const eval::ItemResult& r) {
  lua_createtable(L, 0, 7);
  set_field(L, "id", r.item->id);
  set_fields(L, r, eval::item_result_fields());
  if (!r.choice_logp.empty()) set_array(L, "choice_logp", r.choice_logp);  // cloze: the score of each option
}

// lt.eval.score(model, items, pool, {protocols=, shots=, batch_size=, max_new_tokens=,
//   samples=, temperature=, top_p=, seed = (stream "eval"), bench=, template=} (math: the
//   prompt, "{question}" replaced) → {[protocol] = summary, items = {predictions in item
//   order per protocol}}; logs items and accuracies to the current run (eval::log_result)
int l_score(lua_State* L) {
  const char* fn = "lt.eval.score";
  const ModelHandle& h = check_model(L, 1, fn);
  if (!h.tok) fail("{}: {} has no tokenizer.json, which evaluation needs", fn, h.path);
  const auto items = read_items(L, 2, fn);
  const auto pool = lua_istable(L, 3) ? read_items(L, 3, fn) : std::vector<eval::Item>{};
  eval::HarnessOptions o = read_harness_options(L, 4, fn);
  const std::string bench = opt_string(L, 4, "bench", fn).value_or(items.empty() ? "" : items[0].bench);
  if (stderr_is_terminal())
    o.progress = [&](size_t done, size_t total) {
      fmt::print(stderr, "\reval {}: {}/{} items", bench, done, total);
      if (done == total) fmt::print(stderr, "\n");
    };
  const auto res = eval::evaluate(*h.m, *h.tok, items, pool, o);
  if (RunSink* sink = run_context(L).sink) eval::log_result(*sink, bench, res);
  lua_createtable(L, 0, int(res.summaries.size()));
  for (const auto& sum : res.summaries) {
    push_summary(L, sum);
    lua_setfield(L, -2, sum.protocol.c_str());
  }
  push_list(L, res.items, [L](const eval::ItemResult& r) { push_item_result(L, r); });
  lua_setfield(L, -2, "items");
  return 1;
}

// lt.eval.prompt(item[, shots]) → the prompt the harness gives the item
int l_prompt(lua_State* L) {
  const eval::Item it = read_item(L, 1, "lt.eval.prompt");
  push(L, eval::item_prompt(it, lua_istable(L, 2) ? read_items(L, 2, "lt.eval.prompt") : std::vector<eval::Item>{}));
  return 1;
}

// lt.eval.contains_option(output, answer_letter, answer_text) → whether the correct option
// appears in the output (the generate protocol's inclusion rule, "generate_contains")
int l_contains_option(lua_State* L) {
  const char* fn = "lt.eval.contains_option";
  lua_pushboolean(L, eval::contains_option(check_string(L, 1, fn), check_string(L, 2, fn), check_string(L, 3, fn)));
  return 1;
}

int l_extract_choice(lua_State* L) {
  push(L, eval::extract_choice(check_string(L, 1, "lt.eval.extract_choice"),
                               lua_isnoneornil(L, 2) ? 4 : check_int(L, 2, "lt.eval.extract_choice", 1)));
  return 1;
}

int l_extract_math(lua_State* L) {
  auto a = eval::extract_math_answer(check_string(L, 1, "lt.eval.extract_math"));
  if (a) push(L, *a); else lua_pushnil(L);
  return 1;
}

int l_equivalent(lua_State* L) {
  lua_pushboolean(L, eval::equivalent(check_string(L, 1, "lt.eval.equivalent"),
                                      check_string(L, 2, "lt.eval.equivalent")));
  return 1;
}

eval::Compare compare_opt(lua_State* L, int idx, const char* fn) {
  check_options(L, idx, fn, {"compare"});
  return eval::parse_compare(opt_string(L, idx, "compare", fn).value_or("exact"), fn);
}

std::vector<std::string> strings(lua_State* L, int idx, const char* fn) {
  check_table(L, idx, fn);
  std::vector<std::string> v;
  for (int i = 1; i <= int(lua_objlen(L, idx)); i++) {
    lua_rawgeti(L, idx, i);
    v.push_back(lua_isstring(L, -1) ? lua_tostring(L, -1) : "");
    lua_pop(L, 1);
  }
  return v;
}

// lt.eval.vote(answers[, {compare="exact"|"math"}]) → answer, votes, total. Empty answers
// abstain; ties go to the earliest answer among the tied groups.
int l_vote(lua_State* L) {
  auto v = eval::vote(strings(L, 1, "lt.eval.vote"), compare_opt(L, 2, "lt.eval.vote"));
  push(L, v.answer);
  lua_pushnumber(L, v.votes);
  lua_pushnumber(L, v.total);
  return 3;
}

int l_pass_at_k(lua_State* L) {
  lua_pushnumber(L, eval::pass_at_k(check_int(L, 1, "lt.eval.pass_at_k"), check_int(L, 2, "lt.eval.pass_at_k"),
                                    check_int(L, 3, "lt.eval.pass_at_k")));
  return 1;
}

}  // namespace

void register_eval(lua_State* L) {
  new_module(L, "eval");
  static const luaL_Reg fns[] = {
      {"load", LT_FN(l_load)}, {"score", LT_FN(l_score)}, {"prompt", LT_FN(l_prompt)},
      {"extract_choice", LT_FN(l_extract_choice)},
      {"contains_option", LT_FN(l_contains_option)},
      {"extract_math", LT_FN(l_extract_math)}, {"equivalent", LT_FN(l_equivalent)},
      {"vote", LT_FN(l_vote)}, {"pass_at_k", LT_FN(l_pass_at_k)}, {nullptr, nullptr}};
  set_funcs(L, fns);
  lua_pop(L, 1);
}

}  // namespace ltrun::lua
