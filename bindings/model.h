// bindings/model.h: the lt.Model userdata for other binding files (eval, diag, train).
#pragma once
#include <lua.hpp>

#include <memory>
#include <string>

#include "runtime/model/handle.h"

namespace ltrun::lua {

using model::ModelHandle;

// The model at idx (error naming fn if it is not a model or was freed).
const ModelHandle& check_model(lua_State* L, int idx, const char* fn);
void register_model(lua_State* L);

}  // namespace ltrun::lua
