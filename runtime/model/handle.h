// runtime/model/handle.h: a model as scripts hold it (the lt.Model userdata of bindings/model.cpp):
// the model, its folder's tokenizer and path, and how many of its passes are running.
#pragma once
#include <memory>
#include <string>

#include "runtime/core/options.h"
#include "runtime/model/model.h"
#include "runtime/text/tokenizer.h"

namespace ltrun::model {

struct ModelHandle {
  std::shared_ptr<Model> m;
  std::shared_ptr<text::Tokenizer> tok;  // from the folder's tokenizer.json, if any
  std::string path;
  int running = 0;  // forward passes of this handle in progress (they may call back into Lua)
};

// Argument i of a script function as a model: "fn: argument N: expected a model, got T", or
// "fn: the model was freed (m:free())".
inline ModelHandle& model_arg(const Args& a, int i) {
  ModelHandle& h = a.object<ModelHandle>(i, "lt.Model", "a model");
  if (!h.m) fail("{}: the model was freed (m:free())", a.fn());
  return h;
}

}  // namespace ltrun::model
