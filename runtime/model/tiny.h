// runtime/model/tiny.h: small random models of a given architecture and size, initialised
// as HF initialises them and saved in the HF layout (for tests, smoke runs, `ltrun model new`).
#pragma once
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/model/config.h"
#include "runtime/model/model.h"

namespace ltrun::model {

struct TinySpec {
  std::string arch = "qwen3";  // a registry model_type
  int64_t layers = 4, hidden = 64, heads = 4, kv_heads = 2;
  int64_t intermediate = 0;  // 0: 3 * hidden
  int64_t head_dim = 0;      // 0: hidden / heads
  int64_t vocab = 256;
  int64_t max_position_embeddings = 2048;
  double rope_theta = 10000.0;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // qwen3 and llama; qwen2 always has q/k/v biases
  std::optional<int64_t> bos_token_id, eos_token_id;
  uint64_t seed = 0;
  // nemotron_h: one character per layer, M (Mamba2), * (attention), - (MLP); "" repeats
  // "M*-" over `layers`. Mamba2 heads = 2 * hidden / mamba_head_dim (HF's expand = 2).
  // qwen3_5_text: L (Gated DeltaNet) or A (attention) per layer; "": every fourth of
  // `layers` attention.
  std::string pattern;
  int64_t mamba_head_dim = 8, ssm_state = 8, mamba_groups = 2, chunk = 128;  // chunk: HF's default
};

// The config a spec describes, with its config.json text (what save() writes).
Config tiny_config(const TinySpec& spec, c10::ScalarType dtype = c10::kFloat);
// A random model: normal(0, 0.02) weights, zero biases, unit norms, from spec.seed.
Model make_tiny(const TinySpec& spec, c10::Device device = c10::kCPU,
                c10::ScalarType dtype = c10::kFloat);

}  // namespace ltrun::model
