// bindings/tokenizer.h: lt.Tokenizer userdata for other binding files (model:generate).
#pragma once
#include <lua.hpp>

#include "runtime/text/tokenizer.h"

namespace ltrun::lua {

void push_tokenizer(lua_State* L, const text::Tokenizer& t);
const text::Tokenizer& check_tokenizer(lua_State* L, int idx, const char* fn);
void register_tokenizer(lua_State* L);

}  // namespace ltrun::lua
