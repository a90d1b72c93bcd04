// runtime/model/script.h: lt.model (load, new, hybrid, info), the lt.Model class (forward with
// capture / resume / intervene / logits-where-asked, lens, generate (strings or ids), clone,
// save, parameters, to, free, layer, parts) and lt.tokenizer / lt.Tokenizer for scripts
// (bindings/model.cpp registers these). Residual indices follow
// the runtime's convention: out.hidden[0] = embeddings, out.hidden[l+1] = residual after
// block l (0-based keys). Hook sites inside a block (model.h: mixer_out, resid_mid, mlp_out,
// resid_post):
//   capture = "mlp_out" | {"mixer_out", "mlp_out"}  -> out.sites.mlp_out[l] (0-based l)
//   intervene = { [l] = iv (after block l), mlp_out = { [l] = iv }, ... }
//   m:layer(l) -> {kind = "decoder" | "mamba" | ..., sites = {"mixer_out", ...}}
// Tokenizer ids are the Hugging Face ids; offsets are Lua string positions
// (text:sub(first, last) is the token's text).
#pragma once
#include <vector>

#include "runtime/core/options.h"

namespace ltrun::model {

const std::vector<ScriptFunction>& script_functions();  // lt.model
// lt.Model; `more`: methods other areas add (runtime/train/script.h: model_methods)
const ScriptClass& model_class(const std::vector<ScriptFunction>& more);
const std::vector<ScriptFunction>& tokenizer_functions();  // lt.tokenizer
const ScriptClass& tokenizer_class();                     // lt.Tokenizer

}  // namespace ltrun::model
