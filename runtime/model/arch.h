// runtime/model/arch.h (internal): the architecture registry and the contract of a layer.
//
// An architecture is a config reader and writer, its tensor names, and a factory of layers.
// A layer owns its tensors (each tagged with its part and init), runs its forward with the
// hook sites it produces, and keeps its own decode state. model.cpp is only the generic
// loop over layers (embeddings, capture, resume, intervene, lens, load/save/clone).
//
// Adding an architecture (a checklist):
//   1. a file runtime/model/arch/NAME.cpp with read() (hyper-parameters from config.json into
//      Config, errors naming the key) and write() (its own keys for a new config.json);
//   2. its layer kinds: reuse those below (make_decoder_layer, make_mamba2_layer, ...) or
//      add a Layer subclass in arch/ with slots(), forward() (calling hooks.at for each site
//      it lists in sites()) and new_state() for decoding;
//   3. an `extern const Arch kNAMEArch` line below and its entry in kArchs (config.cpp);
//   4. a tiny model in tests/model (tiny_spec.h) and HF parity in tests/parity/hf_parity.py.
#pragma once
#include <ATen/core/Tensor.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "runtime/model/blocks.h"
#include "runtime/model/config.h"
#include "runtime/model/model.h"

namespace ltrun::model {

// Typed access to one JSON object of a config file; errors name the file and the key path.
class ConfigReader {
 public:
  ConfigReader(const nlohmann::json& obj, std::string source, std::string prefix = "");

  // The value of `key`, or nullptr when it is absent or null (HF writes null for "unset").
  const nlohmann::json* get(const std::string& key) const;
  int64_t req_int(const std::string& key) const;
  int64_t opt_int(const std::string& key, int64_t fallback) const;
  double req_double(const std::string& key) const;
  double opt_double(const std::string& key, double fallback) const;
  bool opt_bool(const std::string& key, bool fallback) const;
  std::string opt_string(const std::string& key, const std::string& fallback) const;
  // A reader of the object under `key` (error if it is not an object).
  ConfigReader child(const std::string& key) const;
  [[noreturn]] void fail_key(const std::string& key, const std::string& why) const;
  const std::string& source() const { return source_; }
  const nlohmann::json& json() const { return obj_; }

 private:
  template <class T>
  T as(const std::string& key, const nlohmann::json& v, const char* what) const;

  const nlohmann::json& obj_;
  std::string source_, prefix_;
};

// HF defaults of the keys every decoder reads, where the architectures disagree.
struct DecoderDefaults {
  double rope_theta = 10000.0;
  int64_t max_position_embeddings = 2048;
  std::optional<int64_t> head_dim;  // unset: hidden_size / num_attention_heads
  // set: partial RoPE is read (config.rotary_dim), with this default; unset: an error
  std::optional<double> partial_rotary_factor;
};

// Reads the keys shared by the attention + SwiGLU decoders (sizes, RoPE, norms, tokens,
// dtype) into `c`; every layer is a "decoder".
void read_decoder(const ConfigReader& r, Config& c, const DecoderDefaults& d);
// Writes those keys of `c` into a new config.json object.
void write_decoder(const Config& c, nlohmann::json& j);
// bos/eos/pad of config.json or generation_config.json; eos may be a list.
void read_token_ids(const ConfigReader& r, Config& c);
// Errors naming the key unless v is positive (and finite).
void require_positive(const ConfigReader& r, const std::string& key, double v);

// config.json and generation_config.json texts for a model made here (make_tiny, save of a
// model that was not loaded from a folder).
std::string new_config_json(const Config& c);
std::string generation_config_json(const Config& c);

// --- layers ------------------------------------------------------------------------------

// How Model::init fills a parameter: HF's _init_weights (normal(0, 0.02) for linear and
// embedding weights, zero biases, unit norms; Mamba2's A_log = log(1..heads) and dt_bias =
// softplus^-1 of a log-uniform dt in [dt_min, dt_max]; Gated DeltaNet's A_log = log of a
// uniform draw in (0, 16)).
enum class Init { Normal, Zeros, Ones, ALog, DtBias, ALogUniform };

// One tensor of a layer: its name after the layer prefix, shape, part, init, decay.
struct Slot {
  std::string name;
  std::vector<int64_t> shape;
  ParamPart part;
  Init init;
  bool decay;
  at::Tensor* tensor;
};

// What one forward hands every layer.
struct LayerInput {
  explicit LayerInput(const Config& c) : config(c) {}
  // The same input under another layer config (a hybrid's layer reads its donor's); copies
  // every field below but config.
  LayerInput(const Config& c, const LayerInput& o)
      : config(c), rope(o.rope), positions(o.positions), visible(o.visible),
        token_mask(o.token_mask), past(o.past), capacity_hint(o.capacity_hint), write_at(o.write_at) {}
  const Config& config;
  const RopeTables* rope = nullptr;  // for attention with RoPE
  at::Tensor positions;   // [B, T] int64 positions of the new tokens (RoPE tables of a layer's own)
  at::Tensor visible;     // attention: visible_keys() [B, 1, T, S], undefined: plain causal
  at::Tensor token_mask;  // [B, T] bool of the new tokens (false: padding); undefined: none
  int64_t past = 0;       // positions the decode state already holds
  int64_t capacity_hint = 0;
  // A static cache's step (Model::decode_step, T = 1): int64 [B] on the device, the position
  // each row's new keys and values are written at (its own length; rows differ); `visible`
  // then covers all of the cache's positions and `past` is unused. Undefined otherwise.
  at::Tensor write_at;
};

// Where a layer reports its sites: at(site, x) captures and intervenes, returning x as
// changed by an intervention (the layer continues with the returned tensor).
class Hooks {
 public:
  virtual ~Hooks() = default;
  virtual at::Tensor at(Site site, at::Tensor x) = 0;
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual const std::string& kind() const = 0;
  // Sites produced besides resid_post, in the order they occur.
  virtual std::vector<Site> sites() const = 0;
  // Every tensor in HF's state_dict order (optional ones only when present).
  virtual void slots(std::vector<Slot>& out) = 0;
  // h [B, T, H] → the layer's output (the next residual). state: null without decoding;
  // else this layer's state (new_state() on the first call), read and extended.
  virtual at::Tensor forward(const at::Tensor& h, const LayerInput& in, LayerState* state,
                             Hooks& hooks) const = 0;
  // A fresh decode state; null when the layer keeps none (an MLP).
  virtual std::unique_ptr<LayerState> new_state() const = 0;
  // Lays out weights that one GEMM can read together (q/k/v, gate/up) as rows of one buffer,
  // the parameters becoming views of it under their own names (checkpoints, freeze specs and
  // the optimizer see nothing new). Model calls it whenever the tensors are set: load, init,
  // clone, to. A forward checks that the views still alias the buffer (a tensor replaced
  // since runs the separate GEMMs) and uses the buffer only where no weight needs a gradient.
  virtual void fuse() {}
};

// Rows of one buffer: *parts become its consecutive row blocks (requires_grad kept); returns
// the buffer, or an undefined tensor when a part is undefined or they differ in dtype, device
// or trailing shape.
at::Tensor fuse_rows(const std::vector<at::Tensor*>& parts);
// Whether `parts` are still the consecutive row blocks of `buf` (fuse_rows' views).
bool rows_of(const at::Tensor& buf, const std::vector<const at::Tensor*>& parts);

// The qwen3/qwen2/llama block: RMSNorm, attention (RoPE, q/k norm and biases as the config
// says), RMSNorm, SwiGLU MLP. Sites: mixer_out, resid_mid, mlp_out. A layer keeps a
// reference to `c`, which must outlive it (the model's own Config).
std::unique_ptr<Layer> make_decoder_layer(const Config& c);
// Arch::make_layer of the decoder-only architectures (every layer a "decoder").
std::unique_ptr<Layer> make_decoder_layer_at(const Config& c, int layer);
// nemotron_h's single-mixer blocks: RMSNorm then one of Mamba2 (mixer_out), attention
// without positions (mixer_out) or a ReLU² MLP (mlp_out), added to the residual.
std::unique_ptr<Layer> make_nemotron_layer(const Config& c, const std::string& kind);

// --- the registry ------------------------------------------------------------------------

struct Arch {
  const char* model_type;                             // config.json "model_type"
  const char* hf_class;                               // config.json "architectures" entry
  void (*read)(const ConfigReader& r, Config& c);     // hyper-parameters and feature flags
  void (*write)(const Config& c, nlohmann::json& j);  // the architecture's own keys
  // checkpoint names: embeddings, the prefix of layer l ("{}" = l), final norm, head
  const char* embed_name;
  const char* layer_prefix;
  const char* norm_name;
  const char* head_name;
  // layer l of a model with config c (c.layer_types[l] says which kind)
  std::unique_ptr<Layer> (*make_layer)(const Config& c, int layer);
  // Other names a checkpoint may store `name` under (HF renames it on save), tried after
  // `name` itself; null: none. A checkpoint tensor `ignore` accepts is skipped on load.
  std::vector<std::string> (*aliases)(const std::string& name) = nullptr;
  bool (*ignore)(const std::string& name) = nullptr;
};

extern const Arch kQwen3Arch, kQwen2Arch, kLlamaArch, kNemotronHArch;
extern const Arch kQwen35TextArch, kQwen35Arch;
extern const Arch kLtrunHybridArch;  // arch/hybrid.cpp: layers of several architectures

// The registry entry for `model_type`; error naming `source` and the known types.
const Arch& find_arch(const std::string& model_type, const std::string& source);

}  // namespace ltrun::model
