// runtime/model/assemble.h: assembling a layer stack from donor checkpoints (`ltrun model
// hybrid`, lt.model.hybrid): each layer is layer i of a donor, copied exactly, or a fresh layer
// of a given kind initialised as HF initialises it; embeddings from one named donor, final
// norm and LM head from another (or the same). Saved as a Hugging Face model folder.
//
// Donors must share the vocabulary (vocab_size and, where both have a tokenizer.json, the same
// token of every id) and the hidden size; otherwise an error names both donors.
//
// What is written (OUT/):
//   model.safetensors, generation_config.json and the tokenizer files of the embedding donor
//   (tokenizer.json, tokenizer_config.json, special_tokens_map.json, vocab.json, merges.txt,
//   tokenizer.model where present), and config.json in one of two forms:
//
//   1. Native: when every layer's config is the same architecture with the same
//      hyper-parameters (apart from its list of layers) and the final norm's epsilon is that
//      architecture's, the stack IS that architecture: config.json is its own (e.g. nemotron_h
//      with the new hybrid_override_pattern, or qwen3), loadable by HF transformers.
//   2. Otherwise "ltrun_hybrid" (arch/hybrid.cpp; HF has no class for it):
//        {
//          "architectures": ["LtrunHybridForCausalLM"], "model_type": "ltrun_hybrid",
//          "vocab_size": V, "hidden_size": H, "num_hidden_layers": N,
//          "rms_norm_eps": eps of the final norm (the head donor's),
//          "tie_word_embeddings": true only when embeddings and head are one donor's tied pair,
//          "layer_types": [kind of each layer: "decoder", "mamba", "attention", "mlp", ...],
//          "layer_config_ids": [for each layer, an index into layer_configs],
//          "layer_configs": [complete config.json objects of registered architectures (a
//                            donor's own, with any overrides), each read by that
//                            architecture's reader: whatever a layer needs (attention heads,
//                            q/k norm, biases, RoPE theta and scaling, Mamba2 sizes, norm eps)
//                            is there; distinct configs are stored once],
//          "bos_token_id", "eos_token_id", "pad_token_id": the embedding donor's,
//          "torch_dtype": ...
//        }
//      A layer's kind must be one of its layer config's own layer kinds. Tensors:
//      model.embed_tokens.weight, model.layers.{l}.<the donor layer's own tensor names>
//      (self_attn.q_proj.weight, mixer.in_proj.weight, ...), model.norm.weight, lm_head.weight.
//      Layers with RoPE whose tables differ from the first RoPE layer's compute their own.
//   Both forms carry "hybrid_sources" (what came from where; not read back):
//      {"embed": DIR, "head": DIR, "layers": [{"from": DIR, "layer": i} |
//                                             {"kind": K, "like": DIR, "init": "hf", "seed": S}]}
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/core/fields.h"

namespace ltrun::model {

struct HybridLayerSpec {
  // Copied: layer `layer` of the donor folder `from`.
  std::string from;
  int64_t layer = -1;
  // Fresh (from empty): a layer of `kind` ("decoder", "mamba" or "mamba2", "attention",
  // "mlp", ...) with the config of donor `like` ("" = the first donor that has a layer of that
  // kind: embed, head, then the layer donors in order), patched by `config` (JSON merge patch,
  // e.g. {"mamba_num_heads": 8}); initialised as HF does ("hf", the only init), from the
  // spec's seed.
  std::string kind, like, init = "hf";
  nlohmann::json config;
};

struct HybridSpec {
  std::string out_dir;
  std::string embed;  // donor of the embeddings (and of the tokenizer files, token ids)
  std::string head;   // donor of the final norm and LM head; "" = embed
  std::vector<HybridLayerSpec> layers;
  uint64_t seed = 0;   // fresh layers
  bool native = true;  // write a native architecture's config when the stack is one
};

// One tensor that was copied: the hybrid's name, the donor folder and the donor's name.
struct HybridCopy {
  std::string name, donor, donor_name;
};

struct HybridResult {
  std::string dir, model_type, dtype;  // model_type written: ltrun_hybrid or a native one
  int64_t n_layers = 0, parameters = 0;
  std::vector<std::string> layer_types;
  std::vector<int> fresh_layers;
  std::vector<HybridCopy> copied;
  // Said on stderr too: the embedding donor had no tokenizer.json, so the hybrid has none.
  std::vector<std::string> warnings;
};

HybridResult assemble_hybrid(const HybridSpec& spec);

// By key (runtime/core/fields.h): lt.model.hybrid's options out (out_dir), embed, head, native;
// a layer's from, layer (0..2^20), kind, like, init; the results dir, arch (model_type),
// dtype, n_layers, parameters, layer_types, warnings.
const Fields<HybridSpec>& hybrid_fields();
const Fields<HybridLayerSpec>& hybrid_layer_fields();
const Fields<HybridResult>& hybrid_result_fields();
const Fields<HybridCopy>& hybrid_copy_fields();  // name, donor, donor_name

// The command line's compact layer list: comma-separated items, each
//   DIR:I or DIR:I-J   layers I..J (inclusive) of the donor DIR, in order
//   KIND or KIND@DIR   a fresh layer of KIND (with DIR's config)
// e.g. "models/nh:0-3,models/q:4-7" or "models/q:0-5,mamba@models/nh,mamba@models/nh".
std::vector<HybridLayerSpec> parse_hybrid_layers(const std::string& text);

}  // namespace ltrun::model
