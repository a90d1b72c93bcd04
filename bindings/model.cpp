// bindings/model.cpp: lt.model and lt.Model, lt.tokenizer and lt.Tokenizer
// (runtime/model/script.h); lt.Model's training methods come from runtime/train/script.h.
#include "bindings/luat.h"
#include "runtime/model/script.h"
#include "runtime/train/script.h"

namespace ltrun::lua {

void register_model(lua_State* L) {
  new_script_class(L, model::tokenizer_class());
  new_module(L, "tokenizer");
  set_script_funcs(L, model::tokenizer_functions());
  lua_pop(L, 1);
  new_script_class(L, model::model_class(train::model_methods()));
  new_module(L, "model");
  set_script_funcs(L, model::script_functions());
  lua_pop(L, 1);
}

}  // namespace ltrun::lua
