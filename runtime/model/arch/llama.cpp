// runtime/model/arch/llama.cpp: Llama 2/3 ("llama"): the base block; q/k/v/o biases with
// attention_bias, gate/up/down biases with mlp_bias (both off in Meta's checkpoints).
#include "runtime/model/arch.h"

namespace ltrun::model {
namespace {

void read(const ConfigReader& r, Config& c) {
  read_decoder(r, c, DecoderDefaults{});  // LlamaConfig: max_position_embeddings 2048
  c.qkv_bias = c.o_bias = r.opt_bool("attention_bias", false);
  c.mlp_bias = r.opt_bool("mlp_bias", false);
}

void write(const Config& c, nlohmann::json& j) {
  write_decoder(c, j);
  j["attention_bias"] = c.qkv_bias;
  j["mlp_bias"] = c.mlp_bias;
}

}  // namespace

const Arch kLlamaArch = {"llama", "LlamaForCausalLM", read, write,
                             "model.embed_tokens.weight", "model.layers.{}.", "model.norm.weight",
                             "lm_head.weight", make_decoder_layer_at};

}  // namespace ltrun::model
