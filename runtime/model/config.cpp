// runtime/model/config.cpp: config.json reading and writing shared by the architectures, and
// the architecture registry.
#include <fmt/ranges.h>

#include <cmath>
#include <filesystem>
#include <tuple>

#include "runtime/core/env.h"
#include "runtime/core/json_depth.h"
#include "runtime/core/error.h"
#include "runtime/io/json_file.h"
#include "runtime/model/arch.h"

namespace ltrun::model {

// The registry: one line per architecture file.
static const Arch* const kArchs[] = {&kQwen3Arch, &kQwen2Arch, &kLlamaArch, &kNemotronHArch,
                                     &kQwen35TextArch, &kQwen35Arch, &kLtrunHybridArch};

std::vector<std::string> known_model_types() {
  std::vector<std::string> out;
  for (const Arch* a : kArchs) out.emplace_back(a->model_type);
  return out;
}

const Arch& find_arch(const std::string& model_type, const std::string& source) {
  for (const Arch* a : kArchs)
    if (model_type == a->model_type) return *a;
  fail("{}: unknown model_type \"{}\" (known: {})", source, model_type,
       fmt::join(known_model_types(), ", "));
}

// --- ConfigReader ------------------------------------------------------------------------

ConfigReader::ConfigReader(const nlohmann::json& obj, std::string source, std::string prefix)
    : obj_(obj), source_(std::move(source)), prefix_(std::move(prefix)) {}

void ConfigReader::fail_key(const std::string& key, const std::string& why) const {
  fail("{}: \"{}{}\": {}", source_, prefix_, key, why);
}

const nlohmann::json* ConfigReader::get(const std::string& key) const {
  auto it = obj_.find(key);
  return it == obj_.end() || it->is_null() ? nullptr : &*it;
}

template <class T>
T ConfigReader::as(const std::string& key, const nlohmann::json& v, const char* what) const {
  const bool ok = std::is_same_v<T, bool>       ? v.is_boolean()
                  : std::is_integral_v<T>       ? v.is_number_integer()
                  : std::is_floating_point_v<T> ? v.is_number()
                                                : v.is_string();
  if (!ok) fail_key(key, fmt::format("expected {}, found {} {}", what, v.type_name(), v.dump()));
  return v.get<T>();
}

int64_t ConfigReader::req_int(const std::string& key) const {
  const nlohmann::json* v = get(key);
  if (!v) fail_key(key, "missing required key");
  return as<int64_t>(key, *v, "an integer");
}

int64_t ConfigReader::opt_int(const std::string& key, int64_t fallback) const {
  const nlohmann::json* v = get(key);
  return v ? as<int64_t>(key, *v, "an integer") : fallback;
}

double ConfigReader::req_double(const std::string& key) const {
  const nlohmann::json* v = get(key);
  if (!v) fail_key(key, "missing required key");
  return as<double>(key, *v, "a number");
}

double ConfigReader::opt_double(const std::string& key, double fallback) const {
  const nlohmann::json* v = get(key);
  return v ? as<double>(key, *v, "a number") : fallback;
}

bool ConfigReader::opt_bool(const std::string& key, bool fallback) const {
  const nlohmann::json* v = get(key);
  return v ? as<bool>(key, *v, "true or false") : fallback;
}

std::string ConfigReader::opt_string(const std::string& key, const std::string& fallback) const {
  const nlohmann::json* v = get(key);
  return v ? as<std::string>(key, *v, "a string") : fallback;
}

ConfigReader ConfigReader::child(const std::string& key) const {
  const nlohmann::json* v = get(key);
  if (!v || !v->is_object()) fail_key(key, "expected an object");
  return ConfigReader(*v, source_, prefix_ + key + ".");
}

// --- shared keys -------------------------------------------------------------------------

// Values that would not fail loudly later but give NaN or infinite logits (a zero eps under
// a square root, log(theta) = 0, a zero RoPE factor divided by, ...): checked here so that
// the error names config.json and the key.
void require_positive(const ConfigReader& r, const std::string& key, double v) {
  if (!(std::isfinite(v) && v > 0)) r.fail_key(key, fmt::format("must be a positive finite number, found {}", v));
}

namespace {

void require_nonnegative(const ConfigReader& r, const std::string& key, double v) {
  if (!(std::isfinite(v) && v >= 0)) r.fail_key(key, fmt::format("must be a finite number >= 0, found {}", v));
}

// rope_scaling as transformers' modeling_rope_utils reads it ("type" is its older spelling).
RopeScaling read_rope_scaling(const ConfigReader& r, bool partial_ok) {
  RopeScaling s;
  s.type = r.opt_string("rope_type", r.opt_string("type", "default"));
  if (!partial_ok && r.opt_double("partial_rotary_factor", 1.0) != 1.0)
    r.fail_key("partial_rotary_factor", "partial rotary embeddings are not supported");
  if (s.type == "default") return s;
  if (s.type == "linear") {
    s.factor = r.req_double("factor");
    require_positive(r, "factor", *s.factor);
  } else if (s.type == "llama3") {
    s.factor = r.req_double("factor");
    require_positive(r, "factor", *s.factor);
    s.low_freq_factor = r.req_double("low_freq_factor");
    require_positive(r, "low_freq_factor", s.low_freq_factor);
    s.high_freq_factor = r.req_double("high_freq_factor");
    require_positive(r, "high_freq_factor", s.high_freq_factor);
    if (s.high_freq_factor == s.low_freq_factor)  // the smoothing divides by their difference
      r.fail_key("high_freq_factor", fmt::format("must differ from low_freq_factor, both are {}", s.low_freq_factor));
    s.original_max_position_embeddings = r.req_int("original_max_position_embeddings");
    require_positive(r, "original_max_position_embeddings", double(s.original_max_position_embeddings));
  } else if (s.type == "yarn") {
    if (r.get("factor")) {
      s.factor = r.req_double("factor");
      require_positive(r, "factor", *s.factor);
    }
    s.original_max_position_embeddings = r.opt_int("original_max_position_embeddings", 0);
    require_nonnegative(r, "original_max_position_embeddings", double(s.original_max_position_embeddings));
    if (r.get("attention_factor")) {
      s.attention_factor = r.req_double("attention_factor");
      require_positive(r, "attention_factor", *s.attention_factor);
    }
    // mscale >= 0 keeps 0.1 * mscale * ln(factor) + 1 (a divisor) away from 0
    if (r.get("mscale")) require_nonnegative(r, "mscale", *(s.mscale = r.req_double("mscale")));
    if (r.get("mscale_all_dim"))
      require_nonnegative(r, "mscale_all_dim", *(s.mscale_all_dim = r.req_double("mscale_all_dim")));
    // HF: `get("beta_fast") or 32`, so 0 also means the default; a negative count of
    // rotations goes into a logarithm
    if (double b = r.opt_double("beta_fast", 0)) s.beta_fast = b;
    if (double b = r.opt_double("beta_slow", 0)) s.beta_slow = b;
    require_positive(r, "beta_fast", s.beta_fast);
    require_positive(r, "beta_slow", s.beta_slow);
    s.truncate = r.opt_bool("truncate", true);
  } else {
    r.fail_key("rope_type", fmt::format("unsupported RoPE type \"{}\" (supported: default, "
                                        "linear, llama3, yarn)",
                                        s.type));
  }
  return s;
}

// RoPE frequencies are theta^(-2i/d): theta <= 1 makes them grow instead of fall, and yarn
// divides by log(theta).
void require_rope_theta(const ConfigReader& r, double theta) {
  if (!(std::isfinite(theta) && theta > 1)) r.fail_key("rope_theta", fmt::format("must be a finite number > 1, found {}", theta));
}

}  // namespace

void read_token_ids(const ConfigReader& r, Config& c) {
  if (r.get("bos_token_id")) c.bos_token_id = r.req_int("bos_token_id");
  if (r.get("pad_token_id")) c.pad_token_id = r.req_int("pad_token_id");
  if (const nlohmann::json* eos = r.get("eos_token_id")) {
    c.eos_token_ids.clear();
    if (!eos->is_array()) {
      c.eos_token_ids.push_back(r.req_int("eos_token_id"));
    } else {
      for (const auto& e : *eos) {
        if (!e.is_number_integer())
          r.fail_key("eos_token_id",
                     "expected an integer or a list of integers, found " + eos->dump());
        c.eos_token_ids.push_back(e.get<int64_t>());
      }
    }
  }
}

void read_decoder(const ConfigReader& r, Config& c, const DecoderDefaults& d) {
  c.vocab_size = r.req_int("vocab_size");
  c.hidden_size = r.req_int("hidden_size");
  c.intermediate_size = r.req_int("intermediate_size");
  c.n_layers = r.req_int("num_hidden_layers");
  c.n_heads = r.req_int("num_attention_heads");
  for (auto [key, v] : {std::pair<const char*, int64_t>{"vocab_size", c.vocab_size},
                        {"hidden_size", c.hidden_size},
                        {"intermediate_size", c.intermediate_size},
                        {"num_hidden_layers", c.n_layers},
                        {"num_attention_heads", c.n_heads}})
    if (v <= 0) r.fail_key(key, fmt::format("must be positive, found {}", v));
  c.n_kv_heads = r.opt_int("num_key_value_heads", c.n_heads);
  if (c.n_kv_heads <= 0 || c.n_heads % c.n_kv_heads != 0)
    r.fail_key("num_key_value_heads",
               fmt::format("{} does not divide num_attention_heads {}", c.n_kv_heads, c.n_heads));
  if (!r.get("head_dim") && !d.head_dim && c.hidden_size % c.n_heads != 0)
    r.fail_key("head_dim", fmt::format("missing, and hidden_size {} is not a multiple of "
                                       "num_attention_heads {}",
                                       c.hidden_size, c.n_heads));
  c.head_dim = r.opt_int("head_dim", d.head_dim.value_or(c.hidden_size / c.n_heads));
  if (c.head_dim <= 0 || c.head_dim % 2 != 0)
    r.fail_key("head_dim",
               fmt::format("must be positive and even (RoPE rotates pairs), found {}", c.head_dim));
  c.max_position_embeddings = r.opt_int("max_position_embeddings", d.max_position_embeddings);
  // Bounds far above any released model (and below where sizes overflow): a typo such as
  // 2^31 layers or a 2^40 head_dim is an error naming the key, not a bad_alloc in LibTorch.
  for (auto [key, v, max] : {std::tuple<const char*, int64_t, int64_t>{"vocab_size", c.vocab_size, int64_t(1) << 24},
                             {"hidden_size", c.hidden_size, int64_t(1) << 18},
                             {"intermediate_size", c.intermediate_size, int64_t(1) << 20},
                             {"num_hidden_layers", c.n_layers, int64_t(1) << 12},
                             {"num_attention_heads", c.n_heads, int64_t(1) << 12},
                             {"num_key_value_heads", c.n_kv_heads, int64_t(1) << 12},
                             {"head_dim", c.head_dim, int64_t(1) << 14},
                             {"max_position_embeddings", c.max_position_embeddings, int64_t(1) << 30}})
    if (v > max) r.fail_key(key, fmt::format("{} is beyond the supported maximum {}", v, max));
  require_positive(r, "max_position_embeddings", double(c.max_position_embeddings));
  // Each bound alone still allows products no machine holds: count the parameters (in
  // double, where nothing overflows) before anything is allocated.
  const double h = double(c.hidden_size), qd = double(c.n_heads) * double(c.head_dim),
               kvd = double(c.n_kv_heads) * double(c.head_dim);
  const double per_layer = h * qd * 2 + h * kvd * 2 + 3 * h * double(c.intermediate_size);
  const double params = double(c.vocab_size) * h * 2 + double(c.n_layers) * per_layer;
  constexpr double kMaxParams = 1e12;
  if (params > kMaxParams)
    fail("{}: these sizes make {:.3g} parameters (vocab_size {}, hidden_size {}, intermediate_size {}, "
         "num_hidden_layers {}, num_attention_heads {} x head_dim {}): beyond the supported {:.0e}",
         r.source(), params, c.vocab_size, c.hidden_size, c.intermediate_size, c.n_layers, c.n_heads,
         c.head_dim, kMaxParams);
  c.layer_types.assign(size_t(c.n_layers), "decoder");  // n_layers checked above
  c.rms_norm_eps = r.opt_double("rms_norm_eps", 1e-6);
  require_positive(r, "rms_norm_eps", c.rms_norm_eps);
  const std::string act = r.opt_string("hidden_act", "silu");
  if (act != "silu")
    r.fail_key("hidden_act", "only \"silu\" (SwiGLU) is supported, found \"" + act + "\"");
  c.tie_word_embeddings = r.opt_bool("tie_word_embeddings", false);
  // transformers 5 writes "dtype" where 4.x wrote "torch_dtype"
  c.torch_dtype = r.opt_string("torch_dtype", r.opt_string("dtype", ""));
  read_token_ids(r, c);

  // transformers 5 keeps theta and scaling together in rope_parameters
  if (r.get("rope_parameters")) {
    ConfigReader rp = r.child("rope_parameters");
    c.rope_theta = rp.opt_double("rope_theta", d.rope_theta);
    require_rope_theta(rp, c.rope_theta);
    c.rope_scaling = read_rope_scaling(rp, d.partial_rotary_factor.has_value());
  } else {
    c.rope_theta = r.opt_double("rope_theta", d.rope_theta);
    require_rope_theta(r, c.rope_theta);
    if (r.get("rope_scaling"))
      c.rope_scaling = read_rope_scaling(r.child("rope_scaling"), d.partial_rotary_factor.has_value());
  }
  if (d.partial_rotary_factor) {  // rope_parameters' value, else the top level's, else the default
    const ConfigReader& pr = r.get("rope_parameters") && r.child("rope_parameters").get("partial_rotary_factor")
                                 ? r.child("rope_parameters") : r;
    const double f = pr.opt_double("partial_rotary_factor", *d.partial_rotary_factor);
    c.rotary_dim = int64_t(double(c.head_dim) * f);  // HF: int(head_dim * partial_rotary_factor)
    if (!(f > 0 && f <= 1) || c.rotary_dim <= 0 || c.rotary_dim % 2 != 0)
      pr.fail_key("partial_rotary_factor",
                  fmt::format("{} x head_dim {} must give a positive even number of rotated dims", f, c.head_dim));
  }
}

void write_decoder(const Config& c, nlohmann::json& j) {
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.n_layers;
  j["num_attention_heads"] = c.n_heads;
  j["num_key_value_heads"] = c.n_kv_heads;
  j["head_dim"] = c.head_dim;
  j["hidden_act"] = "silu";
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope_theta;
  const RopeScaling& s = c.rope_scaling;
  if (s.type == "default") {
    j["rope_scaling"] = nullptr;
  } else {
    nlohmann::json rs = {{"rope_type", s.type}};
    if (s.factor) rs["factor"] = *s.factor;
    if (s.type == "llama3") {
      rs["low_freq_factor"] = s.low_freq_factor;
      rs["high_freq_factor"] = s.high_freq_factor;
    }
    if (s.original_max_position_embeddings)
      rs["original_max_position_embeddings"] = s.original_max_position_embeddings;
    if (s.type == "yarn") {
      if (s.attention_factor) rs["attention_factor"] = *s.attention_factor;
      if (s.mscale) rs["mscale"] = *s.mscale;
      if (s.mscale_all_dim) rs["mscale_all_dim"] = *s.mscale_all_dim;
      rs["beta_fast"] = s.beta_fast;
      rs["beta_slow"] = s.beta_slow;
      rs["truncate"] = s.truncate;
    }
    j["rope_scaling"] = rs;
  }
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["initializer_range"] = 0.02;
  j["attention_dropout"] = 0.0;
  j["use_cache"] = true;
  j["bos_token_id"] = c.bos_token_id ? nlohmann::json(*c.bos_token_id) : nlohmann::json(nullptr);
  if (c.eos_token_ids.size() == 1)
    j["eos_token_id"] = c.eos_token_ids[0];
  else if (!c.eos_token_ids.empty())
    j["eos_token_id"] = c.eos_token_ids;
  else
    j["eos_token_id"] = nullptr;
  if (c.pad_token_id) j["pad_token_id"] = *c.pad_token_id;
  j["torch_dtype"] = c.torch_dtype;
}

std::string new_config_json(const Config& c) {
  const Arch& a = find_arch(c.model_type, "new model");
  nlohmann::json j = {{"architectures", {a.hf_class}}, {"model_type", c.model_type}};
  a.write(c, j);
  return j.dump(2) + "\n";
}

std::string generation_config_json(const Config& c) {
  nlohmann::json j = {{"_from_model_config", true}};
  if (c.bos_token_id) j["bos_token_id"] = *c.bos_token_id;
  if (c.eos_token_ids.size() == 1)
    j["eos_token_id"] = c.eos_token_ids[0];
  else if (!c.eos_token_ids.empty())
    j["eos_token_id"] = c.eos_token_ids;
  if (c.pad_token_id) j["pad_token_id"] = *c.pad_token_id;
  return j.dump(2) + "\n";
}

// --- entry points ------------------------------------------------------------------------

Config parse_config(const std::string& json, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json, json_depth_limit(source));
  } catch (const nlohmann::json::exception& e) {
    fail("{}: invalid JSON: {}", source, e.what());
  }
  LT_CHECK(j.is_object(), "{}: expected a JSON object, found {}", source, j.type_name());
  ConfigReader r(j, source);
  Config c;
  c.model_type = r.opt_string("model_type", "");
  if (c.model_type.empty()) r.fail_key("model_type", "missing required key");
  find_arch(c.model_type, source).read(r, c);
  c.source = source;
  c.json = json;
  return c;
}

Config read_config(const std::string& dir) {
  namespace fs = std::filesystem;
  LT_CHECK(fs::exists(dir), "{}: no such folder", dir);
  // a file inside the folder (config.json, a .safetensors file) stands for its folder
  const fs::path base = fs::is_directory(dir) ? fs::path(dir) : fs::path(dir).parent_path();
  const std::string path = (base / "config.json").string();
  LT_CHECK(fs::exists(path), "{}: no config.json (is this a Hugging Face model folder?)", dir);
  Config c = parse_config(read_file(path), path);
  const std::string gen_path = (base / "generation_config.json").string();
  if (fs::exists(gen_path)) {
    c.generation_json = read_file(gen_path);
    const nlohmann::json g = io::read_json_file(gen_path);
    read_token_ids(ConfigReader(g, gen_path), c);
  }
  return c;
}

}  // namespace ltrun::model
