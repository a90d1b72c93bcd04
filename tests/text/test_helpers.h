// tests/text/test_helpers.h: fixture paths and variants of the tiny tokenizer.json.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

namespace text_test {

inline std::string data(const std::string& name) {
  return std::string(LTRUN_TEST_DATA) + "/text/" + name;
}

// tests/data/text/tiny/tokenizer.json: a hand-built byte-level BPE (Qwen's layout) whose
// ids below are worked out by hand from its merges.
inline std::string tiny() { return data("tiny"); }

inline std::string scratch(const std::string& name) {
  const char* env = std::getenv("LTRUN_TEST_TMP");
  const std::filesystem::path dir =
      std::filesystem::path(env ? env : std::filesystem::temp_directory_path().string()) / "text";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

inline void write_file(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

// Writes the tiny tokenizer.json changed by `edit` to the scratch folder; returns its path.
inline std::string tiny_variant(const std::string& name,
                                const std::function<void(nlohmann::json&)>& edit) {
  std::ifstream in(tiny() + "/tokenizer.json", std::ios::binary);
  nlohmann::json j = nlohmann::json::parse(in);
  edit(j);
  const std::string path = scratch(name + ".json");
  write_file(path, j.dump());
  return path;
}

}  // namespace text_test
