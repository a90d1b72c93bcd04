// bindings/tokenizer.cpp: lt.tokenizer.load(file_or_dir) → lt.Tokenizer with encode, decode,
// encode_batch, encode_with_offsets, token_to_id, id_to_token. Ids are the Hugging Face ids;
// offsets are Lua string positions (text:sub(first, last) is the token's text).
#include "bindings/tokenizer.h"

#include <new>

#include "bindings/luat.h"

namespace ltrun::lua {
namespace {

const char kMeta[] = "lt.Tokenizer";

bool add_special(lua_State* L, int opts, const char* fn) {
  check_options(L, opts, fn, {"special"});
  return opt_bool(L, opts, "special", fn).value_or(true);
}

std::vector<int32_t> read_ids(lua_State* L, int idx, const char* fn) {
  const auto v = read_integers(L, idx, fn, "ids", 0, INT32_MAX);
  return std::vector<int32_t>(v.begin(), v.end());
}

int l_load(lua_State* L) {
  push_tokenizer(L, text::Tokenizer::load(check_string(L, 1, "lt.tokenizer.load")));
  return 1;
}

int t_encode(lua_State* L) {
  const auto& t = check_tokenizer(L, 1, "tokenizer:encode");
  push_array(L, t.encode(check_string(L, 2, "tokenizer:encode"), add_special(L, 3, "tokenizer:encode")));
  return 1;
}

int t_encode_batch(lua_State* L) {
  const auto& t = check_tokenizer(L, 1, "tokenizer:encode_batch");
  auto all = t.encode_batch(read_strings(L, 2, "tokenizer:encode_batch", "texts"),
                            add_special(L, 3, "tokenizer:encode_batch"));
  push_array(L, all);
  return 1;
}

// → ids, spans: spans[i] = {first, last} such that text:sub(first, last) is token i's text
int t_encode_with_offsets(lua_State* L) {
  const auto& t = check_tokenizer(L, 1, "tokenizer:encode_with_offsets");
  auto e = t.encode_with_offsets(check_string(L, 2, "tokenizer:encode_with_offsets"),
                                 add_special(L, 3, "tokenizer:encode_with_offsets"));
  push_array(L, e.ids);
  push_list(L, e.offsets,
            [L](const auto& o) { push_array(L, std::vector<double>{double(o.begin + 1), double(o.end)}); });
  return 2;
}

int t_decode(lua_State* L) {
  const auto& t = check_tokenizer(L, 1, "tokenizer:decode");
  check_options(L, 3, "tokenizer:decode", {"skip_special"});
  const bool skip = opt_bool(L, 3, "skip_special", "tokenizer:decode").value_or(false);
  push(L, t.decode(read_ids(L, 2, "tokenizer:decode"), skip));
  return 1;
}

int t_token_to_id(lua_State* L) {
  const auto& t = check_tokenizer(L, 1, "tokenizer:token_to_id");
  auto id = t.token_to_id(check_string(L, 2, "tokenizer:token_to_id"));
  if (id) lua_pushnumber(L, *id); else lua_pushnil(L);
  return 1;
}

int t_id_to_token(lua_State* L) {
  const auto& t = check_tokenizer(L, 1, "tokenizer:id_to_token");
  push(L, t.id_to_token(check_int(L, 2, "tokenizer:id_to_token")));
  return 1;
}

int m_index(lua_State* L) {
  const auto& t = check_tokenizer(L, 1, "tokenizer");
  const std::string k = check_string(L, 2, "tokenizer");
  lua_getfield(L, lua_upvalueindex(1), k.c_str());
  if (!lua_isnil(L, -1)) return 1;
  lua_pop(L, 1);
  if (k == "vocab_size") lua_pushnumber(L, t.vocab_size());
  else if (k == "path") push(L, t.path());
  else if (k == "special_ids") push_array(L, t.special_ids());
  else lua_pushnil(L);
  return 1;
}

int m_gc(lua_State* L) {
  static_cast<text::Tokenizer*>(lua_touserdata(L, 1))->~Tokenizer();
  return 0;
}

int m_tostring(lua_State* L) {
  const auto& t = check_tokenizer(L, 1, "tostring");
  push(L, fmt::format("tokenizer({}, vocab {})", t.path(), t.vocab_size()));
  return 1;
}

}  // namespace

void push_tokenizer(lua_State* L, const text::Tokenizer& t) {
  new (lua_newuserdata(L, sizeof(text::Tokenizer))) text::Tokenizer(t);
  luaL_getmetatable(L, kMeta);
  lua_setmetatable(L, -2);
}

const text::Tokenizer& check_tokenizer(lua_State* L, int idx, const char* fn) {
  auto* t = static_cast<text::Tokenizer*>(luaL_testudata(L, idx, kMeta));
  if (!t) fail("{}: argument {}: expected a tokenizer, got {}", fn, idx, type_name(L, idx));
  return *t;
}

void register_tokenizer(lua_State* L) {
  static const luaL_Reg methods[] = {
      {"encode", LT_FN(t_encode)}, {"encode_batch", LT_FN(t_encode_batch)},
      {"encode_with_offsets", LT_FN(t_encode_with_offsets)}, {"decode", LT_FN(t_decode)},
      {"token_to_id", LT_FN(t_token_to_id)}, {"id_to_token", LT_FN(t_id_to_token)}, {nullptr, nullptr}};
  new_class(L, kMeta, methods, LT_FN(m_index), m_gc, LT_FN(m_tostring));
  new_module(L, "tokenizer");
  static const luaL_Reg fns[] = {{"load", LT_FN(l_load)}, {nullptr, nullptr}};
  set_funcs(L, fns);
  lua_pop(L, 1);
}

}  // namespace ltrun::lua
