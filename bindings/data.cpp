// bindings/data.cpp: lt.data: pack (text / JSONL / folders → uint32 token shards +
// index.json), info (what a packed corpus holds), windows (token rows [n, seq_len + 1] in
// the trainer's deterministic shuffled order).
#include <ATen/ATen.h>

#include "bindings/luat.h"
#include "bindings/tensor.h"
#include "runtime/data/corpus.h"

namespace ltrun::lua {
namespace {

std::vector<std::string> read_strings(lua_State* L, int t, const char* key, const char* fn) {
  std::vector<std::string> out;
  lua_getfield(L, t, key);
  if (lua_type(L, -1) == LUA_TSTRING) {
    out.push_back(lua_tostring(L, -1));
  } else if (lua_istable(L, -1)) {
    for (int i = 1; i <= int(lua_objlen(L, -1)); ++i) {
      lua_rawgeti(L, -1, i);
      out.push_back(check_string(L, lua_gettop(L), fn));
      lua_pop(L, 1);
    }
  } else if (!lua_isnil(L, -1)) {
    fail("{}: option {}: expected a path or a list of paths, got {}", fn, key, type_name(L, -1));
  }
  lua_pop(L, 1);
  return out;
}

// lt.data.pack{tokenizer = PATH, inputs = {PATHS} | PATH, out = DIR, field = "text",
//              val = 0.01, seed = (stream "data.pack"), eos = TOKEN, max_bytes = 0, shard_tokens =, progress =}
int l_pack(lua_State* L) {
  const char* fn = "lt.data.pack";
  check_table(L, 1, fn);
  data::PackOptions o;
  read_fields(L, 1, fn, o, data::pack_option_fields(), true, {"inputs", "input", "seed"});
  LT_CHECK(!o.tokenizer.empty(), "{}: option tokenizer (a tokenizer.json or model folder) is required", fn);
  LT_CHECK(!o.out_dir.empty(), "{}: option out (the folder to write) is required", fn);
  o.inputs = read_strings(L, 1, "inputs", fn);
  if (o.inputs.empty()) o.inputs = read_strings(L, 1, "input", fn);
  o.seed = opt_seed(L, 1, fn, "data.pack");
  lua_createtable(L, 0, 9);
  set_fields(L, data::pack(o), data::pack_result_fields());
  return 1;
}

// lt.data.info(DIR) → {train_tokens =, val_tokens =, eos_id =, vocab_size =}
int l_info(lua_State* L) {
  const data::Corpus c = data::Corpus::open(check_string(L, 1, "lt.data.info"));
  lua_createtable(L, 0, 4);
  set_field(L, "train_tokens", double(c.tokens("train")));
  set_field(L, "val_tokens", double(c.tokens("val")));
  set_field(L, "eos_id", c.eos_id());
  set_field(L, "vocab_size", double(c.vocab_size()));
  return 1;
}

// lt.data.windows(DIR, {split = "train", seq_len = 128, n = 8, cursor = 0,
//                       seed = (stream "data.windows"),
//                       shuffle = true}) → int64 tensor [n, seq_len + 1]
int l_windows(lua_State* L) {
  const char* fn = "lt.data.windows";
  check_options(L, 2, fn, {"split", "seq_len", "n", "seed", "cursor", "shuffle"});
  const data::Corpus c = data::Corpus::open(check_string(L, 1, fn));
  const std::string split = opt_string(L, 2, "split", fn).value_or("train");
  data::Windows w(c, split, opt_integer(L, 2, "seq_len", fn).value_or(128),
                    opt_seed(L, 2, fn, "data.windows"),
                    opt_bool(L, 2, "shuffle", fn).value_or(split == "train"));
  w.seek(uint64_t(opt_integer(L, 2, "cursor", fn).value_or(0)));
  int64_t n = opt_integer(L, 2, "n", fn).value_or(8);
  if (n < 0) n = w.count();
  push_tensor(L, w.next(n));
  return 1;
}

}  // namespace

void register_data(lua_State* L) {
  new_module(L, "data");
  static const luaL_Reg fns[] = {{"pack", LT_FN(l_pack)}, {"info", LT_FN(l_info)},
                                 {"windows", LT_FN(l_windows)}, {nullptr, nullptr}};
  set_funcs(L, fns);
  lua_pop(L, 1);
}

}  // namespace ltrun::lua
