// tests/model/test_checkpoint.cpp: config.json reading, save/load round trips, checkpoint
// validation errors and describe().
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model_test_util.h"
#include "runtime/io/checkpoint.h"
#include "runtime/model/config.h"
#include "runtime/model/info.h"
#include "runtime/model/model.h"

using namespace ltrun::model;
namespace fs = std::filesystem;

namespace {

nlohmann::json base_config(const std::string& type) {
  return {{"model_type", type},       {"vocab_size", 100},      {"hidden_size", 64},
          {"intermediate_size", 128}, {"num_hidden_layers", 2}, {"num_attention_heads", 4}};
}

Config parse(const nlohmann::json& j) { return parse_config(j.dump(), "/m/config.json"); }

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// Rewrites DIR's weights through `edit`, keeping everything else.
template <class F>
void edit_weights(const std::string& dir, F&& edit) {
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  {
    const ltrun::io::Checkpoint ck = ltrun::io::Checkpoint::open(dir);
    for (const std::string& n : ck.names()) tensors.emplace_back(n, ck.tensor(n).clone());
  }
  edit(tensors);
  ltrun::io::save_checkpoint(dir, tensors);
}

}  // namespace

TEST_CASE("config.json: defaults as HF's config classes have them", "[model][config]") {
  const Config q3 = parse(base_config("qwen3"));
  CHECK(q3.n_kv_heads == 4);
  CHECK(q3.head_dim == 128);  // Qwen3Config's default, not hidden / heads
  CHECK(q3.qk_norm);
  CHECK(!q3.qkv_bias);
  CHECK(q3.max_position_embeddings == 32768);
  CHECK(q3.rope_theta == 10000.0);
  CHECK(q3.rms_norm_eps == 1e-6);
  CHECK(!q3.tie_word_embeddings);

  const Config q2 = parse(base_config("qwen2"));
  CHECK(q2.head_dim == 16);
  CHECK(q2.qkv_bias);
  CHECK(!q2.o_bias);
  CHECK(!q2.qk_norm);

  nlohmann::json lj = base_config("llama");
  lj["attention_bias"] = true;
  lj["mlp_bias"] = true;
  lj["num_key_value_heads"] = 2;
  lj["eos_token_id"] = {7, 9};
  lj["bos_token_id"] = 1;
  lj["head_dim"] = nullptr;  // HF writes null for "unset"
  lj["torch_dtype"] = "bfloat16";
  const Config ll = parse(lj);
  CHECK(ll.head_dim == 16);
  CHECK(ll.max_position_embeddings == 2048);
  CHECK((ll.qkv_bias && ll.o_bias && ll.mlp_bias));
  CHECK(ll.n_kv_heads == 2);
  CHECK(ll.eos_token_ids == std::vector<int64_t>{7, 9});
  CHECK(ll.bos_token_id == 1);
  CHECK(ll.torch_dtype == "bfloat16");
}

TEST_CASE("config.json: rope_scaling in its spellings", "[model][config][rope]") {
  nlohmann::json j = base_config("llama");
  j["rope_theta"] = 500000.0;
  j["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 8.0},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8192}};
  Config c = parse(j);
  CHECK(c.rope_theta == 500000.0);
  CHECK(c.rope_scaling.type == "llama3");
  CHECK(*c.rope_scaling.factor == 8.0);
  CHECK(c.rope_scaling.original_max_position_embeddings == 8192);

  j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};  // the older key
  CHECK(parse(j).rope_scaling.type == "linear");

  // transformers 5: rope_parameters holds theta too; "dtype" replaces "torch_dtype"
  nlohmann::json v5 = base_config("qwen3");
  v5["rope_parameters"] = {{"rope_type", "yarn"},
                           {"rope_theta", 1e6},
                           {"factor", 4.0},
                           {"original_max_position_embeddings", 32768}};
  v5["dtype"] = "bfloat16";
  c = parse(v5);
  CHECK(c.rope_theta == 1e6);
  CHECK(c.rope_scaling.type == "yarn");
  CHECK(c.rope_scaling.original_max_position_embeddings == 32768);
  CHECK(c.torch_dtype == "bfloat16");

  j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
  model_test::require_error([&] { parse(j); },
                            {"/m/config.json", "rope_scaling.low_freq_factor", "missing"});
  j["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
  model_test::require_error([&] { parse(j); },
                            {"/m/config.json", "rope_scaling.rope_type", "dynamic"});
}

TEST_CASE("config.json: errors name the file and the key", "[model][config]") {
  model_test::require_error(
      [] { parse(base_config("gpt2")); },
      {"/m/config.json", "unknown model_type \"gpt2\"", "qwen3, qwen2, llama"});
  nlohmann::json j = base_config("qwen3");
  j.erase("model_type");
  model_test::require_error([&] { parse(j); }, {"/m/config.json", "\"model_type\"", "missing"});
  j = base_config("qwen3");
  j.erase("intermediate_size");
  model_test::require_error([&] { parse(j); },
                            {"/m/config.json", "\"intermediate_size\"", "missing required key"});
  j = base_config("qwen2");
  j["hidden_size"] = "64";
  model_test::require_error([&] { parse(j); },
                            {"\"hidden_size\"", "expected an integer", "string"});
  j = base_config("qwen2");
  j["num_key_value_heads"] = 3;
  model_test::require_error([&] { parse(j); }, {"\"num_key_value_heads\"", "does not divide"});
  j = base_config("qwen2");
  j["use_sliding_window"] = true;
  model_test::require_error([&] { parse(j); }, {"\"use_sliding_window\"", "not supported"});
  j = base_config("llama");
  j["hidden_act"] = "gelu";
  model_test::require_error([&] { parse(j); }, {"\"hidden_act\"", "gelu"});
  model_test::require_error([] { parse_config("{\"model_type\": ", "/m/config.json"); },
                            {"/m/config.json", "invalid JSON"});
}

TEST_CASE("save then load is bit-exact", "[model][checkpoint]") {
  struct Case {
    std::string arch;
    bool tie;
    c10::ScalarType dtype;
    uint64_t shard;
  };
  for (const Case& k :
       {Case{"qwen3", false, at::kFloat, 0}, Case{"qwen2", true, at::kFloat, 0},
        Case{"llama", false, at::kBFloat16, 0}, Case{"qwen3", true, at::kFloat, 20000}}) {
    DYNAMIC_SECTION(k.arch << (k.tie ? " tied" : "") << (k.dtype == at::kBFloat16 ? " bf16" : "")
                           << (k.shard ? " sharded" : "")) {
      TinySpec s = model_test::spec(k.arch);
      s.tie_word_embeddings = k.tie;
      s.eos_token_id = 5;
      const Model m = model_test::sharp_tiny(s, k.dtype);
      const std::string dir = model_test::scratch("roundtrip_" + k.arch + std::to_string(k.tie) +
                                                  std::to_string(k.shard));
      m.save(dir, k.shard);
      CHECK(fs::exists(fs::path(dir) / "config.json"));
      CHECK(fs::exists(fs::path(dir) / "generation_config.json"));
      CHECK(fs::exists(fs::path(dir) /
                       (k.shard ? "model.safetensors.index.json" : "model.safetensors")));
      const Model back = Model::load(dir, c10::kCPU, k.dtype);
      const auto a = m.parameters(), b = back.parameters();
      REQUIRE(a.size() == b.size());
      for (size_t i = 0; i < a.size(); ++i) {
        CHECK(a[i].name == b[i].name);
        CHECK(at::equal(a[i].tensor, b[i].tensor));
      }
      CHECK(back.config().tie_word_embeddings == k.tie);
      CHECK(back.config().torch_dtype == (k.dtype == at::kBFloat16 ? "bfloat16" : "float32"));
      CHECK(back.config().eos_token_ids == std::vector<int64_t>{5});
      const at::Tensor ids = model_test::random_ids(1, 5, s.vocab, 1);
      CHECK(at::equal(back.forward(ids).logits, m.forward(ids).logits));
      // the head of a tied model is the embedding itself, before and after
      if (k.tie) CHECK(at::equal(back.lens(back.forward(ids).residual), back.forward(ids).logits));
      // a load without dtype on the CPU gives float32
      CHECK(Model::load(dir).dtype() == at::kFloat);
    }
  }
}

TEST_CASE("checkpoint errors name the file and the tensor", "[model][checkpoint]") {
  const Model m = make_tiny(model_test::spec("qwen3"));
  const std::string dir = model_test::scratch("bad_checkpoint");
  auto fresh = [&] { m.save(dir); };

  fresh();
  edit_weights(dir, [](auto& t) {
    t.erase(
        std::remove_if(t.begin(), t.end(),
                       [](auto& p) { return p.first == "model.layers.1.self_attn.k_norm.weight"; }),
        t.end());
  });
  model_test::require_error([&] { Model::load(dir); },
                            {dir, "missing tensor model.layers.1.self_attn.k_norm.weight", "[8]"});

  fresh();
  edit_weights(dir, [](auto& t) {
    for (auto& p : t)
      if (p.first == "model.layers.2.mlp.up_proj.weight") p.second = at::zeros({47, 32});
  });
  model_test::require_error(
      [&] { Model::load(dir); },
      {"model.safetensors", "model.layers.2.mlp.up_proj.weight", "[47, 32]", "[48, 32]"});

  fresh();
  edit_weights(dir, [](auto& t) {
    t.emplace_back("model.layers.3.mlp.up_proj.weight", at::zeros({48, 32}));
  });
  model_test::require_error([&] { Model::load(dir); },
                            {"unexpected tensor model.layers.3.mlp.up_proj.weight", "3 layers"});

  fresh();
  edit_weights(dir, [](auto& t) {
    for (auto& p : t)
      if (p.first == "model.norm.weight") p.second = p.second.to(at::kBFloat16);
  });
  model_test::require_error([&] { Model::load(dir); },
                            {"model.norm.weight is BF16", "torch_dtype float32"});

  // derived buffers of old checkpoints are ignored
  fresh();
  edit_weights(dir, [](auto& t) {
    t.emplace_back("model.layers.0.self_attn.rotary_emb.inv_freq", at::ones({4}));
  });
  CHECK_NOTHROW(Model::load(dir));

  fresh();
  nlohmann::json j = nlohmann::json::parse(m.config().json);
  j["model_type"] = "mamba";
  write_text(dir + "/config.json", j.dump());
  model_test::require_error([&] { Model::load(dir); },
                            {dir + "/config.json", "unknown model_type \"mamba\""});

  model_test::require_error([&] { Model::load(dir + "/nowhere"); }, {"nowhere", "no such folder"});
  fs::remove(dir + "/config.json");
  model_test::require_error([&] { Model::load(dir); }, {dir, "no config.json"});
}

TEST_CASE("generation_config.json's token ids win over config.json's", "[model][config]") {
  TinySpec s = model_test::spec("qwen2");
  s.eos_token_id = 3;
  const std::string dir = model_test::scratch("generation_config");
  make_tiny(s).save(dir);
  CHECK(read_config(dir).eos_token_ids == std::vector<int64_t>{3});
  write_text(dir + "/generation_config.json", R"({"eos_token_id": [4, 6], "pad_token_id": 0})");
  const Config c = read_config(dir);
  CHECK(c.eos_token_ids == std::vector<int64_t>{4, 6});
  CHECK(c.pad_token_id == 0);
  // save keeps the file as it was read
  const std::string copy = model_test::scratch("generation_config_copy");
  Model::load(dir).save(copy);
  CHECK(read_config(copy).eos_token_ids == std::vector<int64_t>{4, 6});
}

TEST_CASE("describe counts parameters by part from the headers", "[model][info]") {
  TinySpec s =
      model_test::spec("qwen3");  // hidden 32, 4 heads of 8 over 2 kv heads, mlp 48, vocab 61
  const std::string dir = model_test::scratch("describe");
  make_tiny(s).save(dir);
  const CheckpointInfo info = describe(dir);
  const int64_t H = 32, L = 3, V = 61, I = 48, q = 4 * 8, kv = 2 * 8;
  CHECK(info.embeddings == V * H);
  CHECK(info.head == V * H);
  CHECK(info.attention == L * (q * H + 2 * kv * H + H * q));
  CHECK(info.mlp == L * 3 * H * I);
  CHECK(info.norms == L * (2 * H + 2 * 8) + H);
  CHECK(info.other == 0);
  CHECK(info.parameters == info.embeddings + info.head + info.attention + info.mlp + info.norms);
  CHECK(info.dtypes == "F32");
  CHECK(info.bytes_on_disk == fs::file_size(fs::path(dir) / "model.safetensors"));
  const std::string text = info.to_string();
  CHECK(text.find("qwen3, 3 layers, hidden 32, 4 heads (2 kv) of 8") != std::string::npos);
  CHECK(text.find("attention") != std::string::npos);
}
