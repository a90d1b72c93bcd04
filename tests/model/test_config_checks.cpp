// tests/model/test_config_checks.cpp: config.json values that used to load and then give
// NaN logits or a bad_alloc (issue 12) are errors naming the file and the key.
#include <cmath>
#include <nlohmann/json.hpp>

#include "model_test_util.h"
#include "runtime/model/config.h"

using namespace ltrun::model;

namespace {

nlohmann::json base(const std::string& type = "qwen3") {
  return {{"model_type", type},       {"vocab_size", 100},      {"hidden_size", 64},
          {"intermediate_size", 128}, {"num_hidden_layers", 2}, {"num_attention_heads", 4}};
}

Config parse(const nlohmann::json& j) { return parse_config(j.dump(), "/m/config.json"); }

void bad(const nlohmann::json& j, const std::string& key, const std::string& why) {
  INFO(j.dump());
  model_test::require_error([&] { parse(j); }, {"/m/config.json", "\"" + key + "\"", why});
}

}  // namespace

TEST_CASE("config.json: values that give NaN logits are refused", "[model][config]") {
  for (double eps : {0.0, -1e-6, -0.0}) {  // (JSON has no NaN: dump() writes null, which means unset)
    nlohmann::json j = base();
    j["rms_norm_eps"] = eps;
    bad(j, "rms_norm_eps", "positive");
  }
  for (double theta : {0.0, -10000.0, 1.0}) {
    nlohmann::json j = base();
    j["rope_theta"] = theta;
    bad(j, "rope_theta", "> 1");
    nlohmann::json v5 = base();  // transformers 5 spelling
    v5["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", theta}};
    bad(v5, "rope_parameters.rope_theta", "> 1");
  }
  nlohmann::json j = base("llama");
  j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 0.0}};
  bad(j, "rope_scaling.factor", "positive");
  const nlohmann::json llama3 = {{"rope_type", "llama3"},
                                 {"factor", 8.0},
                                 {"low_freq_factor", 1.0},
                                 {"high_freq_factor", 4.0},
                                 {"original_max_position_embeddings", 8192}};
  j["rope_scaling"] = llama3;
  CHECK(parse(j).rope_scaling.type == "llama3");  // the valid one still loads
  for (const char* key : {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}) {
    j["rope_scaling"] = llama3;
    j["rope_scaling"][key] = 0;
    bad(j, std::string("rope_scaling.") + key, "positive");
  }
  j["rope_scaling"] = llama3;
  j["rope_scaling"]["high_freq_factor"] = 1.0;
  bad(j, "rope_scaling.high_freq_factor", "must differ");

  const nlohmann::json yarn = {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
  j = base();
  j["rope_scaling"] = yarn;
  CHECK(parse(j).rope_scaling.type == "yarn");
  j["rope_scaling"]["beta_fast"] = 0;  // HF: 0 means the default 32
  CHECK(parse(j).rope_scaling.beta_fast == 32);
  for (auto [key, v, why] : {std::tuple<const char*, nlohmann::json, const char*>{"factor", 0.0, "positive"},
                             {"beta_fast", -1.0, "positive"},
                             {"beta_slow", -0.5, "positive"},
                             {"attention_factor", 0.0, "positive"},
                             {"mscale", -1.0, ">= 0"},
                             {"mscale_all_dim", -0.7, ">= 0"},
                             {"original_max_position_embeddings", -1, ">= 0"}}) {
    j["rope_scaling"] = yarn;
    j["rope_scaling"][key] = v;
    bad(j, std::string("rope_scaling.") + key, why);
  }
  j = base();
  j["max_position_embeddings"] = 0;  // yarn's factor defaults to max_position / original
  bad(j, "max_position_embeddings", "positive");
}

TEST_CASE("config.json: sizes are bounded before anything is allocated", "[model][config]") {
  for (auto [key, v] : {std::pair<const char*, int64_t>{"num_hidden_layers", int64_t(1) << 31},
                        {"head_dim", int64_t(1) << 40},
                        {"vocab_size", int64_t(1) << 40},
                        {"hidden_size", int64_t(1) << 20},
                        {"intermediate_size", int64_t(1) << 40},
                        {"num_attention_heads", int64_t(1) << 31},
                        {"max_position_embeddings", int64_t(1) << 40}}) {
    nlohmann::json j = base();
    j["head_dim"] = 16;
    j["num_key_value_heads"] = 1;
    j[key] = v;
    bad(j, key, "beyond the supported maximum");
  }
  // each size within its bound, the product not: 4096 layers of width 2^18
  nlohmann::json j = base();
  j["num_hidden_layers"] = 4096;
  j["hidden_size"] = 1 << 18;
  j["intermediate_size"] = 1 << 20;
  j["head_dim"] = 128;
  model_test::require_error([&] { parse(j); }, {"/m/config.json", "parameters", "num_hidden_layers 4096"});
}

TEST_CASE("config.json: deep nesting is an error, not a stack overflow in an error message", "[model][config]") {
  // a value nested 70,000 deep: its dump() in "expected an integer, found ..." recursed per level
  const std::string deep = std::string(70000, '[') + std::string(70000, ']');
  model_test::require_error([&] { parse_config("{\"model_type\": \"qwen3\", \"vocab_size\": " + deep + "}", "/m/config.json"); },
                            {"/m/config.json", "nested deeper than 200 levels"});
}
