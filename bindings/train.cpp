// bindings/train.cpp: lt.layers (freeze specs as plain Lua tables), lt.train (causal_lm,
// param_groups, weight_change, freeze, train_only, eval_loss) and the lt.Model methods
// m:freeze(spec), m:train_only(spec), m:n_trainable().
//
// A spec is data: {layers = {0, 1}, part = "attention"|"mlp"|"norms"} for blocks (0-based
// numbers as in model.layers.N), a string "embeddings" | "final_norm" | "lm_head" | "all",
// a number (one block), or a list of specs (their union). nil or {} selects nothing.
// The methods are in model_train_methods(), which bindings/model.cpp puts in lt.Model's
// method table, so that it stays free of training code.
#include <ATen/ATen.h>

#include <filesystem>
#include <memory>
#include <optional>

#include "bindings/luat.h"
#include "bindings/train.h"
#include "bindings/model.h"
#include "bindings/tensor.h"
#include "runtime/dist/dist.h"
#include "runtime/model/model.h"
#include "runtime/text/tokenizer.h"
#include "runtime/train/freeze.h"
#include "runtime/train/optim.h"
#include "runtime/train/trainer.h"
#include "runtime/train/weight_change.h"

namespace ltrun::lua {
namespace {

model::Model& model_of(lua_State* L, int idx, const char* fn) { return *check_model(L, idx, fn).m; }

// n_layers from a model or a number
int layers_of(lua_State* L, int idx, const char* fn) {
  if (lua_type(L, idx) == LUA_TNUMBER) return check_int(L, idx, fn, 0);
  return model_of(L, idx, fn).n_layers();
}

// ---- specs ------------------------------------------------------------------------------

train::Part::Sub read_sub(const std::string& s, const char* fn) {
  if (s == "all" || s.empty()) return train::Part::Sub::All;
  if (s == "attention") return train::Part::Sub::Attention;
  if (s == "mlp") return train::Part::Sub::Mlp;
  if (s == "norms") return train::Part::Sub::Norms;
  fail("{}: part '{}': expected attention, mlp, norms or all", fn, s);
}

train::Spec read_spec(lua_State* L, int idx, const char* fn) {
  idx = abs_index(L, idx);
  train::Spec spec;
  switch (lua_type(L, idx)) {
    case LUA_TNIL:
    case LUA_TNONE: return spec;
    case LUA_TSTRING: return train::Spec::named(lua_tostring(L, idx));
    case LUA_TNUMBER: return train::Spec::blocks({check_int(L, idx, fn)});
    case LUA_TTABLE: break;
    default: fail("{}: a freeze spec must be a table, string or block number, got {}", fn, type_name(L, idx));
  }
  lua_getfield(L, idx, "layers");
  if (!lua_isnil(L, -1)) {
    const int t = lua_gettop(L);
    check_options(L, idx, fn, {"layers", "part"});  // {layers = {...}, part = "mlp"}
    check_table(L, t, fn);
    std::set<int> layers;
    for (int i = 1; i <= int(lua_objlen(L, t)); ++i) {
      lua_rawgeti(L, t, i);
      layers.insert(check_int(L, lua_gettop(L), fn));
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return train::Spec::blocks(layers, read_sub(opt_string(L, idx, "part", fn).value_or("all"), fn));
  }
  lua_pop(L, 1);
  for (int i = 1; i <= int(lua_objlen(L, idx)); ++i) {
    lua_rawgeti(L, idx, i);
    spec.add(read_spec(L, -1, fn));
    lua_pop(L, 1);
  }
  return spec;
}

void push_block_spec(lua_State* L, const std::set<int>& layers, const char* part = nullptr) {
  lua_createtable(L, 0, 2);
  set_array(L, "layers", std::vector<int>(layers.begin(), layers.end()));
  if (part) {
    set_field(L, "part", part);
  }
}

// ---- lt.layers ---------------------------------------------------------------------------

int l_shallow(lua_State* L) {
  push_block_spec(L, train::shallow_layers(layers_of(L, 1, "lt.layers.shallow"),
                                           check_number(L, 2, "lt.layers.shallow")));
  return 1;
}
int l_deep(lua_State* L) {
  push_block_spec(L, train::deep_layers(layers_of(L, 1, "lt.layers.deep"),
                                        check_number(L, 2, "lt.layers.deep")));
  return 1;
}
int l_range(lua_State* L) {
  push_block_spec(L, train::range_layers(check_int(L, 1, "lt.layers.range"), check_int(L, 2, "lt.layers.range")));
  return 1;
}
int l_middle(lua_State* L) {
  push_block_spec(L, train::middle_layers(layers_of(L, 1, "lt.layers.middle"),
                                          check_int(L, 2, "lt.layers.middle")));
  return 1;
}
int l_blocks(lua_State* L) {  // lt.layers.all(m): every block
  const int n = layers_of(L, 1, "lt.layers.all");
  push_block_spec(L, n > 0 ? train::range_layers(0, n - 1) : std::set<int>{});
  return 1;
}
// lt.layers.attention(spec) / mlp(spec) / norms(spec): the same blocks, only that part
template <const char* Part>
int l_part(lua_State* L) {
  const train::Spec s = read_spec(L, 1, Part);
  std::set<int> layers;
  for (const auto& p : s.parts) {
    LT_CHECK(p.kind == train::Part::Kind::Blocks, "lt.layers.{}: expects a spec of blocks", Part);
    layers.insert(p.layers.begin(), p.layers.end());
  }
  push_block_spec(L, layers, Part);
  return 1;
}
constexpr char kAttention[] = "attention", kMlp[] = "mlp", kNorms[] = "norms";

int l_union(lua_State* L) {
  const int n = lua_gettop(L);
  lua_createtable(L, n, 0);
  for (int i = 1; i <= n; ++i) {
    lua_pushvalue(L, i);
    lua_rawseti(L, -2, i);
  }
  return 1;
}
int l_describe(lua_State* L) {
  push(L, read_spec(L, 1, "lt.layers.describe").describe());
  return 1;
}
// lt.layers.names(m, spec): the parameter names the spec selects
int l_names(lua_State* L) {
  const model::Model& m = model_of(L, 1, "lt.layers.names");
  const train::Spec s = read_spec(L, 2, "lt.layers.names");
  lua_newtable(L);
  int i = 1;
  for (const auto& p : m.parameters())
    if (train::selects(m, s, p)) {
      push(L, p.name);
      lua_rawseti(L, -2, i++);
    }
  return 1;
}

// ---- freezing ------------------------------------------------------------------------------

void report(lua_State* L, const train::FreezeReport& r) {
  RunSink* s = run_context(L).sink;
  for (const std::string& n : r.notes) {
    fmt::print(stderr, "ltrun: note: {}\n", n);
    if (s) s->param("freeze_note", n);
  }
}

int m_freeze(lua_State* L) {
  model::Model& m = model_of(L, 1, "model:freeze");
  report(L, train::freeze(m, read_spec(L, 2, "model:freeze")));
  lua_settop(L, 1);
  return 1;
}
int m_train_only(lua_State* L) {
  model::Model& m = model_of(L, 1, "model:train_only");
  report(L, train::train_only(m, read_spec(L, 2, "model:train_only")));
  lua_settop(L, 1);
  return 1;
}
int m_n_trainable(lua_State* L) {
  lua_pushnumber(L, double(train::count_trainable(model_of(L, 1, "model:n_trainable")).trainable));
  return 1;
}

// ---- lt.train ------------------------------------------------------------------------------

std::map<int, double> read_lr_mult(lua_State* L, int opts, const char* fn) {
  std::map<int, double> out;
  if (!lua_istable(L, opts)) return out;
  lua_getfield(L, opts, "lr_mult");
  if (!lua_isnil(L, -1)) {
    const int t = lua_gettop(L);
    check_table(L, t, fn);
    lua_pushnil(L);
    while (lua_next(L, t)) {
      LT_CHECK(lua_type(L, -2) == LUA_TNUMBER && lua_type(L, -1) == LUA_TNUMBER,
               "{}: lr_mult must map block numbers to numbers", fn);
      out[int(to_integer(L, -2, fmt::format("{}: lr_mult key (a block)", fn), INT32_MIN, INT32_MAX))] = lua_tonumber(L, -1);
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  return out;
}

std::pair<double, double> read_betas(lua_State* L, int opts, const char* fn, std::pair<double, double> b) {
  lua_getfield(L, opts, "betas");
  if (!lua_isnil(L, -1)) {
    const int t = lua_gettop(L);
    LT_CHECK(lua_istable(L, t) && lua_objlen(L, t) == 2, "{}: option betas: expected {{b1, b2}}, got {}", fn,
             type_name(L, t));
    lua_rawgeti(L, t, 1);
    lua_rawgeti(L, t, 2);
    b = {check_number(L, -2, fn), check_number(L, -1, fn)};
    lua_pop(L, 2);
  }
  lua_pop(L, 1);
  return b;
}

}  // namespace

const std::vector<const char*> kLoopOptions = field_keys(train::loop_option_fields(), {"betas", "lr_mult", "log"});

train::LoopOptions read_loop_options(lua_State* L, int idx, const char* fn, const train::LoopOptions& defaults) {
  refuse_renamed(L, idx, fn, "clip",
                 "clip_grad (the gradient-norm clip) or clip_ratio (the PPO ratio clip of lt.rl.grpo and "
                 "lt.rl.policy_loss)");
  train::LoopOptions o = defaults;
  read_fields(L, idx, fn, o, train::loop_option_fields());
  std::tie(o.beta1, o.beta2) = read_betas(L, idx, fn, {o.beta1, o.beta2});
  LT_CHECK(o.clip >= 0, "{}: clip_grad must be >= 0 (0: no clipping), got {}", fn, o.clip);
  if (auto m = read_lr_mult(L, idx, fn); !m.empty()) o.lr_mult = m;
  o.sink = opt_bool(L, idx, "log", fn).value_or(true) ? train_sink(L) : train::MetricSink{};
  return o;
}

namespace {

// The causal LM's own options (the loop's are read_loop_options').
train::TrainOptions read_train_options(lua_State* L, const ModelHandle& box, const char* fn) {
  train::TrainOptions o;
  static_cast<train::LoopOptions&>(o) = read_loop_options(L, 2, fn, train::TrainOptions{});
  check_options(L, 2, fn,
                field_keys(train::train_option_fields(),
                           option_keys({"data", "val", "seq_len", "eval_batches", "seed", "on_step"}, kLoopOptions)));
  read_fields(L, 2, fn, o, train::train_option_fields());
  o.group = dist::active();  // data parallel under `ltrun launch` (rank 0 alone logs)
  if (box.tok) o.checkpoint_files.push_back(box.tok->path());
  return o;
}

// data = a packed corpus folder (shuffled windows, validation from its val split) or a token
// tensor [N, seq_len + 1] (with val = a tensor)
train::DataSource read_data(lua_State* L, const model::Model& m, const train::TrainOptions& o, const char* fn) {
  const int64_t seq_len = opt_integer(L, 2, "seq_len", fn).value_or(128);
  const int64_t eval_batches = opt_integer(L, 2, "eval_batches", fn).value_or(8);
  const bool seed_given = opt_integer(L, 2, "seed", fn).has_value();
  const uint64_t seed = opt_seed(L, 2, fn, "train.order");
  lua_getfield(L, 2, "data");
  const int d = lua_gettop(L);
  if (lua_type(L, d) == LUA_TSTRING)
    return train::corpus_source(lua_tostring(L, d), m.config().vocab_size, seq_len, seed, seed_given, o.micro_batch,
                                eval_batches);
  if (!is_tensor(L, d))
    fail("{}: option data: expected a packed corpus folder or a token tensor [N, seq_len + 1], got {}", fn,
         type_name(L, d));
  lua_getfield(L, 2, "val");
  return train::tensor_source(check_tensor(L, d, fn), is_tensor(L, -1) ? check_tensor(L, -1, fn) : at::Tensor());
}

void push_train_result(lua_State* L, const train::TrainResult& r) {
  lua_createtable(L, 0, 16);
  set_fields(L, static_cast<const train::LoopResult&>(r), train::loop_result_fields());
  if (r.val_loss >= 0) set_field(L, "val_loss", r.val_loss);
  std::vector<double> losses, lrs;
  for (const auto& s : r.log) losses.push_back(s.loss), lrs.push_back(s.lr);
  set_array(L, "losses", losses);
  set_array(L, "lrs", lrs);
  push_list(L, r.val_losses, [L](const std::pair<int64_t, double>& v) {
    push_array(L, std::vector<double>{double(v.first), v.second});
  });
  lua_setfield(L, -2, "val_losses");
}

// lt.train.causal_lm(m, {data = DIR | tensor [N, T+1], val = tensor, seq_len = 128, steps =,
//   micro_batch =, grad_accum =, eval_batches = 8, seed = (stream "train.order"),
//   force_full_backward =, activation_checkpointing =, on_step = function(step, loss),
//   shard_optimizer = false, overlap_all_reduce = false, bucket_bytes = 25 MiB, and the loop
//   options of read_loop_options (bindings/train.h)}) → summary table (the last three under
//   `ltrun launch`: ZeRO-1 and the all-reduce overlapped with backward, runtime/train/loop.h)
// On resume the data order continues with the checkpoint's data seed; an explicit seed =
// that differs from it is an error. on_step runs after each optimizer step and may change
// the freeze plan.
int l_causal_lm(lua_State* L) {
  const char* fn = "lt.train.causal_lm";
  const ModelHandle& box = check_model(L, 1, fn);
  check_table(L, 2, fn);
  train::TrainOptions o = read_train_options(L, box, fn);
  lua_getfield(L, 2, "on_step");
  const LuaRef on_step(L, lua_gettop(L), fn, "on_step");
  if (on_step.ref != LUA_NOREF)
    o.on_step = [L, &on_step](int64_t step, double loss) {
      on_step.call(fmt::format("lt.train.causal_lm: on_step at step {}", step), double(step), loss);
    };
  train::DataSource data = read_data(L, *box.m, o, fn);
  push_train_result(L, train::train_causal_lm(*box.m, data, o));
  return 1;
}

// lt.train.param_groups(m, {weight_decay = 0.01, lr_mult = {[layer] = x}}) → list of
// {name =, lr_mult =, weight_decay =, params = {names}}
int l_param_groups(lua_State* L) {
  const char* fn = "lt.train.param_groups";
  const model::Model& m = model_of(L, 1, fn);
  check_options(L, 2, fn, {"weight_decay", "lr_mult"});
  const double wd = opt_number(L, 2, "weight_decay", fn).value_or(0.01);
  const auto groups = train::param_groups(m, wd, read_lr_mult(L, 2, fn));
  push_list(L, groups, [L](const train::ParamGroup& g) {
    lua_createtable(L, 0, 4);
    set_field(L, "name", g.name);
    set_field(L, "lr_mult", g.lr_mult);
    set_field(L, "weight_decay", g.weight_decay);
    std::vector<std::string> names;
    for (const auto& p : g.params) names.push_back(p.name);
    set_array(L, "params", names);
  });
  return 1;
}

// lt.train.weight_change(m, base[, {log = NAME}]) → {layers = {...}, relative = {...},
// embeddings =, final_norm =, lm_head =}; layers[i] is block i - 1. With log, the per-layer
// norms go to the current run as layer metrics NAME (and NAME_relative).
int l_weight_change(lua_State* L) {
  const char* fn = "lt.train.weight_change";
  const train::WeightChange w =
      train::weight_change(model_of(L, 1, fn), model_of(L, 2, fn));
  check_options(L, 3, fn, {"log"});
  if (auto name = opt_string(L, 3, "log", fn)) {
    RunSink* s = run_context(L).sink;
    LT_CHECK(s, "{}: log needs a run (ltrun SCRIPT)", fn);
    for (size_t l = 0; l < w.layers.size(); ++l) {
      s->layer_metric(*name, int64_t(l), "", w.layers[l]);
      s->layer_metric(*name + "_relative", int64_t(l), "", w.relative[l]);
    }
  }
  lua_createtable(L, 0, 5);
  set_fields(L, w, train::weight_change_fields());
  return 1;
}

// lt.train.eval_loss(m, tokens [N, T + 1]) → mean next-token cross entropy
int l_eval_loss(lua_State* L) {
  const model::Model& m = model_of(L, 1, "lt.train.eval_loss");
  lua_pushnumber(L, train::eval_loss(m, {check_tensor(L, 2, "lt.train.eval_loss").to(at::kLong)}));
  return 1;
}

int l_freeze(lua_State* L) { return m_freeze(L); }
int l_train_only(lua_State* L) { return m_train_only(L); }

// lt.train.latest_checkpoint(dir) → path or nil
int l_latest(lua_State* L) {
  const std::string p = train::latest_checkpoint(check_string(L, 1, "lt.train.latest_checkpoint"));
  if (p.empty()) lua_pushnil(L);
  else push(L, p);
  return 1;
}

}  // namespace

train::MetricSink train_sink(lua_State* L) {
  train::MetricSink k;
  RunSink* sink = run_context(L).sink;
  if (!sink) return k;
  k.metric = [sink](const std::string& name, double v, int64_t step) { sink->metric(name, v, step); };
  k.param = [sink](const std::string& key, const std::string& v) { sink->param(key, v); };
  k.flush = [sink] { sink->flush(); };
  return k;
}

const luaL_Reg* model_train_methods() {
  static const luaL_Reg methods[] = {{"freeze", LT_FN(m_freeze)},
                                     {"train_only", LT_FN(m_train_only)},
                                     {"n_trainable", LT_FN(m_n_trainable)},
                                     {nullptr, nullptr}};
  return methods;
}

void register_train(lua_State* L) {
  new_module(L, "layers");
  static const luaL_Reg layers[] = {
      {"shallow", LT_FN(l_shallow)}, {"deep", LT_FN(l_deep)}, {"range", LT_FN(l_range)},
      {"middle", LT_FN(l_middle)}, {"all", LT_FN(l_blocks)}, {"union", LT_FN(l_union)},
      {"attention", LT_FN(l_part<kAttention>)}, {"mlp", LT_FN(l_part<kMlp>)},
      {"norms", LT_FN(l_part<kNorms>)}, {"describe", LT_FN(l_describe)},
      {"names", LT_FN(l_names)}, {nullptr, nullptr}};
  set_funcs(L, layers);
  for (const char* named : {"embeddings", "final_norm", "lm_head"}) {
    lua_pushstring(L, named);
    lua_setfield(L, -2, named);
  }
  lua_pop(L, 1);

  new_module(L, "train");
  static const luaL_Reg fns[] = {
      {"causal_lm", LT_FN(l_causal_lm)}, {"param_groups", LT_FN(l_param_groups)},
      {"weight_change", LT_FN(l_weight_change)}, {"eval_loss", LT_FN(l_eval_loss)},
      {"freeze", LT_FN(l_freeze)}, {"train_only", LT_FN(l_train_only)},
      {"latest_checkpoint", LT_FN(l_latest)}, {nullptr, nullptr}};
  set_funcs(L, fns);
  lua_pop(L, 1);
}

}  // namespace ltrun::lua
