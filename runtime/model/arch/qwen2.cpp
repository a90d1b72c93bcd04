// runtime/model/arch/qwen2.cpp: Qwen2 and Qwen2.5 ("qwen2"): the Llama block with biases on q/k/v
// (always; config.json has no attention_bias key) and none on o_proj.
#include "runtime/model/arch.h"

namespace ltrun::model {
namespace {

void read(const ConfigReader& r, Config& c) {
  DecoderDefaults d;
  d.max_position_embeddings = 32768;
  read_decoder(r, c, d);
  if (r.opt_bool("use_sliding_window", false))
    r.fail_key("use_sliding_window", "sliding-window attention is not supported");
  c.qkv_bias = true;
}

void write(const Config& c, nlohmann::json& j) {
  write_decoder(c, j);
  j["use_sliding_window"] = false;
  j["max_window_layers"] = c.n_layers;
}

}  // namespace

const Arch kQwen2Arch = {"qwen2", "Qwen2ForCausalLM", read, write,
                             "model.embed_tokens.weight", "model.layers.{}.", "model.norm.weight",
                             "lm_head.weight", make_decoder_layer_at};

}  // namespace ltrun::model
