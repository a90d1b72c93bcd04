// runtime/model/arch/qwen3_5.cpp: Qwen3.5's text model ("qwen3_5_text", HF Qwen3_5ForCausalLM),
// dense: pre-norm blocks whose mixer is Gated DeltaNet ("linear_attention") or gated
// attention ("full_attention": q_proj also yields a per-head output gate, sigmoid-applied
// before o_proj; q/k RMSNorm; RoPE on the first partial_rotary_factor of each head), each
// followed by a SwiGLU MLP. Every RMSNorm but Gated DeltaNet's gated one multiplies by
// 1 + weight. layer_types, or full_attention_interval (default 4: every fourth layer full).
// Also the released checkpoints' composite "qwen3_5" (text_config, model.language_model.*),
// whose text model alone is read (the vision tower and MTP heads are skipped).
#include <ATen/ATen.h>
#include <fmt/format.h>

#include "runtime/model/arch.h"
#include "runtime/model/arch/decoder.h"
#include "runtime/model/arch/gated_deltanet.h"

namespace ltrun::model {
namespace {

class Qwen35Layer final : public Layer {
 public:
  Qwen35Layer(const Config& c, std::string kind) : c_(c), kind_(std::move(kind)) {}
  const std::string& kind() const override { return kind_; }
  std::vector<Site> sites() const override { return {Site::MixerOut, Site::ResidMid, Site::MlpOut}; }
  void slots(std::vector<Slot>& out) override {
    const int64_t H = c_.hidden_size, I = c_.intermediate_size, hd = c_.head_dim;
    if (kind_ == "linear_attention") {
      gdn_.slots(c_, out, "linear_attn.");
    } else {
      auto linear = [&](const char* name, at::Tensor& w, at::Tensor& b, int64_t o, int64_t i) {
        out.push_back({std::string("self_attn.") + name + ".weight", {o, i}, ParamPart::Mixer, Init::Normal, true, &w});
        if (c_.qkv_bias)
          out.push_back({std::string("self_attn.") + name + ".bias", {o}, ParamPart::Mixer, Init::Zeros, false, &b});
      };
      linear("q_proj", q_, q_bias_, 2 * c_.n_heads * hd, H);  // per head: query, then gate
      linear("k_proj", k_, k_bias_, c_.n_kv_heads * hd, H);
      linear("v_proj", v_, v_bias_, c_.n_kv_heads * hd, H);
      linear("o_proj", o_, o_bias_, H, c_.n_heads * hd);
      out.push_back({"self_attn.q_norm.weight", {hd}, ParamPart::Mixer, Init::Zeros, false, &q_norm_});
      out.push_back({"self_attn.k_norm.weight", {hd}, ParamPart::Mixer, Init::Zeros, false, &k_norm_});
    }
    for (auto [name, w, o, i] : {std::tuple<const char*, at::Tensor*, int64_t, int64_t>{"gate_proj", &gate_, I, H},
                                 {"up_proj", &up_, I, H}, {"down_proj", &down_, H, I}})
      out.push_back({std::string("mlp.") + name + ".weight", {o, i}, ParamPart::Mlp, Init::Normal, true, w});
    out.push_back({"input_layernorm.weight", {H}, ParamPart::Norm, Init::Zeros, false, &input_norm_});
    out.push_back({"post_attention_layernorm.weight", {H}, ParamPart::Norm, Init::Zeros, false, &post_norm_});
  }
  at::Tensor forward(const at::Tensor& h, const LayerInput& in, LayerState* state,
                     Hooks& hooks) const override {
    const double eps = c_.rms_norm_eps;
    const at::Tensor x = rms_norm_offset(h, input_norm_, eps);
    const at::Tensor mixed =
        kind_ == "linear_attention"
            ? gated_deltanet_mixer(x, gdn_, c_.gdn, eps, in.token_mask, static_cast<GatedDeltaNetState*>(state))
            : attention_forward(x, in, state);
    const at::Tensor h2 = hooks.at(Site::ResidMid, h + hooks.at(Site::MixerOut, mixed));
    return h2 + hooks.at(Site::MlpOut, swiglu(rms_norm_offset(h2, post_norm_, eps), gate_, up_, down_));
  }
  std::unique_ptr<LayerState> new_state() const override {
    if (kind_ == "linear_attention") return std::make_unique<GatedDeltaNetState>();
    return std::make_unique<KVState>();
  }

 private:
  at::Tensor attention_forward(const at::Tensor& x, const LayerInput& in, LayerState* state) const {
    const int64_t B = x.size(0), T = x.size(1), hd = c_.head_dim, nh = c_.n_heads, rd = c_.rotary_dim;
    const double eps = c_.rms_norm_eps;
    const at::Tensor qg = at::linear(x, q_, q_bias_).view({B, T, nh, 2 * hd});
    const at::Tensor gate = qg.narrow(-1, hd, hd).reshape({B, T, nh * hd});
    at::Tensor qh = rms_norm_offset(qg.narrow(-1, 0, hd), q_norm_, eps).transpose(1, 2);
    at::Tensor kh = rms_norm_offset(at::linear(x, k_, k_bias_).view({B, T, c_.n_kv_heads, hd}), k_norm_, eps)
                        .transpose(1, 2);
    at::Tensor vh = at::linear(x, v_, v_bias_).view({B, T, c_.n_kv_heads, hd}).transpose(1, 2);
    auto rope = [&](const at::Tensor& t) {  // the first rotary_dim dims rotate, the rest pass
      return rd == hd ? apply_rope(t, *in.rope)
                      : at::cat({apply_rope(t.narrow(-1, 0, rd), *in.rope), t.narrow(-1, rd, hd - rd)}, -1);
    };
    qh = rope(qh);
    kh = rope(kh);
    if (state) std::tie(kh, vh) = static_cast<KVState*>(state)->put(kh, vh, in);
    const at::Tensor a = attention(qh, kh, vh, in.visible).transpose(1, 2).reshape({B, T, nh * hd});
    return at::linear(a * at::sigmoid(gate), o_, o_bias_);
  }

  const Config& c_;
  std::string kind_;
  GatedDeltaNetWeights gdn_;
  at::Tensor q_, k_, v_, o_, q_bias_, k_bias_, v_bias_, o_bias_, q_norm_, k_norm_;
  at::Tensor gate_, up_, down_, input_norm_, post_norm_;
};

std::unique_ptr<Layer> make_layer(const Config& c, int layer) {
  return std::make_unique<Qwen35Layer>(c, c.layer_types.at(size_t(layer)));
}

void read(const ConfigReader& r, Config& c) {
  DecoderDefaults d;  // Qwen3_5TextConfig's defaults
  d.max_position_embeddings = 32768;
  d.head_dim = 256;
  d.partial_rotary_factor = 0.25;
  read_decoder(r, c, d);
  c.qk_norm = true;
  c.qkv_bias = c.o_bias = r.opt_bool("attention_bias", false);
  c.norm_offset = true;
  if (const nlohmann::json* types = r.get("layer_types")) {
    if (!types->is_array() || types->size() != size_t(c.n_layers))
      r.fail_key("layer_types", fmt::format("expected a list of {} layer kinds (num_hidden_layers)", c.n_layers));
    c.layer_types.clear();
    for (const auto& t : *types) {
      if (!t.is_string() || (t != "linear_attention" && t != "full_attention"))
        r.fail_key("layer_types", "expected \"linear_attention\" or \"full_attention\", found " + t.dump());
      c.layer_types.push_back(t.get<std::string>());
    }
  } else {
    const int64_t every = r.opt_int("full_attention_interval", 4);
    if (every <= 0) r.fail_key("full_attention_interval", fmt::format("must be positive, found {}", every));
    for (int64_t l = 0; l < c.n_layers; ++l)
      c.layer_types[size_t(l)] = (l + 1) % every ? "linear_attention" : "full_attention";
  }
  GatedDeltaNetConfig& m = c.gdn;
  m.k_heads = r.opt_int("linear_num_key_heads", 16);
  m.v_heads = r.opt_int("linear_num_value_heads", 32);
  m.k_head_dim = r.opt_int("linear_key_head_dim", 128);
  m.v_head_dim = r.opt_int("linear_value_head_dim", 128);
  m.conv_kernel = r.opt_int("linear_conv_kernel_dim", 4);
  for (auto [key, v] : {std::pair<const char*, int64_t>{"linear_num_key_heads", m.k_heads},
                        {"linear_num_value_heads", m.v_heads}, {"linear_key_head_dim", m.k_head_dim},
                        {"linear_value_head_dim", m.v_head_dim}, {"linear_conv_kernel_dim", m.conv_kernel}})
    if (v <= 0 || v > (int64_t(1) << 14)) r.fail_key(key, fmt::format("must be in 1..2^14, found {}", v));
  if (m.v_heads % m.k_heads != 0)
    r.fail_key("linear_num_value_heads", fmt::format("{} is not a multiple of linear_num_key_heads {}", m.v_heads, m.k_heads));
}

void write(const Config& c, nlohmann::json& j) {
  write_decoder(c, j);
  const double partial = double(c.rotary_dim) / double(c.head_dim);
  j["partial_rotary_factor"] = partial;
  if (c.rope_scaling.type == "default") {  // transformers 5's spelling
    j.erase("rope_theta");
    j.erase("rope_scaling");
    j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", c.rope_theta}, {"partial_rotary_factor", partial}};
  }
  j["attention_bias"] = c.qkv_bias;
  j["layer_types"] = c.layer_types;
  j["linear_num_key_heads"] = c.gdn.k_heads;
  j["linear_num_value_heads"] = c.gdn.v_heads;
  j["linear_key_head_dim"] = c.gdn.k_head_dim;
  j["linear_value_head_dim"] = c.gdn.v_head_dim;
  j["linear_conv_kernel_dim"] = c.gdn.conv_kernel;
}

// Qwen3.5's released (multimodal) checkpoints hold the text model under
// model.language_model.*, which HF's Qwen3_5ForCausalLM reads by dropping "language_model."
std::vector<std::string> aliases(const std::string& name) {
  if (name.rfind("model.", 0) != 0) return {};
  return {"model.language_model." + name.substr(6)};
}

// multi-token-prediction heads and the vision tower, which HF's text model skips as well
bool ignore(const std::string& name) {
  return name.rfind("mtp.", 0) == 0 || name.rfind("model.visual.", 0) == 0;
}

// The released checkpoints' composite config ("qwen3_5", Qwen3_5ForConditionalGeneration):
// the text model's keys under text_config; only the text model is read (text-only
// positions, where the multimodal RoPE sections all see the same position, are plain RoPE).
void read_composite(const ConfigReader& r, Config& c) {
  read(r.child("text_config"), c);
  c.tie_word_embeddings = r.opt_bool("tie_word_embeddings", c.tie_word_embeddings);
  read_token_ids(r, c);
}

void write_composite(const Config& c, nlohmann::json& j) {
  nlohmann::json text = {{"model_type", "qwen3_5_text"}};
  write(c, text);
  j["text_config"] = text;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
}

}  // namespace

const Arch kQwen35Arch = {"qwen3_5", "Qwen3_5ForConditionalGeneration", read_composite, write_composite,
                          "model.language_model.embed_tokens.weight", "model.language_model.layers.{}.",
                          "model.language_model.norm.weight", "lm_head.weight", make_layer, nullptr, ignore};

const Arch kQwen35TextArch = {"qwen3_5_text", "Qwen3_5ForCausalLM", read, write,
                              "model.embed_tokens.weight", "model.layers.{}.", "model.norm.weight",
                              "lm_head.weight", make_layer, aliases, ignore};

}  // namespace ltrun::model
