// tests/io/checkpoint_test.cpp: single-file and sharded checkpoints, their index file as
// transformers writes it, and the errors of broken checkpoints.
#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "runtime/io/checkpoint.h"
#include "tests/io/io_test_util.h"

using ltrun::io::Checkpoint;
using ltrun::io::save_checkpoint;
using ltrun::io::save_safetensors;
using ltrun::io::SafetensorsFile;
using namespace io_test;
namespace fs = std::filesystem;

namespace {

using Named = std::vector<std::pair<std::string, at::Tensor>>;

// Ten tensors of 64 bytes (16 F32 each) and one of 400 bytes, in layer order.
Named model_tensors() {
  Named out;
  for (int i = 0; i < 5; ++i) {
    out.emplace_back(fmt::format("layers.{}.w", i), at::full({4, 4}, float(i)));
    out.emplace_back(fmt::format("layers.{}.b", i), at::full({16}, float(-i)));
  }
  out.emplace_back("embed", at::arange(100, at::kFloat));
  return out;
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

void require_same_tensors(const Checkpoint& c, const Named& tensors) {
  std::vector<std::string> names;
  for (const auto& [name, t] : tensors) {
    INFO(name);
    names.push_back(name);
    CHECK(c.tensor(name).equal(t));
  }
  std::sort(names.begin(), names.end());
  CHECK(c.names() == names);
}

std::string write_text(const std::string& path, const std::string& text) {
  write_bytes(path, text);
  return path;
}

}  // namespace

TEST_CASE("single-file checkpoint", "[io][checkpoint]") {
  std::string dir = scratch("ckpt_single") + "/model";
  Named tensors = model_tensors();
  save_checkpoint(dir, tensors);
  CHECK(files_in(dir) == std::vector<std::string>{"model.safetensors"});
  CHECK(SafetensorsFile::open(dir + "/model.safetensors").metadata().at("format") == "pt");

  for (const std::string& path : {dir, dir + "/model.safetensors"}) {
    INFO(path);
    auto c = Checkpoint::open(path);
    require_same_tensors(c, tensors);
    CHECK(c.has("embed"));
    CHECK_FALSE(c.has("nope"));
    CHECK(c.info("embed").shape == std::vector<int64_t>{100});
    CHECK(c.file_of("layers.3.w") == dir + "/model.safetensors");
  }
}

TEST_CASE("sharded checkpoint and its index", "[io][checkpoint]") {
  std::string dir = scratch("ckpt_sharded");
  Named tensors = model_tensors();
  // 200-byte shards: three 64-byte tensors fit, a fourth does not; the 400-byte embedding
  // is larger than any shard and gets its own, placed before the shard still being filled
  // (as huggingface_hub does).
  save_checkpoint(dir, tensors, 200);
  CHECK(files_in(dir) == std::vector<std::string>{
                             "model-00001-of-00005.safetensors", "model-00002-of-00005.safetensors",
                             "model-00003-of-00005.safetensors", "model-00004-of-00005.safetensors",
                             "model-00005-of-00005.safetensors", "model.safetensors.index.json"});

  auto index = nlohmann::json::parse(read_bytes(dir + "/model.safetensors.index.json"));
  CHECK(index["metadata"]["total_size"] == 10 * 64 + 400);
  CHECK(index["weight_map"].size() == tensors.size());
  CHECK(index["weight_map"]["layers.0.w"] == "model-00001-of-00005.safetensors");
  CHECK(index["weight_map"]["layers.1.w"] == "model-00001-of-00005.safetensors");
  CHECK(index["weight_map"]["layers.1.b"] == "model-00002-of-00005.safetensors");
  CHECK(index["weight_map"]["embed"] == "model-00004-of-00005.safetensors");
  CHECK(index["weight_map"]["layers.4.b"] == "model-00005-of-00005.safetensors");
  for (const auto& [name, file] : index["weight_map"].items())
    CHECK(SafetensorsFile::open(dir + "/" + file.get<std::string>()).has(name));

  for (const std::string& path : {dir, dir + "/model.safetensors.index.json"}) {
    INFO(path);
    auto c = Checkpoint::open(path);
    require_same_tensors(c, tensors);
    CHECK(c.file_of("layers.2.b") == dir + "/model-00002-of-00005.safetensors");
    require_error([&] { c.tensor("nope"); }, {"checkpoint", path, "no tensor \"nope\""});
  }
}

TEST_CASE("saving over a checkpoint of the other layout removes the old files",
          "[io][checkpoint]") {
  std::string dir = scratch("ckpt_relayout");
  write_text(dir + "/config.json", "{}");
  write_text(dir + "/model-extra.safetensors", "not ours");  // not a name the writer uses
  Named tensors = model_tensors();

  save_checkpoint(dir, tensors, 200);
  save_checkpoint(dir, {{"only", at::ones({2})}});
  CHECK(files_in(dir) == std::vector<std::string>{"config.json", "model-extra.safetensors",
                                                  "model.safetensors"});
  CHECK(Checkpoint::open(dir).names() == std::vector<std::string>{"only"});

  save_checkpoint(dir, tensors, 1000);
  CHECK(files_in(dir) == std::vector<std::string>{
                             "config.json", "model-00001-of-00002.safetensors",
                             "model-00002-of-00002.safetensors", "model-extra.safetensors",
                             "model.safetensors.index.json"});
  require_same_tensors(Checkpoint::open(dir), tensors);
}

TEST_CASE("broken checkpoints give errors naming index, shard and tensor", "[io][checkpoint]") {
  std::string dir = scratch("ckpt_broken");
  require_error([&] { Checkpoint::open(dir + "/none"); }, {dir + "/none", "does not exist"});
  require_error([&] { Checkpoint::open(dir); },
                {dir, "neither model.safetensors nor model.safetensors.index.json"});

  save_checkpoint(dir + "/good", {{"a", at::ones({2})}, {"b", at::zeros({2})}}, 8);
  const std::string shard1 = "model-00001-of-00002.safetensors";
  const std::string index = dir + "/model.safetensors.index.json";
  fs::copy_file(dir + "/good/" + shard1, dir + "/" + shard1);

  auto require_index_error = [&](const std::string& text,
                                 std::initializer_list<std::string> parts) {
    INFO("index: " << text);
    write_text(index, text);
    require_error([&] { Checkpoint::open(dir); }, {index});
    require_error([&] { Checkpoint::open(dir); }, parts);
  };
  require_index_error("{\n  \"weight_map\": {\n    \"a\": }\n}", {"invalid JSON", "line 3"});
  require_index_error("[]", {"expected a JSON object", "\"weight_map\""});
  require_index_error(R"({"metadata": {}})", {"missing required key \"weight_map\""});
  require_index_error(R"({"weight_map": []})", {"\"weight_map\" must be an object"});
  require_index_error(R"({"weight_map": {"a": 1}})", {"weight_map \"a\" must be a shard file"});
  require_index_error(R"({"weight_map": {"a": "/etc/passwd"}})",
                      {"shard \"/etc/passwd\" must be a file name relative to the index"});
  require_index_error(R"({"weight_map": {"a": "gone.safetensors"}})",
                      {"shard gone.safetensors (holding \"a\")", "No such file"});
  require_index_error(R"({"weight_map": {"a": ")" + shard1 + R"(", "b": ")" + shard1 + "\"}}",
                      {"tensor \"b\" is mapped to", shard1, "does not contain it"});

  write_text(dir + "/corrupt.safetensors", "0123456789");
  require_index_error(R"({"weight_map": {"a": "corrupt.safetensors"}})",
                      {"shard corrupt.safetensors (holding \"a\")", "corrupt.safetensors: header "
                       "length", "exceeds the limit"});

  require_error([&] { save_checkpoint(dir + "/sparse", {{"s", at::eye(2).to_sparse()}}); },
                {"tensor \"s\"", "not dense"});

  // The index wins over a model.safetensors lying next to it.
  write_text(index, R"({"metadata": {"total_size": 8}, "weight_map": {"a": ")" + shard1 + "\"}}");
  save_safetensors(dir + "/model.safetensors", {{"z", at::ones({1})}});
  CHECK(Checkpoint::open(dir).names() == std::vector<std::string>{"a"});
}
