// runtime/model/config.h: the hyper-parameters of a decoder-only model, read from a Hugging
// Face config.json (and generation_config.json) through the architecture registry.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ltrun::model {

// config.json's rope_scaling (or transformers 5's rope_parameters). Fields a type does not
// use keep their defaults.
struct RopeScaling {
  std::string type = "default";  // default | linear | llama3 | yarn
  std::optional<double>
      factor;  // linear, llama3; yarn: max_position_embeddings / original if unset
  double low_freq_factor = 0, high_freq_factor = 0;  // llama3
  int64_t original_max_position_embeddings = 0;      // llama3; yarn (0: max_position_embeddings)
  std::optional<double> attention_factor, mscale, mscale_all_dim;  // yarn
  double beta_fast = 32, beta_slow = 1;                            // yarn
  bool truncate = true;                                            // yarn
};

// Mamba2 mixer sizes (nemotron_h's mamba layers), HF NemotronHConfig's keys.
struct Mamba2Config {
  int64_t heads = 0, head_dim = 0;  // mamba_num_heads, mamba_head_dim (inner = heads * head_dim)
  int64_t state = 0, groups = 1;    // ssm_state_size, n_groups (B and C are per group)
  int64_t conv_kernel = 4, chunk = 128;
  double dt_min = 0.001, dt_max = 0.1, dt_floor = 1e-4;  // time_step_min (a floor on dt), init range
  bool conv_bias = true, proj_bias = false;               // use_conv_bias, use_bias
  int64_t inner() const { return heads * head_dim; }
  int64_t conv_dim() const { return inner() + 2 * groups * state; }
};

// Gated DeltaNet sizes (qwen3_5's linear_attention layers), HF Qwen3_5TextConfig's keys.
struct GatedDeltaNetConfig {
  int64_t k_heads = 0, v_heads = 0;        // linear_num_key_heads, linear_num_value_heads
  int64_t k_head_dim = 0, v_head_dim = 0;  // linear_key_head_dim, linear_value_head_dim
  int64_t conv_kernel = 4;                 // linear_conv_kernel_dim
  int64_t chunk = 64;  // tokens per chunk of the prefill scan (HF's fixed 64; not in config.json)
  int64_t key_dim() const { return k_heads * k_head_dim; }
  int64_t value_dim() const { return v_heads * v_head_dim; }
  int64_t conv_dim() const { return 2 * key_dim() + value_dim(); }
};

struct Config {
  std::string model_type;  // the registry key: qwen3, qwen2, llama, nemotron_h
  int64_t vocab_size = 0, hidden_size = 0, intermediate_size = 0;
  int64_t n_layers = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;
  int64_t max_position_embeddings = 0;
  double rope_theta = 10000.0, rms_norm_eps = 1e-6;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;

  // What distinguishes the architectures; set by each one's reader (qwen3.cpp, ...).
  bool qk_norm = false;   // RMSNorm over head_dim on q and k before RoPE
  bool qkv_bias = false;  // biases on q_proj, k_proj, v_proj
  bool o_bias = false;    // bias on o_proj
  bool mlp_bias = false;  // biases on gate_proj, up_proj, down_proj
  bool rope = true;       // RoPE on q and k (nemotron_h's attention has no positions)
  int64_t rotary_dim = 0; // RoPE on the first rotary_dim dims of a head (0: all, head_dim)
  bool norm_offset = false;  // RMSNorms multiply by 1 + weight (qwen3_5; weights init 0)

  // The kind of each layer (size n_layers): "decoder" (attention + SwiGLU MLP: qwen3, qwen2,
  // llama), nemotron_h's "mamba", "attention", "mlp" (one mixer behind one norm) or
  // qwen3_5's "linear_attention" (Gated DeltaNet), "full_attention" (each + SwiGLU MLP).
  std::vector<std::string> layer_types;
  Mamba2Config mamba;
  GatedDeltaNetConfig gdn;

  std::optional<int64_t> bos_token_id, pad_token_id;
  std::vector<int64_t> eos_token_ids;  // generation_config.json's when it has them
  std::string torch_dtype;             // "bfloat16", ...; "" when config.json has none

  std::string source;           // the file read, for messages
  std::string json;             // config.json as read; Model::save writes it back
  std::string generation_json;  // generation_config.json as read, "" if there was none
};

// Parses config.json text; errors name `source` and the key.
Config parse_config(const std::string& json, const std::string& source);
// Reads DIR/config.json and, if present, DIR/generation_config.json (its bos/eos/pad win).
// A file path stands for the folder holding it.
Config read_config(const std::string& dir);

// The model types the registry knows, for messages and the CLI.
std::vector<std::string> known_model_types();

}  // namespace ltrun::model
