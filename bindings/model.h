// bindings/model.h: the lt.Model userdata for other binding files (eval, diag, train).
#pragma once
#include <lua.hpp>

#include <memory>
#include <string>

#include "runtime/model/model.h"
#include "runtime/text/tokenizer.h"

namespace ltrun::lua {

struct ModelHandle {
  std::shared_ptr<model::Model> m;
  std::shared_ptr<text::Tokenizer> tok;  // from the folder's tokenizer.json, if any
  std::string path;
  int running = 0;  // forward passes of this handle in progress (they may call back into Lua)
};

// The model at idx (error naming fn if it is not a model or was freed).
const ModelHandle& check_model(lua_State* L, int idx, const char* fn);
void register_model(lua_State* L);

}  // namespace ltrun::lua
