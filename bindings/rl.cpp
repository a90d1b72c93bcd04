// bindings/rl.cpp: lt.rl, RL post-training from Lua: grpo (the GRPO objective on the shared
// training loop), accuracy (held-out), advantages, policy_loss, preset,
// rollout, logprobs, reference (lt.rl.Reference), rewards (math_reward, format_reward),
// prompt sets (prompts, format_prompt, chat_prompt, decontaminate).
//
// A rollouts table (from lt.rl.rollout) holds tensors ids, attention_mask [N, P + R],
// response_mask, logprobs [N, R], numbers prompt_len (P), resp_len (R), tokens, and Lua
// arrays texts, finish, prompt_index (1-based prompt numbers), responses (token id lists).
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <memory>
#include <new>

#include "bindings/luat.h"
#include "bindings/model.h"
#include "bindings/tensor.h"
#include "bindings/train.h"
#include "runtime/dist/dist.h"
#include "runtime/rl/grpo.h"
#include "runtime/rl/logprob.h"
#include "runtime/rl/loss.h"
#include "runtime/rl/prepare.h"
#include "runtime/rl/prompts.h"
#include "runtime/rl/reference.h"
#include "runtime/rl/reward.h"
#include "runtime/rl/rollout.h"
#include "runtime/train/loop.h"

namespace ltrun::lua {
namespace {

const char kRefMeta[] = "lt.rl.Reference";

// t[key] as a tensor (required)
at::Tensor field_tensor(lua_State* L, int t, const char* key, const char* fn, bool required = true) {
  lua_getfield(L, t, key);
  at::Tensor out;
  if (!lua_isnil(L, -1)) out = to_tensor(L, lua_gettop(L), fn, at::kFloat);
  else if (required) fail("{}: missing field {}", fn, key);
  lua_pop(L, 1);
  return out;
}

// lt.rl.advantages(rewards, group_size, {norm = "std" | "none", eps = 1e-6}) -> Lua array
int l_advantages(lua_State* L) {
  const char* fn = "lt.rl.advantages";
  check_options(L, 3, fn, {"norm", "eps"});
  const auto r = read_numbers(L, 1, fn, "rewards");
  const int64_t G = check_integer(L, 2, fn);
  const rl::AdvNorm norm = rl::parse_adv_norm(opt_string(L, 3, "norm", fn).value_or("std"));
  push_array(L, rl::advantages(r, G, norm, opt_number(L, 3, "eps", fn).value_or(1e-6)));
  return 1;
}

// lt.rl.policy_loss{logp=, old_logp=, ref_logp=, adv=, mask=, clip_ratio=0.2, clip_high=clip_ratio,
//   kl=0, agg="token-mean", max_len=} -> {loss = scalar tensor (a graph when logp has one),
//   pg, kl, clip_frac, approx_kl, ratio_mean (numbers)}
int l_policy_loss(lua_State* L) {
  const char* fn = "lt.rl.policy_loss";
  check_table(L, 1, fn);
  refuse_renamed(L, 1, fn, "clip", "clip_ratio (the PPO ratio clip)");
  check_options(L, 1, fn, {"logp", "old_logp", "ref_logp", "adv", "mask", "clip_ratio", "clip_high", "kl", "agg",
                           "max_len"});
  const at::Tensor logp = field_tensor(L, 1, "logp", fn);
  const at::Tensor old = field_tensor(L, 1, "old_logp", fn);
  const at::Tensor ref = field_tensor(L, 1, "ref_logp", fn, false);
  const at::Tensor adv = field_tensor(L, 1, "adv", fn);
  const at::Tensor mask = field_tensor(L, 1, "mask", fn);
  rl::LossOptions o;
  o.clip_low = opt_number(L, 1, "clip_ratio", fn).value_or(0.2);
  o.clip_high = opt_number(L, 1, "clip_high", fn).value_or(o.clip_low);
  o.kl = opt_number(L, 1, "kl", fn).value_or(0.0);
  o.agg = rl::parse_agg(opt_string(L, 1, "agg", fn).value_or("token-mean"));
  o.max_len = opt_integer(L, 1, "max_len", fn).value_or(0);
  const rl::PolicyLoss r = rl::policy_loss(logp, old, ref, adv, mask, o);
  lua_createtable(L, 0, 6);
  set_tensor(L, "loss", r.loss);
  set_field(L, "pg", r.pg.item<double>());
  set_field(L, "kl", r.kl.item<double>());
  set_field(L, "clip_frac", r.clip_frac);
  set_field(L, "approx_kl", r.approx_kl);
  set_field(L, "ratio_mean", r.ratio_mean);
  return 1;
}

// lt.rl.preset("grpo" | "dr_grpo") -> {norm=, agg=, kl=}
int l_preset(lua_State* L) {
  const rl::Preset p = rl::preset(check_string(L, 1, "lt.rl.preset"));
  lua_createtable(L, 0, 3);
  set_field(L, "norm", std::string(p.norm == rl::AdvNorm::Std ? "std" : "none"));
  set_field(L, "agg", rl::agg_name(p.agg));
  set_field(L, "kl", p.kl);
  return 1;
}

std::function<std::string(const std::vector<int64_t>&)> decoder(const ModelHandle& h) {
  if (!h.tok) return {};
  std::shared_ptr<text::Tokenizer> tok = h.tok;
  return [tok](const std::vector<int64_t>& ids) {
    return tok->decode(std::vector<int32_t>(ids.begin(), ids.end()), true);
  };
}

rl::RolloutOptions read_rollout_options(lua_State* L, int o, const char* fn) {
  rl::RolloutOptions r;
  read_fields(L, o, fn, r, rl::rollout_option_fields());
  r.seed = opt_seed(L, o, fn, "rl.rollout");
  if (lua_istable(L, o)) {
    lua_getfield(L, o, "stop_ids");
    if (!lua_isnil(L, -1)) r.stop_ids = read_integers(L, lua_gettop(L), fn, "stop_ids", 0);
    lua_pop(L, 1);
  }
  return r;
}

rl::PromptLimit prompt_limit(lua_State* L, int opts, const ModelHandle& h, int64_t max_response, const char* fn) {
  return rl::prompt_limit(h.m->config().max_position_embeddings, max_response,
                          opt_integer(L, opts, "max_prompt_tokens", fn, 1), fn);
}

std::vector<std::vector<int64_t>> read_prompt_ids(lua_State* L, int idx, const ModelHandle& h,
                                                  const rl::PromptLimit& lim, const char* fn) {
  check_table(L, idx, fn);
  std::vector<std::vector<int64_t>> out;
  for (int i = 1; i <= int(lua_objlen(L, idx)); ++i) {
    lua_rawgeti(L, idx, i);
    if (lua_type(L, -1) == LUA_TSTRING) {
      if (!h.tok) fail("{}: {} has no tokenizer.json: pass token ids instead of text", fn, h.path);
      const auto ids = h.tok->encode(lua_tostring(L, -1), true);
      rl::check_prompt_length(lim, ids.size(), fmt::format("prompt {}", i), fn);
      out.emplace_back(ids.begin(), ids.end());
    } else if (lua_istable(L, -1)) {
      out.push_back(read_integers(L, lua_gettop(L), fn, "prompt ids", 0));
      rl::check_prompt_length(lim, out.back().size(), fmt::format("prompt {}", i), fn);
    } else {
      fail("{}: prompt {} must be a string or a list of ids, got {}", fn, i, type_name(L, -1));
    }
    lua_pop(L, 1);
  }
  return out;
}

void push_rollouts(lua_State* L, const rl::Rollouts& r) {
  lua_createtable(L, 0, 12);
  set_tensor(L, "ids", r.seq.ids);
  set_tensor(L, "attention_mask", r.seq.attention_mask);
  set_tensor(L, "response_mask", r.response_mask);
  set_tensor(L, "logprobs", r.logprobs);
  set_field(L, "prompt_len", double(r.seq.prompt_len));
  set_field(L, "resp_len", double(r.seq.resp_len));
  set_field(L, "tokens", double(r.tokens));
  set_array(L, "texts", r.texts);
  set_array(L, "finish", r.finish);
  std::vector<int64_t> prompt_number(r.prompt_index);  // 1-based prompt numbers
  for (int64_t& i : prompt_number) i += 1;
  set_array(L, "prompt_index", prompt_number);
  set_array(L, "responses", r.responses);
}

rl::SequenceBatch read_seq(lua_State* L, int t, const char* fn) {
  check_table(L, t, fn);
  rl::SequenceBatch b;
  lua_getfield(L, t, "ids");
  b.ids = check_tensor(L, -1, fn);
  lua_pop(L, 1);
  lua_getfield(L, t, "attention_mask");
  b.attention_mask = check_tensor(L, -1, fn);
  lua_pop(L, 1);
  b.prompt_len = opt_integer(L, t, "prompt_len", fn).value_or(0);
  b.resp_len = opt_integer(L, t, "resp_len", fn).value_or(0);
  return b;
}

// lt.rl.rollout(m, prompts, {group_size=8, max_response=256, temperature=1, top_k=0,
//   top_p=1, seed = (stream "rl.rollout"), stop=, stop_ids=, batch=0}) -> rollouts table
int l_rollout(lua_State* L) {
  const char* fn = "lt.rl.rollout";
  const ModelHandle& h = check_model(L, 1, fn);
  check_options(L, 3, fn, {"group_size", "max_response", "temperature", "top_k", "top_p", "seed", "stop",
                           "stop_ids", "batch", "max_prompt_tokens"});
  rl::RolloutOptions o = read_rollout_options(L, 3, fn);
  const auto prompts = read_prompt_ids(L, 2, h, prompt_limit(L, 3, h, o.max_response, fn), fn);
  o.decode = decoder(h);
  push_rollouts(L, rl::rollout(*h.m, prompts, o));
  return 1;
}

// lt.rl.logprobs(m, rollouts, {from_layer=0, temperature=1, chunk=1024, entropy=false})
//   -> logp [N, R] (a graph when something trains), entropy [N, R] or nil
int l_logprobs(lua_State* L) {
  const char* fn = "lt.rl.logprobs";
  const ModelHandle& h = check_model(L, 1, fn);
  check_options(L, 3, fn, {"from_layer", "temperature", "chunk", "entropy"});
  const rl::SequenceBatch b = read_seq(L, 2, fn);
  const rl::PolicyPass p = rl::policy_logprobs(
      *h.m, b, int(opt_integer(L, 3, "from_layer", fn).value_or(0)),
      opt_number(L, 3, "temperature", fn).value_or(1.0), opt_integer(L, 3, "chunk", fn).value_or(1024),
      opt_bool(L, 3, "entropy", fn).value_or(false));
  push_tensor(L, p.logp);
  if (p.entropy.defined()) push_tensor(L, p.entropy);
  else lua_pushnil(L);
  return 2;
}

rl::Reference& check_ref(lua_State* L, int idx, const char* fn) {
  auto* r = static_cast<rl::Reference*>(luaL_testudata(L, idx, kRefMeta));
  if (!r) fail("{}: argument {}: expected an lt.rl.Reference, got {}", fn, idx, type_name(L, idx));
  return *r;
}

// lt.rl.reference(m, {copy = false}) -> lt.rl.Reference (a snapshot of m's trainable weights,
// or with copy = true a full frozen clone)
int l_reference(lua_State* L) {
  const char* fn = "lt.rl.reference";
  const ModelHandle& h = check_model(L, 1, fn);
  check_options(L, 2, fn, {"copy"});
  const bool copy = opt_bool(L, 2, "copy", fn).value_or(false);
  rl::Reference r = copy ? rl::Reference::copy(*h.m) : rl::Reference::shared_prefix(*h.m);
  new (lua_newuserdata(L, sizeof(rl::Reference))) rl::Reference(std::move(r));
  luaL_getmetatable(L, kRefMeta);
  lua_setmetatable(L, -2);
  return 1;
}

// ref:logprobs(m, rollouts, {temperature=1, chunk=1024, entry=}) -> [N, R] (no graph);
// entry: lt.rl.entry(m, rollouts, ref.from_layer), the hidden state the policy's own pass has
// at the reference's block (GRPO passes it; without it the reference runs the prefix itself)
int r_logprobs(lua_State* L) {
  const char* fn = "reference:logprobs";
  const rl::Reference& r = check_ref(L, 1, fn);
  const ModelHandle& h = check_model(L, 2, fn);
  check_options(L, 4, fn, {"entry", "temperature", "chunk"});
  at::Tensor entry;
  if (lua_istable(L, 4)) {
    lua_getfield(L, 4, "entry");
    if (!lua_isnil(L, -1)) entry = check_tensor(L, lua_gettop(L), fn);
    lua_pop(L, 1);
  }
  push_tensor(L, r.logprobs(*h.m, read_seq(L, 3, fn), opt_number(L, 4, "temperature", fn).value_or(1.0),
                            opt_integer(L, 4, "chunk", fn).value_or(1024), entry));
  return 1;
}

// lt.rl.entry(m, rollouts, from_layer) -> hidden[from_layer] [N, T, H] (no graph), 1 <= from_layer <= n_layers
int l_entry(lua_State* L) {
  const char* fn = "lt.rl.entry";
  const ModelHandle& h = check_model(L, 1, fn);
  push_tensor(L, rl::prefix_entry(*h.m, read_seq(L, 2, fn), int(check_integer(L, 3, fn))));
  return 1;
}

int r_index(lua_State* L) {
  const rl::Reference& r = check_ref(L, 1, "reference");
  const std::string k = check_string(L, 2, "reference");
  lua_getfield(L, lua_upvalueindex(1), k.c_str());
  if (!lua_isnil(L, -1)) return 1;
  lua_pop(L, 1);
  if (k == "from_layer") lua_pushnumber(L, r.from_layer());
  else if (k == "bytes") lua_pushnumber(L, double(r.bytes()));
  else if (k == "kind") push(L, r.kind() == rl::Reference::Kind::Copy ? "copy" : "shared_prefix");
  else lua_pushnil(L);
  return 1;
}

int r_gc(lua_State* L) {
  static_cast<rl::Reference*>(lua_touserdata(L, 1))->~Reference();
  return 0;
}

int r_tostring(lua_State* L) {
  const rl::Reference& r = check_ref(L, 1, "tostring");
  push(L, fmt::format("reference({}, from block {}, {} bytes)",
                      r.kind() == rl::Reference::Kind::Copy ? "copy" : "shared_prefix", r.from_layer(),
                      r.bytes()));
  return 1;
}

int l_math_reward(lua_State* L) {
  lua_pushnumber(L, rl::math_reward(check_string(L, 1, "lt.rl.math_reward"),
                                    check_string(L, 2, "lt.rl.math_reward")));
  return 1;
}

int l_format_reward(lua_State* L) {
  const char* fn = "lt.rl.format_reward";
  lua_pushnumber(L, rl::format_reward(check_string(L, 1, fn),
                                      lua_isnoneornil(L, 2) ? "any" : check_string(L, 2, fn)));
  return 1;
}

void push_item(lua_State* L, const rl::PromptItem& it) {
  lua_createtable(L, 0, 4);
  set_fields(L, it, rl::prompt_item_fields());
}

std::vector<rl::PromptItem> read_items(lua_State* L, int idx, const char* fn) {
  check_table(L, idx, fn);
  std::vector<rl::PromptItem> out;
  for (int i = 1; i <= int(lua_objlen(L, idx)); ++i) {
    lua_rawgeti(L, idx, i);
    const int t = lua_gettop(L);
    check_table(L, t, fn);
    rl::PromptItem it;
    it.id = std::to_string(i);
    read_fields(L, t, fn, it, rl::prompt_item_fields());
    if (it.question.empty()) fail("{}: item {} has no question", fn, i);
    out.push_back(std::move(it));
    lua_pop(L, 1);
  }
  return out;
}

// lt.rl.prompts(path, {question=, answer=, n=, seed = (stream "rl.prompts")}) -> items {id, question, answer, source}
int l_prompts(lua_State* L) {
  const char* fn = "lt.rl.prompts";
  check_options(L, 2, fn, {"question", "answer", "n", "seed"});
  rl::PromptFields f;
  f.question = opt_string(L, 2, "question", fn).value_or("");
  f.answer = opt_string(L, 2, "answer", fn).value_or("");
  auto items = rl::load_prompts(check_string(L, 1, fn), f);
  const int64_t n = opt_integer(L, 2, "n", fn).value_or(0);
  if (n > 0) items = rl::sample_prompts(items, n, opt_seed(L, 2, fn, "rl.prompts"));
  push_records(L, items, rl::prompt_item_fields());
  return 1;
}

// lt.rl.format_prompt(question [, template]) -> text
int l_format_prompt(lua_State* L) {
  const char* fn = "lt.rl.format_prompt";
  push(L, rl::format_prompt(check_string(L, 1, fn), lua_isnoneornil(L, 2) ? "" : check_string(L, 2, fn)));
  return 1;
}

// lt.rl.chat_prompt(prompt, "DIR/tokenizer_config.json") -> text
int l_chat_prompt(lua_State* L) {
  const char* fn = "lt.rl.chat_prompt";
  push(L, rl::chat_prompt(check_string(L, 1, fn), check_string(L, 2, fn)));
  return 1;
}

// lt.rl.decontaminate(items, eval_texts, {n = 8}) -> kept items, number removed, removed ids
int l_decontaminate(lua_State* L) {
  const char* fn = "lt.rl.decontaminate";
  check_options(L, 3, fn, {"n"});
  const rl::Decontamination d = rl::decontaminate(read_items(L, 1, fn), read_strings(L, 2, fn, "eval_texts"),
                                                  int(opt_integer(L, 3, "n", fn).value_or(8)));
  push_records(L, d.kept, rl::prompt_item_fields());
  lua_pushnumber(L, double(d.removed));
  push_array(L, d.removed_ids);
  return 3;
}

// items: a path (lt.rl.prompts' layouts) or a list of {question=, answer=, id=}
std::vector<rl::PromptItem> items_arg(lua_State* L, int opts, const char* key, const char* fn,
                                      bool required) {
  lua_getfield(L, opts, key);
  std::vector<rl::PromptItem> out;
  const int t = lua_gettop(L);
  if (lua_type(L, t) == LUA_TSTRING) {
    rl::PromptFields f;
    f.question = opt_string(L, opts, "question_field", fn).value_or("");
    f.answer = opt_string(L, opts, "answer_field", fn).value_or("");
    out = rl::load_prompts(lua_tostring(L, t), f);
  } else if (lua_istable(L, t)) {
    out = read_items(L, t, fn);
  } else if (required) {
    fail("{}: {} must be a JSONL path or a list of items", fn, key);
  }
  lua_pop(L, 1);
  return out;
}

const text::Tokenizer& tokenizer_of(const ModelHandle& h, const char* fn) {
  if (!h.tok) fail("{}: {} has no tokenizer.json", fn, h.path);
  return *h.tok;
}

// template / chat options shared by grpo and accuracy: template = "...{question}..." (default:
// question + the \boxed{} instruction); chat = true: wrapped by the model folder's
// tokenizer_config.json chat template
rl::PromptStyle prompt_style(lua_State* L, int opts, const ModelHandle& h, const char* fn) {
  rl::PromptStyle s;
  s.tmpl = opt_string(L, opts, "template", fn).value_or("");
  if (opt_bool(L, opts, "chat", fn).value_or(false)) s.chat_config = h.path + "/tokenizer_config.json";
  return s;
}

// lt.rl.accuracy(m, items | path, {template=, chat=, max_response=256, batch=64}) -> fraction
// of greedy answers equivalent to the items' answers, and a list with one boolean per item
// (true: right), for paired comparisons (lt.stats.mcnemar)
int l_accuracy(lua_State* L) {
  const char* fn = "lt.rl.accuracy";
  const ModelHandle& h = check_model(L, 1, fn);
  check_options(L, 3, fn, {"template", "chat", "max_response", "batch", "max_prompt_tokens"});
  const auto items = lua_type(L, 2) == LUA_TSTRING ? rl::load_prompts(lua_tostring(L, 2)) : read_items(L, 2, fn);
  const int64_t max_response = opt_integer(L, 3, "max_response", fn).value_or(256);
  const auto prompts = rl::encode_prompts(tokenizer_of(h, fn), items, prompt_style(L, 3, h, fn),
                                          prompt_limit(L, 3, h, max_response, fn), fn);
  std::vector<bool> correct;
  lua_pushnumber(L, rl::heldout_accuracy(*h.m, prompts, items, max_response,
                                         decoder(h), opt_integer(L, 3, "batch", fn).value_or(64), &correct));
  push_array(L, correct);
  return 2;
}

// A reward function written in Lua: fn(item, response) -> number
rl::Reward lua_reward(lua_State* L, int fidx, const std::string& name, double weight,
                      std::vector<std::unique_ptr<LuaRef>>& keep) {
  keep.push_back(std::make_unique<LuaRef>(L, fidx, "lt.rl.grpo", "reward"));
  return {name, weight, [L, f = keep.back().get(), name](const rl::PromptItem& it, const std::string& resp) {
            lua_rawgeti(L, LUA_REGISTRYINDEX, f->ref);
            push_item(L, it);
            push(L, resp);
            f->pcall(fmt::format("rl reward {}", name), 2, 1);
            if (!lua_isnumber(L, -1)) {
              lua_pop(L, 1);
              fail("rl reward {}: must return a number (item {})", name, it.id);
            }
            const double x = lua_tonumber(L, -1);
            lua_pop(L, 1);
            return x;
          }};
}

// rewards.NAME at v: a weight (built-in), a function, or {weight=, form=, fn=}
rl::Reward read_reward(lua_State* L, int v, const std::string& name, std::vector<std::unique_ptr<LuaRef>>& keep,
                       const char* fn) {
  const std::string what = fmt::format("{}: rewards.{}", fn, name);
  if (lua_isnumber(L, v)) return rl::builtin_reward(name, lua_tonumber(L, v), "any", what);
  if (lua_isfunction(L, v)) return lua_reward(L, v, name, 1.0, keep);
  if (!lua_istable(L, v)) fail("{}: expected a weight, a function or {{weight=, fn=}}", what);
  check_options(L, v, what.c_str(), {"weight", "form", "fn"});
  const double weight = opt_number(L, v, "weight", fn).value_or(1.0);
  lua_getfield(L, v, "fn");
  if (lua_isfunction(L, -1)) return lua_reward(L, lua_gettop(L), name, weight, keep);
  lua_pop(L, 1);
  return rl::builtin_reward(name, weight, opt_string(L, v, "form", fn).value_or("any"), what);
}

// rewards = {math = w, format = w | {weight = w, form = "boxed"|"hash"|"any"},
//            NAME = function(item, response) -> number | {weight = w, fn = function}}
std::vector<rl::Reward> read_rewards(lua_State* L, int opts, std::vector<std::unique_ptr<LuaRef>>& keep,
                                     const char* fn) {
  lua_getfield(L, opts, "rewards");
  const int t = lua_gettop(L);
  if (lua_isnil(L, t)) {
    lua_pop(L, 1);
    return {rl::builtin_reward("math", 1.0, "any", fn)};
  }
  check_table(L, t, fn);
  std::vector<std::string> names;
  lua_pushnil(L);
  while (lua_next(L, t) != 0) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING) fail("{}: rewards: keys must be reward names", fn);
    names.push_back(lua_tostring(L, -1));
  }
  std::sort(names.begin(), names.end());
  std::vector<rl::Reward> out;
  for (const std::string& name : names) {
    lua_getfield(L, t, name.c_str());
    out.push_back(read_reward(L, lua_gettop(L), name, keep, fn));
    lua_settop(L, t);
  }
  lua_pop(L, 1);
  LT_CHECK(!out.empty(), "{}: rewards is empty", fn);
  return out;
}

// GRPO's own options (the loop's are read_loop_options'); the prompts are encoded later
rl::GrpoOptions read_grpo_options(lua_State* L, const ModelHandle& h, uint64_t seed,
                                  std::vector<std::unique_ptr<LuaRef>>& keep, const char* fn) {
  rl::GrpoOptions go;
  read_fields(L, 2, fn, go, rl::grpo_option_fields());
  if (auto s = opt_string(L, 2, "norm", fn)) go.norm = rl::parse_adv_norm(*s);
  if (auto s = opt_string(L, 2, "agg", fn)) go.agg = rl::parse_agg(*s);
  if (auto x = opt_number(L, 2, "kl", fn)) go.kl = *x;
  go.clip_low = opt_number(L, 2, "clip_ratio", fn).value_or(0.2);
  go.clip_high = opt_number(L, 2, "clip_high", fn).value_or(go.clip_low);
  go.rollout = read_rollout_options(L, 2, fn);
  go.rollout.seed = seed;
  go.rollout.batch = opt_integer(L, 2, "rollout_batch", fn).value_or(0);
  go.rollout.decode = decoder(h);
  go.rewards = read_rewards(L, 2, keep, fn);
  return go;
}

void push_grpo_result(lua_State* L, const train::LoopResult& r, int64_t removed, size_t prompts) {
  lua_createtable(L, 0, 16);
  set_fields(L, r, train::loop_result_fields());
  set_field(L, "decontaminated", double(removed));
  set_field(L, "prompts", double(prompts));
  lua_newtable(L);
  for (const auto& [step, ms] : r.evals)
    for (const auto& [k, v] : ms)
      if (k == "heldout_accuracy") {
        lua_pushnumber(L, v);
        lua_rawseti(L, -2, int(step));
      }
  lua_setfield(L, -2, "heldout");
  push_list(L, r.log, [L](const train::StepLog& s) {
    lua_createtable(L, 0, 8);
    set_field(L, "step", double(s.step + 1));
    set_field(L, "loss", s.loss);
    set_field(L, "lr", s.lr);
    set_field(L, "grad_norm", s.grad_norm);
    set_field(L, "tokens_per_s", s.tokens_per_s);
    for (const auto& [k, v] : s.metrics) set_field(L, k.c_str(), v);
  });
  lua_setfield(L, -2, "log");
}

// lt.rl.grpo(m, {data = path | items, eval = path | items, question_field=, answer_field=,
//   n = (seeded down-sampling of data), decontaminate = 8 (n-gram size; 0: off; against eval),
//   template=, chat=, algo = "grpo" | "dr_grpo", norm=, agg=, kl=, clip_ratio = 0.2, clip_high=,
//   prompts = 8, group_size = 8, max_response = 256, temperature = 1, top_k=, top_p=, stop=,
//   stop_ids=, rollout_batch = 0, epochs = 1, mini_batches = 1, micro_batch = 16, chunk = 1024,
//   copy_reference = false, rewards = {...}, accuracy = "math", iterations = 10 (batches of
//   rollouts; steps = iterations * epochs * mini_batches), eval_n = all, eval_max_response=,
//   seed = (stream "rl.grpo"), and the loop options of read_loop_options (bindings/train.h;
//   here lr = 1e-6, decay = "constant", weight_decay = 0)}) -> {steps=, wall_s=, tokens_per_s=,
//   decontaminated=, heldout = {[step] = accuracy}, log = {{step=, loss=, grad_norm=, reward_mean=, ...}}}
int l_grpo(lua_State* L) {
  const char* fn = "lt.rl.grpo";
  const ModelHandle& h = check_model(L, 1, fn);
  check_table(L, 2, fn);
  train::LoopOptions defaults;
  defaults.lr = 1e-6;
  defaults.decay = "constant";
  defaults.weight_decay = 0.0;
  train::LoopOptions lo = read_loop_options(L, 2, fn, defaults);
  check_options(L, 2, fn,
                field_keys(rl::grpo_option_fields(),
                           option_keys({"data", "eval", "question_field", "answer_field", "n", "eval_n", "decontaminate",
                                        "template", "chat", "norm", "agg", "kl", "clip_ratio", "clip_high",
                                        "group_size", "max_response", "max_prompt_tokens", "temperature", "top_k",
                                        "top_p", "stop", "stop_ids", "rollout_batch", "rewards", "iterations", "seed"},
                                       kLoopOptions)));
  const uint64_t seed = opt_seed(L, 2, fn, "rl.grpo");
  const rl::GrpoData d = rl::prepare_grpo_data(
      items_arg(L, 2, "data", fn, true), items_arg(L, 2, "eval", fn, false), opt_integer(L, 2, "n", fn).value_or(0),
      opt_integer(L, 2, "eval_n", fn).value_or(0), opt_integer(L, 2, "decontaminate", fn).value_or(8), seed, fn);
  std::vector<std::unique_ptr<LuaRef>> keep;
  rl::GrpoOptions go = read_grpo_options(L, h, seed, keep, fn);
  const rl::PromptStyle style = prompt_style(L, 2, h, fn);
  const int64_t eval_response = go.eval_max_response > 0 ? go.eval_max_response : go.rollout.max_response;
  go.eval_items = d.evals;
  if (!d.evals.empty())
    go.eval_prompts = rl::encode_prompts(tokenizer_of(h, fn), d.evals, style, prompt_limit(L, 2, h, eval_response, fn), fn);
  const auto prompt_ids = rl::encode_prompts(tokenizer_of(h, fn), d.items, style,
                                             prompt_limit(L, 2, h, go.rollout.max_response, fn), fn);
  const int64_t iterations = opt_integer(L, 2, "iterations", fn).value_or(10);
  LT_CHECK(iterations >= 1, "{}: iterations must be >= 1", fn);
  lo.steps = iterations * rl::grpo_steps_per_rollout(go);
  if (h.tok) lo.checkpoint_files.push_back(h.tok->path());
  lo.group = dist::active();  // under `ltrun launch`: prompts sharded over the ranks, data parallel
  if (lo.sink.param) {
    lo.sink.param("decontaminated", std::to_string(d.removed));
    lo.sink.param("rl_prompts", std::to_string(d.items.size()));
    lo.sink.param("eval_prompts", std::to_string(d.evals.size()));
  }
  rl::GrpoObjective obj(*h.m, d.items, prompt_ids, go);
  push_grpo_result(L, train::run_loop(*h.m, obj, lo), d.removed, d.items.size());
  return 1;
}

}  // namespace

void register_rl(lua_State* L) {
  static const luaL_Reg methods[] = {{"logprobs", LT_FN(r_logprobs)}, {nullptr, nullptr}};
  new_class(L, kRefMeta, methods, LT_FN(r_index), r_gc, LT_FN(r_tostring));
  new_module(L, "rl");
  static const luaL_Reg fns[] = {
      {"advantages", LT_FN(l_advantages)},   {"policy_loss", LT_FN(l_policy_loss)},
      {"preset", LT_FN(l_preset)},           {"rollout", LT_FN(l_rollout)},
      {"logprobs", LT_FN(l_logprobs)},       {"reference", LT_FN(l_reference)},
      {"math_reward", LT_FN(l_math_reward)}, {"format_reward", LT_FN(l_format_reward)},
      {"prompts", LT_FN(l_prompts)},         {"format_prompt", LT_FN(l_format_prompt)},
      {"chat_prompt", LT_FN(l_chat_prompt)}, {"decontaminate", LT_FN(l_decontaminate)},
      {"accuracy", LT_FN(l_accuracy)},       {"grpo", LT_FN(l_grpo)},
      {"entry", LT_FN(l_entry)},
      {nullptr, nullptr}};
  set_funcs(L, fns);
  lua_pop(L, 1);
}

}  // namespace ltrun::lua
