// tests/text/test_helpers.h: fixture paths and variants of the fixtures' tokenizer.json.
#pragma once
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/text/tokenizer.h"

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

// Writes the tokenizer.json in folder `dir` changed by `edit` to the scratch folder as
// NAME.json; returns its path.
inline std::string variant(const std::string& dir, const std::string& name,
                           const std::function<void(nlohmann::json&)>& edit) {
  std::ifstream in(dir + "/tokenizer.json", std::ios::binary);
  nlohmann::json j = nlohmann::json::parse(in);
  edit(j);
  const std::string path = scratch(name + ".json");
  write_file(path, j.dump());
  return path;
}

inline std::string tiny_variant(const std::string& name,
                                const std::function<void(nlohmann::json&)>& edit) {
  return variant(tiny(), name, edit);
}

// A broken tokenizer.json: the edit, and what its load error must name.
struct LoadErrorCase {
  const char* name;
  std::function<void(nlohmann::json&)> edit;
  const char* json_path;
  const char* what;
};

// Loads each case's variant of the tokenizer.json in `dir`; the error must name the file,
// the JSON path and what is wrong.
inline void check_load_errors(const std::string& dir, const std::string& prefix,
                              const std::vector<LoadErrorCase>& cases) {
  for (const auto& c : cases) {
    const std::string path = variant(dir, prefix + c.name, c.edit);
    std::string msg = "no error";
    try {
      ltrun::text::Tokenizer::load(path);
    } catch (const ltrun::Error& e) {
      msg = e.what();
    }
    INFO(msg);
    CHECK(msg.find(path) != std::string::npos);
    CHECK(msg.find(std::string(c.json_path) + ":") != std::string::npos);
    CHECK(msg.find(c.what) != std::string::npos);
  }
}

// tests/data/text/spm/NAME: SentencePiece-style fixtures made, with their references, by
// Hugging Face tokenizers (tests/data/text/make_spm_fixtures.py).
inline std::string spm(const std::string& name) { return data("spm/" + name); }

}  // namespace text_test
