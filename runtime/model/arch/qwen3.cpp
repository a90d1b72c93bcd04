// runtime/model/arch/qwen3.cpp: Qwen3 ("qwen3"): the Llama block plus an RMSNorm over head_dim on
// q and k (q_norm, k_norm) before RoPE; q/k/v/o biases only with attention_bias.
#include "runtime/model/arch.h"

namespace ltrun::model {
namespace {

void read(const ConfigReader& r, Config& c) {
  // Qwen3Config defaults head_dim to 128, not hidden/heads: a config.json without it means 128.
  DecoderDefaults d;
  d.max_position_embeddings = 32768;
  d.head_dim = 128;
  read_decoder(r, c, d);
  if (r.opt_bool("use_sliding_window", false))
    r.fail_key("use_sliding_window", "sliding-window attention is not supported");
  c.qk_norm = true;
  c.qkv_bias = c.o_bias = r.opt_bool("attention_bias", false);
}

void write(const Config& c, nlohmann::json& j) {
  write_decoder(c, j);
  j["attention_bias"] = c.qkv_bias;
  j["use_sliding_window"] = false;
  j["max_window_layers"] = c.n_layers;
}

}  // namespace

const Arch kQwen3Arch = {"qwen3", "Qwen3ForCausalLM", read, write,
                             "model.embed_tokens.weight", "model.layers.{}.", "model.norm.weight",
                             "lm_head.weight", make_decoder_layer_at};

}  // namespace ltrun::model
