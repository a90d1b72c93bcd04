// runtime/rl/script.cpp: lt.rl's functions over script values (runtime/rl/script.h).
#include "runtime/rl/script.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "runtime/core/tensor_ops.h"
#include "runtime/dist/dist.h"
#include "runtime/model/handle.h"
#include "runtime/rl/gigpo.h"
#include "runtime/rl/grpo.h"
#include "runtime/rl/logprob.h"
#include "runtime/rl/loss.h"
#include "runtime/rl/prepare.h"
#include "runtime/rl/prompts.h"
#include "runtime/rl/reference.h"
#include "runtime/rl/reward.h"
#include "runtime/rl/rollout.h"
#include "runtime/train/script.h"

namespace ltrun::rl {
namespace {

using model::ModelHandle;

// t[key] as a tensor (float for numbers and tables); required: an error when absent
at::Tensor field_tensor(const Options& o, const char* key, bool required = true) {
  if (o.has(key)) return tensor_from(o[key], o.fn(), 1, at::kFloat);
  if (required) fail("{}: missing field {}", o.fn(), key);
  return {};
}

// lt.rl.advantages(rewards, group_size, {norm = "std" | "none", eps = 1e-6}) -> Lua array
const ApiDoc& kAdvantages = declare_api(
    {"lt.rl.advantages", "lt.rl.advantages(rewards, group_size[, opts]) → advantages",
     "group-relative advantages of consecutive groups of rewards",
     {{"norm", "string", "std (divide by the group's std) | none"}, {"eps", "number", "added to the std (default 1e-6)"}}});

List advantages_fn(const Args& a) {
  const Options o = a.options(3).check(kAdvantages);
  const auto r = numbers_of(a[1], a.fn(), "rewards");
  return {advantages(r, a.integer(2), parse_adv_norm(o.string("norm").value_or("std")), o.number("eps").value_or(1e-6))};
}

// lt.rl.gigpo(group, {gamma = 0.95, omega = 1, norm = "std" | "none", scope = "steps" |
// "episodes", lone = "pass" | "zero", eps = 1e-6}): GiGPO's advantages for one group of
// episodes of one task (runtime/rl/gigpo.h; the defaults are verl-agent's); group = {{anchors =
// {key per step}, rewards = {reward per step}[, penalties = {row penalty per step}]}, ...} ->
// {advantage = {{per step}, ...} (A), episode = {A_E}, episode_step = {{A_E per row}},
// episode_return = {R}, step = {{A_S}}, returns = {{R_t}}, anchor_group = {{0-based group of
// each step}}, group_size = {steps per anchor group}}; omega = 0: GRPO on episodes
const ApiDoc& kGigpo = declare_api(
    {"lt.rl.gigpo", "lt.rl.gigpo(group[, opts]) → {advantage=, episode=, step=, returns=, anchor_group=, ...}",
     "GiGPO's advantages for one group of episodes (verl-agent's defaults)",
     {{"gamma", "number", "discount of step returns (default 0.95)"},
      {"omega", "number", "weight of the step advantage (default 1; 0: GRPO on episodes)"},
      {"norm", "string", "std | none"},
      {"scope", "string", "steps | episodes: rows the episode advantage goes to"},
      {"lone", "string", "pass | zero: a lone anchor's step advantage"},
      {"eps", "number", "added to the std (default 1e-6)"}}});
const ApiDoc& kGigpoEpisode = declare_api(
    {"lt.rl.gigpo group[i]", "{anchors = {key per step}, rewards = {per step}[, penalties = {per step}]}",
     "one episode of a GiGPO group",
     {{"anchors", "strings", "the anchor state key of each step"},
      {"rewards", "numbers", "the reward of each step"},
      {"penalties", "numbers", "a row penalty per step (invalid actions)"}}});

List gigpo_fn(const Args& a) {
  const Options o = a.options(2).check(kGigpo);
  GigpoOptions go;
  o.read(go, gigpo_option_fields());
  if (auto n = o.string("norm")) go.norm = parse_adv_norm(*n);
  if (auto n = o.string("scope")) go.scope = parse_episode_scope(*n);
  if (auto n = o.string("lone")) go.lone = parse_lone_episode(*n);
  a.table(1);
  std::vector<Episode> group;
  for (size_t i = 0; i < a[1].size(); ++i) {
    const Value& e = a[1][double(i + 1)];
    const std::string what = fmt::format("group[{}]", i + 1);
    const Options eo = Options(e, a.fn() + ": " + what).check(kGigpoEpisode);
    group.push_back({strings_of(e["anchors"], a.fn(), what + ".anchors"), numbers_of(e["rewards"], a.fn(), what + ".rewards"),
                     e["penalties"].is_nil() ? std::vector<double>{} : numbers_of(e["penalties"], a.fn(), what + ".penalties")});
  }
  const GigpoAdvantages r = gigpo_advantages(group, go);
  return {Value::table().set("advantage", r.advantage).set("episode", r.episode).set("episode_return", r.episode_return)
              .set("episode_step", r.episode_step).set("step", r.step).set("returns", r.returns)
              .set("anchor_group", r.anchor_group).set("group_size", r.group_size)};
}

// produce = function(batch) -> {prompts = {ids...}, responses = {ids...}, advantages = {...},
// metrics = {name = number}}: batch b's rows (GrpoOptions::produce), b = 1, 2, ...
const ApiDoc& kProduced = declare_api(
    {"lt.rl.grpo produce()", "produce(batch) → {prompts=, responses=, advantages=, metrics=}",
     "the rows of one batch made by the caller (an agent's steps)",
     {{"prompts", "table", "token ids of each row's prompt"},
      {"responses", "table", "token ids of each row's response"},
      {"advantages", "numbers", "one advantage per row"},
      {"metrics", "table", "{name = number} logged with the step"}}});

std::function<ProducedBatch(int64_t)> produce_option(const Value& f, const std::string& fn) {
  return [f, fn](int64_t b) {
    const std::string what = fmt::format("{}: produce(batch {})", fn, b + 1);
    const Value r = call(f, what, {Value(b + 1)});
    const Options o = Options(r, what).check(kProduced);
    ProducedBatch pb;
    for (size_t i = 0; i < r["prompts"].size(); ++i)
      pb.prompts.push_back(integers_of(r["prompts"][double(i + 1)], what, fmt::format("prompts[{}]", i + 1), 0));
    for (size_t i = 0; i < r["responses"].size(); ++i)
      pb.responses.push_back(integers_of(r["responses"][double(i + 1)], what, fmt::format("responses[{}]", i + 1), 0));
    pb.advantages = numbers_of(r["advantages"], what, "advantages");
    if (r["metrics"].is_table()) {
      for (const auto& [k, v] : r["metrics"].tab().fields) {
        if (v.is_number()) pb.metrics.emplace_back(k, v.num());
        else fail("{}: metrics.{}: expected a number, got {}", what, k, v.type_name());
      }
    }
    return pb;
  };
}

// lt.rl.policy_loss{logp=, old_logp=, ref_logp=, adv=, mask=, clip_ratio=0.2, clip_high=clip_ratio,
//   kl=0, agg="token-mean", max_len=} -> {loss = scalar tensor (a graph when logp has one),
//   pg, kl, clip_frac, approx_kl, ratio_mean (numbers)}
const ApiDoc& kPolicyLoss = declare_api(
    {"lt.rl.policy_loss", "lt.rl.policy_loss{logp=, old_logp=, adv=, mask=, ...} → {loss=, pg=, kl=, clip_frac=, approx_kl=, ratio_mean=}",
     "the clipped PPO/GRPO policy loss (a graph when logp has one)",
     {{"logp", "tensor", "[N, R] log-probabilities of the policy (required)"},
      {"old_logp", "tensor", "[N, R] of the policy that sampled (required)"},
      {"ref_logp", "tensor", "[N, R] of the reference (for kl)"},
      {"adv", "tensor", "[N] advantages (required)"},
      {"mask", "tensor", "[N, R] 1 for response tokens (required)"},
      {"clip_ratio", "number", "PPO ratio clip (default 0.2)"},
      {"clip_high", "number", "upper clip (default clip_ratio)"},
      {"kl", "number", "KL coefficient against ref_logp (default 0)"},
      {"agg", "string", "token-mean | seq-mean-token-sum | seq-mean-token-mean | seq-mean-token-sum-norm"},
      {"max_len", "integer", "the constant of seq-mean-token-sum-norm (Dr. GRPO)"}}});

List policy_loss_fn(const Args& a) {
  a.table(1);
  const Options o = a.options(1);
  o.refuse_renamed("clip", "clip_ratio (the PPO ratio clip)");
  o.check(kPolicyLoss);
  LossOptions lo;
  lo.clip_low = o.number("clip_ratio").value_or(0.2);
  lo.clip_high = o.number("clip_high").value_or(lo.clip_low);
  lo.kl = o.number("kl").value_or(0.0);
  lo.agg = parse_agg(o.string("agg").value_or("token-mean"));
  lo.max_len = o.integer("max_len").value_or(0);
  const at::Tensor logp = field_tensor(o, "logp"), old = field_tensor(o, "old_logp");
  const at::Tensor ref = field_tensor(o, "ref_logp", false), adv = field_tensor(o, "adv");
  const PolicyLoss r = policy_loss(logp, old, ref, adv, field_tensor(o, "mask"), lo);
  return {Value::table().set("loss", r.loss).set("pg", r.pg.item<double>()).set("kl", r.kl.item<double>())
              .set("clip_frac", r.clip_frac).set("approx_kl", r.approx_kl).set("ratio_mean", r.ratio_mean)};
}

// lt.rl.preset("grpo" | "dr_grpo") -> {norm=, agg=, kl=}
List preset_fn(const Args& a) {
  const Preset p = preset(a.string(1));
  return {Value::table().set("norm", p.norm == AdvNorm::Std ? "std" : "none").set("agg", agg_name(p.agg)).set("kl", p.kl)};
}

std::function<std::string(const std::vector<int64_t>&)> decoder(const ModelHandle& h) {
  if (!h.tok) return {};
  std::shared_ptr<text::Tokenizer> tok = h.tok;
  return [tok](const std::vector<int64_t>& ids) {
    return tok->decode(std::vector<int32_t>(ids.begin(), ids.end()), true);
  };
}

// lt.rl.rollout's options, which lt.rl.grpo takes too (but batch: rollout_batch there); the
// defaults and ranges are RolloutOptions' (with_defaults)
std::vector<OptionDoc> rollout_docs() {
  return with_defaults<RolloutOptions>(
      {{"group_size", "integer", "responses per prompt"},
       {"max_response", "integer", "tokens per response at most"},
       {"max_prompt_tokens", "integer", "refuse longer prompts (default: what the context leaves)"},
       {"temperature", "number", "sampling temperature"},
       {"top_k", "integer", "top-k sampling (0: off)"},
       {"top_p", "number", "nucleus sampling mass"},
       {"stop", "string|strings", "stop strings"},
       {"stop_ids", "integers", "token ids that end a response"},
       {"share_prefill", "boolean", "each prompt prefilled once for its group"},
       {"drop_finished", "boolean", "finished rows leave the decode batch"},
       {"max_rows", "integer", "rows decoded at once at most (0: all)"},
       {"refill", "boolean", "waiting rows take the places of finished ones"},
       one_of({"cache", "string", "static: one preallocated cache (model/static_decode.h)"}, {"dynamic", "static"}),
       {"sync_every", "integer", "static cache: decode steps between stop checks"}},
      rollout_option_fields());
}

RolloutOptions rollout_options(const Options& o, const RunContext& run) {
  RolloutOptions r;
  o.read(r, rollout_option_fields());
  r.seed = o.seed(run.stream("rl.rollout"));
  if (o.has("stop_ids")) r.stop_ids = integers_of(o["stop_ids"], o.fn(), "stop_ids", 0);
  return r;
}

PromptLimit limit(const Options& o, const ModelHandle& h, int64_t max_response) {
  return prompt_limit(h.m->config().max_position_embeddings, max_response, o.integer("max_prompt_tokens", 1), o.fn());
}

std::vector<std::vector<int64_t>> prompt_ids(const Value& t, const ModelHandle& h, const PromptLimit& lim,
                                             const std::string& fn) {
  if (!t.is_table()) fail("{}: argument 2: expected a table, got {}", fn, t.type_name());
  std::vector<std::vector<int64_t>> out;
  for (size_t i = 1; i <= t.size(); ++i) {
    const Value& p = t[double(i)];
    if (p.is_string()) {
      if (!h.tok) fail("{}: {} has no tokenizer.json: pass token ids instead of text", fn, h.path);
      const auto ids = h.tok->encode(p.str(), true);
      out.emplace_back(ids.begin(), ids.end());
    } else if (p.is_table()) {
      out.push_back(integers_of(p, fn, "prompt ids", 0));
    } else {
      fail("{}: prompt {} must be a string or a list of ids, got {}", fn, i, p.type_name());
    }
    check_prompt_length(lim, out.back().size(), fmt::format("prompt {}", i), fn);
  }
  return out;
}

Value rollouts_value(const Rollouts& r) {
  std::vector<int64_t> prompt_number(r.prompt_index);  // 1-based prompt numbers
  for (int64_t& i : prompt_number) i += 1;
  return Value::table()
      .set("ids", r.seq.ids).set("attention_mask", r.seq.attention_mask)
      .set("response_mask", r.response_mask).set("logprobs", r.logprobs)
      .set("prompt_len", r.seq.prompt_len).set("resp_len", r.seq.resp_len).set("tokens", r.tokens)
      .set("texts", r.texts).set("finish", r.finish).set("prompt_index", prompt_number)
      .set("responses", r.responses).set("decode_steps", r.decode_steps).set("refilled_rows", r.refilled_rows)
      .set("graphs", r.graphs).set("replays", r.replays).set("fallbacks", r.fallbacks);
}

SequenceBatch sequences(const Args& a, int i) {
  const Value& t = a.table(i);
  auto tensor = [&](const char* k) {
    if (!t[k].is_tensor()) fail("{}: argument {}: expected a tensor, got {}", a.fn(), i, t[k].type_name());
    return t[k].tensor();
  };
  const Options o(t, a.fn());
  return {tensor("ids"), tensor("attention_mask"), o.integer("prompt_len").value_or(0),
          o.integer("resp_len").value_or(0)};
}

// lt.rl.rollout(m, prompts, {group_size=8, max_response=256, temperature=1, top_k=0,
//   top_p=1, seed = (stream "rl.rollout"), stop=, stop_ids=, batch=0, share_prefill = true (each
//   prompt prefilled once for its group), drop_finished = true (finished rows leave the decode
//   batch), max_rows = 0 (rows decoded at once at most; 0: all), refill = true (waiting rows take
//   the places of finished ones), cache = "dynamic" | "static" (model/static_decode.h), sync_every = 8 (static:
//   decode steps between stop checks)}) -> rollouts table (decode_steps, refilled_rows: what the
//   batching did; graphs, replays, fallbacks: the static cache's CUDA graphs)
const ApiDoc& kRollout = declare_api(
    {"lt.rl.rollout", "lt.rl.rollout(m, prompts[, opts]) → {ids=, response_mask=, logprobs=, texts=, finish=, ...}",
     "samples group_size responses per prompt (strings or id lists)",
     with(with_defaults<RolloutOptions>({{"seed", "integer", "sampling seed (default: the run's stream \"rl.rollout\")"},
                                         {"batch", "integer", "prompts per decode batch (0: all)"}},
                                        rollout_option_fields()),
          rollout_docs())});

List rollout_fn(const Args& a) {
  const ModelHandle& h = model::model_arg(a, 1);
  const Options o = a.options(3).check(kRollout);
  RolloutOptions r = rollout_options(o, a.run());
  const auto prompts = prompt_ids(a[2], h, limit(o, h, r.max_response), a.fn());
  r.decode = decoder(h);
  return {rollouts_value(rollout(*h.m, prompts, r))};
}

// lt.rl.logprobs(m, rollouts, {from_layer=0, temperature=1, chunk=1024, entropy=false})
//   -> logp [N, R] (a graph when something trains), entropy [N, R] or nil
const ApiDoc& kLogprobs = declare_api(
    {"lt.rl.logprobs", "lt.rl.logprobs(m, rollouts[, opts]) → logp [N, R], entropy [N, R] or nil",
     "log-probabilities of the response tokens (a graph when something trains)",
     {{"from_layer", "integer", "run blocks from here on (earlier ones frozen; default 0)"},
      {"temperature", "number", "divide logits by it (default 1)"},
      {"chunk", "integer", "rows of logits at once (default 1024)"},
      {"entropy", "boolean", "also the entropy per token (default false)"}}});

List logprobs_fn(const Args& a) {
  const ModelHandle& h = model::model_arg(a, 1);
  const Options o = a.options(3).check(kLogprobs);
  const PolicyPass p = policy_logprobs(*h.m, sequences(a, 2), int(o.integer("from_layer").value_or(0)),
                                       o.number("temperature").value_or(1.0), o.integer("chunk").value_or(1024),
                                       o.boolean("entropy").value_or(false));
  return {p.logp, p.entropy.defined() ? Value(p.entropy) : Value()};
}

Reference& ref_arg(const Args& a) { return a.object<Reference>(1, "lt.rl.Reference", "an lt.rl.Reference"); }
const char* kind_name(const Reference& r) { return r.kind() == Reference::Kind::Copy ? "copy" : "shared_prefix"; }

// lt.rl.reference(m, {copy = false}) -> lt.rl.Reference (a snapshot of m's trainable weights,
// or with copy = true a full frozen clone)
const ApiDoc& kReference = declare_api(
    {"lt.rl.reference", "lt.rl.reference(m[, opts]) → lt.rl.Reference", "a frozen reference policy of m",
     {{"copy", "boolean", "a full frozen clone instead of a snapshot of the trainable weights (default false)"}}});

List reference_fn(const Args& a) {
  const ModelHandle& h = model::model_arg(a, 1);
  const bool copy = a.options(2).check(kReference).boolean("copy").value_or(false);
  auto r = std::make_shared<Reference>(copy ? Reference::copy(*h.m) : Reference::shared_prefix(*h.m));
  return {Value(Opaque{"lt.rl.Reference", r})};
}

// ref:logprobs(m, rollouts, {temperature=1, chunk=1024, entry=}) -> [N, R] (no graph);
// entry: lt.rl.entry(m, rollouts, ref.from_layer), the hidden state the policy's own pass has
// at the reference's block (GRPO passes it; without it the reference runs the prefix itself)
const ApiDoc& kRefLogprobs = declare_api(
    {"reference:logprobs", "ref:logprobs(m, rollouts[, opts]) → logp [N, R] (no graph)", "the reference's log-probabilities",
     {{"entry", "tensor", "lt.rl.entry(m, rollouts, ref.from_layer): the policy's hidden state at the reference's block"},
      {"temperature", "number", "divide logits by it (default 1)"},
      {"chunk", "integer", "rows of logits at once (default 1024)"}}});

List ref_logprobs(const Args& a) {
  const Reference& r = ref_arg(a);
  const ModelHandle& h = model::model_arg(a, 2);
  const Options o = a.options(4).check(kRefLogprobs);
  return {r.logprobs(*h.m, sequences(a, 3), o.number("temperature").value_or(1.0), o.integer("chunk").value_or(1024),
                     o.has("entry") ? *o.tensor("entry") : at::Tensor())};
}

List ref_index(const Args& a) {
  const Reference& r = ref_arg(a);
  const std::string k = a.string(2);
  if (k == "from_layer") return {r.from_layer()};
  if (k == "bytes") return {r.bytes()};
  if (k == "kind") return {kind_name(r)};
  return {Value()};
}

List ref_tostring(const Args& a) {
  const Reference& r = ref_arg(a);
  return {fmt::format("reference({}, from block {}, {} bytes)", kind_name(r), r.from_layer(), r.bytes())};
}

// lt.rl.entry(m, rollouts, from_layer) -> hidden[from_layer] [N, T, H] (no graph), 1 <= from_layer <= n_layers
List entry_fn(const Args& a) {
  const ModelHandle& h = model::model_arg(a, 1);
  return {prefix_entry(*h.m, sequences(a, 2), int(a.integer(3)))};
}

List math_reward_fn(const Args& a) { return {math_reward(a.string(1), a.string(2))}; }
List format_reward_fn(const Args& a) { return {format_reward(a.string(1), a.none(2) ? "any" : a.string(2))}; }

std::vector<PromptItem> read_items(const Value& t, const std::string& fn, int arg) {
  if (!t.is_table()) fail("{}: argument {}: expected a table, got {}", fn, arg, t.type_name());
  std::vector<PromptItem> out;
  for (size_t i = 1; i <= t.size(); ++i) {
    const Value& x = t[double(i)];
    if (!x.is_table()) fail("{}: argument {}: expected a table, got {}", fn, arg, x.type_name());
    PromptItem it;
    it.id = std::to_string(i);
    Options(x, fn).read(it, prompt_item_fields());
    if (it.question.empty()) fail("{}: item {} has no question", fn, i);
    out.push_back(std::move(it));
  }
  return out;
}

// lt.rl.prompts(path, {question=, answer=, n=, seed = (stream "rl.prompts")}) -> items {id, question, answer, source}
const ApiDoc& kPrompts = declare_api(
    {"lt.rl.prompts", "lt.rl.prompts(path[, opts]) → {{id=, question=, answer=, source=}, ...}",
     "prompt items of a JSONL file (or a folder's known layouts)",
     {{"question", "string", "the field holding the question"},
      {"answer", "string", "the field holding the answer"},
      {"n", "integer", "a seeded sample of n items (0: all)"},
      {"seed", "integer", "sampling seed (default: the run's stream \"rl.prompts\")"}}});

List prompts_fn(const Args& a) {
  const Options o = a.options(2).check(kPrompts);
  PromptFields f;
  f.question = o.string("question").value_or("");
  f.answer = o.string("answer").value_or("");
  auto items = load_prompts(a.string(1), f);
  const int64_t n = o.integer("n").value_or(0);
  if (n > 0) items = sample_prompts(items, n, o.seed(a.run().stream("rl.prompts")));
  return {Value::records(items, prompt_item_fields())};
}

// lt.rl.format_prompt(question [, template]) -> text
List format_prompt_fn(const Args& a) { return {format_prompt(a.string(1), a.none(2) ? "" : a.string(2))}; }

// lt.rl.chat_prompt(prompt, "DIR/tokenizer_config.json") -> text
List chat_prompt_fn(const Args& a) { return {chat_prompt(a.string(1), a.string(2))}; }

// lt.rl.decontaminate(items, eval_texts, {n = 8}) -> kept items, number removed, removed ids
const ApiDoc& kDecontaminate = declare_api(
    {"lt.rl.decontaminate", "lt.rl.decontaminate(items, eval_texts[, opts]) → kept, removed, removed_ids",
     "drops items sharing an n-gram with the evaluation texts", {{"n", "integer", "the n-gram size (default 8)"}}});

List decontaminate_fn(const Args& a) {
  const Options o = a.options(3).check(kDecontaminate);
  const Decontamination d = decontaminate(read_items(a[1], a.fn(), 1), strings_of(a[2], a.fn(), "eval_texts"),
                                          int(o.integer("n", INT32_MIN, INT32_MAX).value_or(8)));
  return {Value::records(d.kept, prompt_item_fields()), d.removed, d.removed_ids};
}

// items: a path (lt.rl.prompts' layouts) or a list of {question=, answer=, id=}
std::vector<PromptItem> items_arg(const Options& o, const char* key, bool required) {
  const Value& x = o[key];
  if (x.is_string()) return load_prompts(x.str(), {o.string("question_field").value_or(""), o.string("answer_field").value_or("")});
  if (x.is_table()) return read_items(x, o.fn(), 2);
  if (required) fail("{}: {} must be a JSONL path or a list of items", o.fn(), key);
  return {};
}

const text::Tokenizer& tokenizer_of(const ModelHandle& h, const std::string& fn) {
  if (!h.tok) fail("{}: {} has no tokenizer.json", fn, h.path);
  return *h.tok;
}

// template / chat options shared by grpo and accuracy: template = "...{question}..." (default:
// question + the \boxed{} instruction); chat = true: wrapped by the model folder's
// tokenizer_config.json chat template
PromptStyle prompt_style(const Options& o, const ModelHandle& h) {
  PromptStyle s;
  s.tmpl = o.string("template").value_or("");
  if (o.boolean("chat").value_or(false)) s.chat_config = h.path + "/tokenizer_config.json";
  return s;
}

// lt.rl.accuracy(m, items | path, {template=, chat=, max_response=256, batch=64}) -> fraction
// of greedy answers equivalent to the items' answers, and a list with one boolean per item
// (true: right), for paired comparisons (lt.stats.mcnemar)
const ApiDoc& kAccuracy = declare_api(
    {"lt.rl.accuracy", "lt.rl.accuracy(m, items | path[, opts]) → fraction, {right per item}",
     "greedy answers equivalent to the items' answers",
     {{"template", "string", "the prompt, {question} replaced (default: the \\boxed{} instruction)"},
      {"chat", "boolean", "wrap in the model folder's chat template"},
      {"max_response", "integer", "tokens per answer (default 256)"},
      {"batch", "integer", "prompts at once (default 64)"},
      {"max_prompt_tokens", "integer", "refuse longer prompts"}}});

List accuracy_fn(const Args& a) {
  const ModelHandle& h = model::model_arg(a, 1);
  const Options o = a.options(3).check(kAccuracy);
  const auto items = a[2].is_string() ? load_prompts(a[2].str()) : read_items(a[2], a.fn(), 2);
  const int64_t max_response = o.integer("max_response").value_or(256);
  const auto prompts = encode_prompts(tokenizer_of(h, a.fn()), items, prompt_style(o, h), limit(o, h, max_response), a.fn());
  std::vector<bool> correct;
  const double acc = heldout_accuracy(*h.m, prompts, items, max_response, decoder(h), o.integer("batch").value_or(64), &correct);
  return {acc, correct};
}

// A number returned by a script function (a numeric string converts, as in Lua)
std::optional<double> number_of(const Value& x) {
  if (x.is_number()) return x.num();
  if (!x.is_string()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(x.str().c_str(), &end);
  if (end == x.str().c_str() || *end) return std::nullopt;
  return v;
}

// A reward function written in the script: fn(item, response) -> number
Reward script_reward(const Value& f, const std::string& name, double weight) {
  return {name, weight, [f, name](const PromptItem& it, const std::string& resp) {
            const auto x = number_of(call(f, fmt::format("rl reward {}", name), {Value::record(it, prompt_item_fields()), resp}));
            if (!x) fail("rl reward {}: must return a number (item {})", name, it.id);
            return *x;
          }};
}

const ApiDoc& kReward = declare_api(
    {"lt.rl.grpo rewards.NAME", "rewards.NAME = weight | function(item, response) → number | {weight=, form=, fn=}",
     "one reward of GRPO (math, format built in)",
     {{"weight", "number", "its weight in the sum (default 1)"},
      {"form", "string", "format: boxed | hash | any"},
      {"fn", "function", "fn(item, response) → number"}}});

// rewards.NAME at v: a weight (built-in), a function, or {weight=, form=, fn=}
Reward read_reward(const Value& v, const std::string& name, const std::string& fn) {
  const std::string what = fmt::format("{}: rewards.{}", fn, name);
  if (auto w = number_of(v)) return builtin_reward(name, *w, "any", what);
  if (v.is_function()) return script_reward(v, name, 1.0);
  if (!v.is_table()) fail("{}: expected a weight, a function or {{weight=, fn=}}", what);
  const Options o = Options(v, what).check(kReward);
  const Options named(v, fn);
  const double weight = named.number("weight").value_or(1.0);
  if (v["fn"].is_function()) return script_reward(v["fn"], name, weight);
  return builtin_reward(name, weight, named.string("form").value_or("any"), what);
}

// rewards = {math = w, format = w | {weight = w, form = "boxed"|"hash"|"any"},
//            NAME = function(item, response) -> number | {weight = w, fn = function}}
std::vector<Reward> read_rewards(const Options& o) {
  const Value& t = o["rewards"];
  if (t.is_nil()) return {builtin_reward("math", 1.0, "any", o.fn())};
  if (!t.is_table()) fail("{}: argument 2: expected a table, got {}", o.fn(), t.type_name());
  if (t.size() || !t.tab().numbers.empty() || !t.tab().odd_key.empty())
    fail("{}: rewards: keys must be reward names", o.fn());
  std::vector<Reward> out;
  for (const auto& [name, v] : t.tab().fields) out.push_back(read_reward(v, name, o.fn()));  // sorted by name
  LT_CHECK(!out.empty(), "{}: rewards is empty", o.fn());
  return out;
}

// the loop's defaults under lt.rl.grpo: a small constant learning rate, no weight decay
train::LoopOptions grpo_loop_defaults() {
  train::LoopOptions d;
  d.lr = 1e-6;
  d.decay = "constant";
  d.weight_decay = 0.0;
  return d;
}

// lt.rl.grpo(m, opts) -> {steps=, wall_s=, tokens_per_s=, decontaminated=, heldout = {[step] =
//   accuracy}, log = {{step=, loss=, grad_norm=, reward_mean=, ...}}}; steps = iterations *
//   epochs * mini_batches. Its options, each with its default, are declared once, in kGrpo
//   below (with lt.rl.rollout's and the loop's, runtime/train/script.h); with produce, the
//   caller's rows replace data, rewards, prompts and group_size (produce_option above).
const ApiDoc& kGrpo = declare_api(
    {"lt.rl.grpo", "lt.rl.grpo(m, opts) → {steps=, wall_s=, tokens_per_s=, decontaminated=, heldout=, log=}",
     "GRPO (or Dr. GRPO) on prompts with verifiable rewards, or on rows a produce function makes",
     with(with(with_defaults<GrpoOptions>(
                   {{"data", "path|table", "training prompts: a JSONL file or a list of items"},
                    {"eval", "path|table", "held-out prompts: a JSONL file or a list of items"},
                    {"question_field", "string", "the question's field in data/eval files"},
                    {"answer_field", "string", "the answer's field"},
                    {"n", "integer", "a seeded sample of n training items (0: all)", "0", 0},
                    {"eval_n", "integer", "held-out items used (0: all)", "0", 0},
                    {"decontaminate", "integer", "n-gram size against eval (0: off)", "8"},
                    {"template", "string", "the prompt, {question} replaced (\"\": the \\boxed{} instruction)", ""},
                    {"chat", "boolean", "wrap prompts in the model's chat template", "false"},
                    one_of({"algo", "string", "the loss preset: sets norm, agg and kl"}, {"grpo", "dr_grpo"}),
                    {"norm", "string", "advantage normalisation: std | none (default: the algo's)"},
                    {"agg", "string", "loss aggregation (as lt.rl.policy_loss; default: the algo's)"},
                    {"kl", "number", "KL coefficient against the reference (default: the algo's)"},
                    {"clip_ratio", "number", "PPO ratio clip", "0.2"},
                    {"clip_high", "number", "upper clip (default clip_ratio)"},
                    {"prompts", "integer", "prompts per rollout batch"},
                    {"rollout_batch", "integer", "prompts per decode batch (0: all)", "0", 0},
                    {"epochs", "integer", "PPO epochs per rollout batch"},
                    {"mini_batches", "integer", "optimizer steps per epoch"},
                    {"micro_batch", "integer", "rows per backward pass"},
                    {"chunk", "integer", "rows of logits at once"},
                    {"copy_reference", "boolean", "the reference as a full copy (false: a shared prefix)"},
                    {"rewards", "table", "{NAME = lt.rl.grpo rewards.NAME} (default {math = 1})"},
                    {"accuracy", "string", "the reward logged as accuracy (\"\": none)"},
                    {"eval_max_response", "integer", "tokens per held-out answer (0: max_response)"},
                    {"iterations", "integer", "rollout batches", "10", 1},
                    {"seed", "integer", "seed (default: the run's stream \"rl.grpo\")"},
                    {"produce", "function", "produce(batch) → rows (lt.rl.grpo produce()) instead of data and rewards"}},
                   grpo_option_fields()),
               rollout_docs()),
          train::loop_option_docs(grpo_loop_defaults()))});

// GRPO's own options (the loop's are train::loop_options'); the prompts are encoded later
GrpoOptions grpo_options(const Options& o, const ModelHandle& h, uint64_t seed, const RunContext& run) {
  GrpoOptions go;
  o.read(go, grpo_option_fields());
  if (auto s = o.string("norm")) go.norm = parse_adv_norm(*s);
  if (auto s = o.string("agg")) go.agg = parse_agg(*s);
  if (auto x = o.number("kl")) go.kl = *x;
  go.clip_low = o.number("clip_ratio").value_or(kGrpo.number_default("clip_ratio"));
  go.clip_high = o.number("clip_high").value_or(go.clip_low);
  go.rollout = rollout_options(o, run);
  go.rollout.seed = seed;
  go.rollout.batch = o.integer("rollout_batch", 0).value_or(int64_t(kGrpo.number_default("rollout_batch")));
  go.rollout.decode = decoder(h);
  go.rewards = read_rewards(o);
  return go;
}

Value grpo_result(const train::LoopResult& r, int64_t removed, size_t prompts) {
  Value v = Value::record(r, train::loop_result_fields()).set("decontaminated", removed).set("prompts", prompts);
  Value heldout = Value::table(), log = Value::table();
  for (const auto& [step, ms] : r.evals)
    for (const auto& [k, x] : ms)
      if (k == "heldout_accuracy") heldout.set(double(step), x);
  for (const train::StepLog& s : r.log) {
    Value e = Value::table().set("step", s.step + 1).set("loss", s.loss).set("lr", s.lr);
    e.set("grad_norm", s.grad_norm).set("tokens_per_s", s.tokens_per_s);
    for (const auto& [k, x] : s.metrics) e.set(k, x);
    log.push(e);
  }
  return v.set("heldout", heldout).set("log", log);
}

// lt.rl.grpo with produce: the caller's rows (an agent's steps) instead of prompts and rewards
Value grpo_produced(const ModelHandle& h, const Options& o, train::LoopOptions lo, uint64_t seed, const Args& a) {
  if (!o["produce"].is_function()) fail("{}: produce: expected a function(batch) -> rows, got {}", a.fn(), o["produce"].type_name());
  for (const char* k : {"data", "eval", "rewards", "prompts", "group_size"})
    if (o.has(k)) fail("{}: produce gives the rows: {} has no meaning with it", a.fn(), k);
  GrpoOptions go = grpo_options(o, h, seed, a.run());
  go.produce = produce_option(o["produce"], a.fn());
  const int64_t iterations = o.integer("iterations", 1).value_or(int64_t(kGrpo.number_default("iterations")));
  lo.steps = iterations * grpo_steps_per_rollout(go);
  GrpoObjective obj(*h.m, {}, {}, go);
  return grpo_result(train::run_loop(*h.m, obj, lo), 0, 0);
}

List grpo_fn(const Args& a) {
  const ModelHandle& h = model::model_arg(a, 1);
  a.table(2);
  const Options o = a.options(2);
  train::LoopOptions lo = train::loop_options(o, grpo_loop_defaults(), a.run(), kGrpo);
  const uint64_t seed = o.seed(a.run().stream("rl.grpo"));
  if (o.has("produce")) return {grpo_produced(h, o, lo, seed, a)};
  const auto def = [&](const char* key) { return int64_t(kGrpo.number_default(key)); };
  const GrpoData d = prepare_grpo_data(items_arg(o, "data", true), items_arg(o, "eval", false),
                                       o.integer("n", 0).value_or(def("n")), o.integer("eval_n", 0).value_or(def("eval_n")),
                                       o.integer("decontaminate").value_or(def("decontaminate")), seed, a.fn());
  GrpoOptions go = grpo_options(o, h, seed, a.run());
  const PromptStyle style = prompt_style(o, h);
  const int64_t eval_response = go.eval_max_response > 0 ? go.eval_max_response : go.rollout.max_response;
  go.eval_items = d.evals;
  if (!d.evals.empty())
    go.eval_prompts = encode_prompts(tokenizer_of(h, a.fn()), d.evals, style, limit(o, h, eval_response), a.fn());
  const auto ids = encode_prompts(tokenizer_of(h, a.fn()), d.items, style, limit(o, h, go.rollout.max_response), a.fn());
  const int64_t iterations = o.integer("iterations", 1).value_or(def("iterations"));
  lo.steps = iterations * grpo_steps_per_rollout(go);
  if (h.tok) lo.checkpoint_files.push_back(h.tok->path());
  lo.group = dist::active();  // under `ltrun launch`: prompts sharded over the ranks, data parallel
  if (lo.sink.param) {
    lo.sink.param("decontaminated", std::to_string(d.removed));
    lo.sink.param("rl_prompts", std::to_string(d.items.size()));
    lo.sink.param("eval_prompts", std::to_string(d.evals.size()));
  }
  GrpoObjective obj(*h.m, d.items, ids, go);
  return {grpo_result(train::run_loop(*h.m, obj, lo), d.removed, d.items.size())};
}

}  // namespace

const std::vector<ScriptFunction>& script_functions() {
  static const std::vector<ScriptFunction> fs = {
      {"lt.rl.advantages", advantages_fn},   {"lt.rl.policy_loss", policy_loss_fn},
      {"lt.rl.preset", preset_fn},           {"lt.rl.rollout", rollout_fn},
      {"lt.rl.logprobs", logprobs_fn},       {"lt.rl.reference", reference_fn},
      {"lt.rl.math_reward", math_reward_fn}, {"lt.rl.format_reward", format_reward_fn},
      {"lt.rl.prompts", prompts_fn},         {"lt.rl.format_prompt", format_prompt_fn},
      {"lt.rl.chat_prompt", chat_prompt_fn}, {"lt.rl.decontaminate", decontaminate_fn},
      {"lt.rl.accuracy", accuracy_fn},       {"lt.rl.grpo", grpo_fn},
      {"lt.rl.entry", entry_fn},             {"lt.rl.gigpo", gigpo_fn}};
  return fs;
}

const ScriptClass& reference_class() {
  static const ScriptClass c{"lt.rl.Reference", {{"reference:logprobs", ref_logprobs}}, {"reference", ref_index},
                             {"tostring", ref_tostring}};
  return c;
}

}  // namespace ltrun::rl
