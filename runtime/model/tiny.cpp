// runtime/model/tiny.cpp: random models from a size spec.
#include "runtime/model/tiny.h"

#include <algorithm>

#include "runtime/core/device.h"
#include "runtime/core/error.h"
#include "runtime/model/arch.h"

namespace ltrun::model {

Config tiny_config(const TinySpec& s, c10::ScalarType dtype) {
  LT_CHECK(s.layers > 0 && s.hidden > 0 && s.heads > 0 && s.kv_heads > 0 && s.vocab > 0,
           "tiny model: layers, hidden, heads, kv_heads and vocab must be positive");
  LT_CHECK(s.head_dim > 0 || s.hidden % s.heads == 0,
           "tiny model: hidden {} is not a multiple of heads {} (or give head_dim)", s.hidden,
           s.heads);
  // Fill what the config writer reads, then parse the written text, so that the model is
  // exactly what a later load of the saved folder gives.
  Config c;
  c.model_type = s.arch;
  c.vocab_size = s.vocab;
  c.hidden_size = s.hidden;
  c.intermediate_size = s.intermediate > 0 ? s.intermediate : 3 * s.hidden;
  c.n_layers = s.layers;
  c.n_heads = s.heads;
  c.n_kv_heads = s.kv_heads;
  c.head_dim = s.head_dim > 0 ? s.head_dim : s.hidden / s.heads;
  c.max_position_embeddings = s.max_position_embeddings;
  c.rope_theta = s.rope_theta;
  c.tie_word_embeddings = s.tie_word_embeddings;
  c.qkv_bias = c.o_bias = s.attention_bias;
  c.bos_token_id = s.bos_token_id;
  if (s.eos_token_id) c.eos_token_ids = {*s.eos_token_id};
  c.torch_dtype = dtype_name(dtype);
  if (s.arch == "nemotron_h") {
    std::string pattern = s.pattern;
    if (pattern.empty())
      for (int64_t l = 0; l < s.layers; ++l) pattern += "M*-"[l % 3];
    for (char ch : pattern)
      c.layer_types.push_back(ch == 'M' ? "mamba" : ch == '*' ? "attention" : ch == '-' ? "mlp" : std::string(1, ch));
    c.n_layers = int64_t(pattern.size());
    LT_CHECK(s.mamba_head_dim > 0 && (2 * s.hidden) % s.mamba_head_dim == 0,
             "tiny model: mamba_head_dim {} does not divide 2 * hidden {}", s.mamba_head_dim, 2 * s.hidden);
    c.mamba.heads = 2 * s.hidden / s.mamba_head_dim;
    c.mamba.head_dim = s.mamba_head_dim;
    c.mamba.state = s.ssm_state;
    c.mamba.groups = s.mamba_groups;
    c.mamba.chunk = s.chunk;
    c.rms_norm_eps = 1e-5;
  }
  if (s.arch == "qwen3_5_text") {
    // L (Gated DeltaNet) / A (attention) per layer; "" puts attention at every fourth of `layers`.
    // Value heads = heads, key heads = kv_heads, both of head_dim; RoPE on a quarter of a head.
    for (char ch : s.pattern)
      LT_CHECK(ch == 'L' || ch == 'A', "tiny qwen3_5_text model: pattern \"{}\" has '{}' (L: Gated DeltaNet, A: attention)", s.pattern, ch);
    const int64_t n = s.pattern.empty() ? s.layers : int64_t(s.pattern.size());
    for (int64_t l = 0; l < n; ++l)
      c.layer_types.push_back(s.pattern.empty() ? ((l + 1) % 4 ? "linear_attention" : "full_attention")
                              : s.pattern[size_t(l)] == 'A' ? "full_attention" : "linear_attention");
    c.n_layers = n;
    c.gdn.k_heads = s.kv_heads;
    c.gdn.v_heads = s.heads;
    c.gdn.k_head_dim = c.gdn.v_head_dim = c.head_dim;
    c.rotary_dim = std::max<int64_t>(2, c.head_dim / 4 / 2 * 2);
  }
  const std::string source = "new " + s.arch + " model";
  find_arch(s.arch, source);
  return parse_config(new_config_json(c), source);
}

Model make_tiny(const TinySpec& spec, c10::Device device, c10::ScalarType dtype) {
  return Model::init(tiny_config(spec, dtype), spec.seed, device, dtype);
}

}  // namespace ltrun::model
