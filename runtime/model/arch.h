// runtime/model/arch.h (internal): what an architecture file provides to the registry, and
// the config.json helpers those files share.
//
// qwen3, qwen2 and llama share one decoder block (blocks.h) and one tensor naming (HF's);
// they differ in hyper-parameter defaults and in feature flags of Config (q/k norm, biases).
// So an architecture is a config reader plus a config writer. To add one: a file like
// qwen3.cpp, an entry in kArchs (config.cpp), and a tiny model in the tests.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "runtime/model/config.h"

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
};

// Reads the keys shared by all decoders (sizes, RoPE, norms, tokens, dtype) into `c`.
void read_decoder(const ConfigReader& r, Config& c, const DecoderDefaults& d);
// Writes those keys of `c` into a new config.json object.
void write_decoder(const Config& c, nlohmann::json& j);

// config.json and generation_config.json texts for a model made here (make_tiny, save of a
// model that was not loaded from a folder).
std::string new_config_json(const Config& c);
std::string generation_config_json(const Config& c);

struct Arch {
  const char* model_type;                             // config.json "model_type"
  const char* hf_class;                               // config.json "architectures" entry
  void (*read)(const ConfigReader& r, Config& c);     // hyper-parameters and feature flags
  void (*write)(const Config& c, nlohmann::json& j);  // the architecture's own keys
};

extern const Arch kQwen3Arch, kQwen2Arch, kLlamaArch;

// The registry entry for `model_type`; error naming `source` and the known types.
const Arch& find_arch(const std::string& model_type, const std::string& source);

}  // namespace ltrun::model
