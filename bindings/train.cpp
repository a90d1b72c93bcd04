// bindings/train.cpp: lt.layers and lt.train (runtime/train/script.h); lt.Model's training
// methods (m:freeze, m:train_only, m:n_trainable) are registered by bindings/model.cpp.
#include "bindings/luat.h"
#include "runtime/train/script.h"

namespace ltrun::lua {

void register_train(lua_State* L) {
  new_module(L, "layers");
  set_script_funcs(L, train::layer_functions());
  for (const char* named : {"embeddings", "final_norm", "lm_head"}) {
    lua_pushstring(L, named);
    lua_setfield(L, -2, named);
  }
  lua_pop(L, 1);
  new_module(L, "train");
  set_script_funcs(L, train::train_functions());
  lua_pop(L, 1);
}

}  // namespace ltrun::lua
