// runtime/model/create.cpp: new model folders with a trained or copied tokenizer.
#include "runtime/model/create.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/core/env.h"
#include "runtime/core/error.h"
#include "runtime/core/fs.h"
#include "runtime/model/model.h"
#include "runtime/text/tokenizer.h"

namespace ltrun::model {
namespace fs = std::filesystem;

namespace {

bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; k++)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

void split_documents(const std::string& text, std::vector<std::string>& out) {
  std::istringstream in(text);
  std::string line, doc;
  while (std::getline(in, line)) {
    if (line == "%") {
      if (!doc.empty()) out.push_back(doc);
      doc.clear();
    } else {
      doc += line + "\n";
    }
  }
  if (!doc.empty()) out.push_back(doc);
}

}  // namespace

std::vector<std::string> default_corpus() {
  std::vector<std::string> files;
  const fs::path dir = ltrun::fs::share_path("/usr/share/games/fortunes");
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file() || e.path().has_extension()) continue;  // skip .dat, .u8
    files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> read_corpus(const std::vector<std::string>& paths, int64_t max_bytes,
                                     int64_t* bytes_read) {
  std::vector<std::string> files;
  for (const auto& given : paths) {
    const std::string p = ltrun::fs::share_path(given);
    if (fs::is_directory(p)) {
      std::vector<std::string> inside;
      for (const auto& e : ltrun::fs::walk(p))
        if (e.is_file) inside.push_back(e.path);
      std::sort(inside.begin(), inside.end());
      files.insert(files.end(), inside.begin(), inside.end());
    } else {
      LT_CHECK(fs::exists(p), "corpus file {} does not exist", p);
      files.push_back(p);
    }
  }
  std::vector<std::string> docs;
  int64_t total = 0;
  for (const auto& f : files) {
    if (total >= max_bytes) break;
    std::string text = read_file(f);
    if (int64_t(text.size()) > max_bytes - total) text.resize(size_t(max_bytes - total));
    // a cut may split a character: drop up to 3 bytes of a trailing partial sequence
    for (int k = 0; k < 3 && !text.empty() && !valid_utf8(text); k++) text.pop_back();
    LT_CHECK(valid_utf8(text), "corpus file {} is not UTF-8 text", f);
    total += int64_t(text.size());
    split_documents(text, docs);
  }
  if (bytes_read) *bytes_read = total;
  return docs;
}

NewModelResult create_model_dir(const NewModelSpec& spec) {
  LT_CHECK(!spec.out_dir.empty(), "model new: an output folder is needed");
  LT_CHECK(!fs::exists(spec.out_dir) || fs::is_empty(spec.out_dir),
           "model new: {} exists and is not empty; choose another folder", spec.out_dir);
  fs::create_directories(spec.out_dir);
  NewModelResult r;
  r.dir = spec.out_dir;
  const std::string tok_path = (fs::path(spec.out_dir) / "tokenizer.json").string();
  std::string copied_from;
  if (!spec.tokenizer.empty()) {
    const text::Tokenizer src = text::Tokenizer::load(spec.tokenizer);
    fs::copy_file(src.path(), tok_path, fs::copy_options::overwrite_existing);
    copied_from = r.tokenizer_source = src.path();
  } else {
    const auto corpus = spec.corpus.empty() ? default_corpus() : spec.corpus;
    const auto docs = read_corpus(corpus, spec.max_corpus_bytes, &r.corpus_bytes);
    text::BpeTrainOptions opt;
    opt.vocab_size = spec.vocab;
    text::train_bpe(docs, opt, tok_path);
    r.tokenizer_source = docs.empty() ? "bytes only (no corpus found)"
                                      : fmt::format("trained on {} documents ({} bytes)", docs.size(), r.corpus_bytes);
  }
  const text::Tokenizer tok = text::Tokenizer::load(tok_path);
  TinySpec tiny = spec.tiny;
  tiny.vocab = tok.vocab_size();
  for (const char* eos : {"<|endoftext|>", "<|end_of_text|>", "</s>"}) {
    if (auto id = tok.token_to_id(eos)) {
      tiny.eos_token_id = *id;
      break;
    }
  }
  // the BOS: a token the post-processor puts before the text (Llama 2's <s>, Llama 3's
  // <|begin_of_text|>; Qwen has none)
  const auto with = tok.encode("x", true), without = tok.encode("x", false);
  if (with.size() > without.size() && with.front() != without.front())
    tiny.bos_token_id = with.front();
  Model m = make_tiny(tiny);
  m.save(spec.out_dir);
  // tokenizer_config.json lets HF's AutoTokenizer load the folder (tokenizer.json holds the
  // rest): the copied tokenizer's own when it has one, else a minimal one
  const fs::path tok_config = fs::path(spec.out_dir) / "tokenizer_config.json";
  const fs::path src_config = fs::path(copied_from).parent_path() / "tokenizer_config.json";
  if (!copied_from.empty() && fs::exists(src_config)) {
    fs::copy_file(src_config, tok_config, fs::copy_options::overwrite_existing);
  } else {
    nlohmann::json tc = {{"tokenizer_class", "PreTrainedTokenizerFast"},
                         {"model_max_length", tiny.max_position_embeddings},
                         {"clean_up_tokenization_spaces", false}};
    if (tiny.eos_token_id) {
      tc["eos_token"] = tok.id_to_token(int32_t(*tiny.eos_token_id));
      tc["pad_token"] = tc["eos_token"];
    }
    if (tiny.bos_token_id) tc["bos_token"] = tok.id_to_token(int32_t(*tiny.bos_token_id));
    std::ofstream(tok_config) << tc.dump(2) << "\n";
  }
  r.vocab = tiny.vocab;
  for (const auto& p : m.parameters()) r.parameters += p.tensor.numel();
  return r;
}

const Fields<TinySpec>& tiny_spec_fields() {
  static const Fields<TinySpec> f = {{"arch", &TinySpec::arch},
                                     {"layers", &TinySpec::layers},
                                     {"hidden", &TinySpec::hidden},
                                     {"heads", &TinySpec::heads},
                                     {"kv_heads", &TinySpec::kv_heads},
                                     {"intermediate", &TinySpec::intermediate},
                                     {"tie", &TinySpec::tie_word_embeddings},
                                     {"pattern", &TinySpec::pattern},
                                     {"chunk", &TinySpec::chunk, 1, 1 << 20}};
  return f;
}

const Fields<NewModelSpec>& new_model_fields() {
  static const Fields<NewModelSpec> f = {{"out", &NewModelSpec::out_dir},
                                         {"vocab", &NewModelSpec::vocab, 1},
                                         {"tokenizer", &NewModelSpec::tokenizer},
                                         {"corpus", &NewModelSpec::corpus}};
  return f;
}

const Fields<NewModelResult>& new_model_result_fields() {
  static const Fields<NewModelResult> f = {{"dir", &NewModelResult::dir},
                                           {"vocab", &NewModelResult::vocab},
                                           {"parameters", &NewModelResult::parameters},
                                           {"tokenizer", &NewModelResult::tokenizer_source}};
  return f;
}

}  // namespace ltrun::model
