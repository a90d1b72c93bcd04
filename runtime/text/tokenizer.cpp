// runtime/text/tokenizer.cpp: loading tokenizer.json and the encode/decode pipeline:
// added tokens -> normalizer (NFC) -> split regexes -> byte-level BPE -> post-processor.
#include "runtime/text/tokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unordered_map>

#include "runtime/core/error.h"
#include "runtime/text/added_tokens.h"
#include "runtime/text/bpe.h"
#include "runtime/text/normalize.h"
#include "runtime/text/regex.h"
#include "runtime/text/utf8.h"

namespace ltrun::text {

namespace {

using nlohmann::json;

// GPT-2's split regex, which the ByteLevel pre-tokenizer applies when use_regex is true.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// A JSON value together with its path in the file, so every error says where it is.
class Node {
 public:
  Node(const json& value, std::string path, const std::string& file)
      : v_(value), path_(std::move(path)), file_(file) {}

  [[noreturn]] void fail(const std::string& what) const {
    ltrun::fail("tokenizer '{}': {}: {}", file_, path_, what);
  }
  const std::string& path() const { return path_; }
  std::string where() const { return fmt::format("tokenizer '{}': {}", file_, path_); }

  // a member that may be absent or null
  std::optional<Node> get(const char* key) const {
    if (!v_.is_object()) fail("expected an object");
    const auto it = v_.find(key);
    if (it == v_.end() || it->is_null()) return std::nullopt;
    return Node(*it, child(key), file_);
  }
  Node operator[](const char* key) const {
    auto n = get(key);
    if (!n) ltrun::fail("tokenizer '{}': {}: missing", file_, child(key));
    return *n;
  }
  std::vector<Node> items() const {
    if (!v_.is_array()) fail(fmt::format("expected an array, got {}", v_.type_name()));
    std::vector<Node> out;
    for (size_t i = 0; i < v_.size(); ++i)
      out.emplace_back(v_[i], fmt::format("{}[{}]", path_, i), file_);
    return out;
  }
  std::string str() const {
    if (!v_.is_string()) fail(fmt::format("expected a string, got {}", v_.type_name()));
    return v_.get<std::string>();
  }
  int32_t id() const {
    if (!v_.is_number_integer() || v_.get<int64_t>() < 0 || v_.get<int64_t>() > INT32_MAX)
      fail(fmt::format("expected a token id (a non-negative integer), got {}", v_.dump()));
    return v_.get<int32_t>();
  }
  bool flag(const char* key, bool default_value) const {
    const auto n = get(key);
    if (!n) return default_value;
    if (!n->v_.is_boolean()) n->fail("expected true or false");
    return n->v_.get<bool>();
  }
  const json& value() const { return v_; }

 private:
  std::string child(const char* key) const {
    return path_.empty() ? std::string(key) : path_ + "." + key;
  }
  const json& v_;
  std::string path_;
  const std::string& file_;
};

// decode() implements the ByteLevel decoder; Qwen3.5-style files wrap it in a Sequence.
void check_decoder(const Node& n) {
  const std::string type = n["type"].str();
  if (type == "Sequence") {
    const auto decoders = n["decoders"].items();
    if (decoders.size() != 1) n["decoders"].fail("only a Sequence of one ByteLevel is supported");
    return check_decoder(decoders[0]);
  }
  if (type != "ByteLevel")
    n["type"].fail(fmt::format("unsupported decoder \"{}\" (supported: ByteLevel)", type));
}

}  // namespace

struct Tokenizer::Impl {
  enum class Kind : uint8_t { None, Model, Added, Special };

  std::string path;
  bool nfc = false;
  std::vector<std::unique_ptr<Regex>> splits;  // applied in order, each to every piece
  std::unique_ptr<BpeModel> model;
  std::vector<AddedToken> added;
  std::unique_ptr<AddedTokenSplitter> splitter;
  std::unordered_map<std::string, int32_t> added_ids;
  // post-processor template for one text: ids to add, and -1 where the text goes;
  // empty without a TemplateProcessing
  std::vector<int32_t> template_ids;

  // by id
  std::vector<std::string> tokens;
  std::vector<std::string> bytes;  // raw bytes a model token stands for
  std::vector<Kind> kinds;

  void load_normalizer(const Node& n);
  void load_pre_tokenizer(const Node& n);
  void load_model(const Node& n);
  void load_added_tokens(const Node& n);
  void load_post_processor(const Node& n);
  void build_id_tables();

  Encoding encode(std::string_view text, bool add_special_tokens, bool with_offsets) const;
};

void Tokenizer::Impl::load_normalizer(const Node& n) {
  const std::string type = n["type"].str();
  if (type == "NFC") {
    nfc = true;
  } else if (type == "Sequence") {
    for (const Node& item : n["normalizers"].items()) load_normalizer(item);
  } else {
    n["type"].fail(fmt::format("unsupported normalizer \"{}\" (supported: NFC, Sequence)", type));
  }
}

void Tokenizer::Impl::load_pre_tokenizer(const Node& n) {
  std::vector<Node> steps;
  if (n["type"].str() == "Sequence")
    steps = n["pretokenizers"].items();
  else
    steps.push_back(n);
  for (size_t i = 0; i < steps.size(); ++i) {
    const Node& step = steps[i];
    const std::string type = step["type"].str();
    if (type == "Split") {
      const auto regex = step["pattern"].get("Regex");
      if (!regex) step["pattern"].fail("only {\"Regex\": ...} patterns are supported");
      if (step["behavior"].str() != "Isolated")
        step["behavior"].fail(fmt::format("unsupported split behavior \"{}\" (supported: Isolated)",
                                          step["behavior"].str()));
      if (step.flag("invert", false)) step["invert"].fail("invert: true is not supported");
      splits.push_back(std::make_unique<Regex>(regex->str(), regex->where()));
    } else if (type == "ByteLevel") {
      // byte-level BPE turns the pieces into byte symbols last; it must end the sequence
      if (i + 1 != steps.size()) step.fail("ByteLevel must be the last pre-tokenizer");
      if (step.flag("add_prefix_space", true))
        step.fail("add_prefix_space: true is not supported (Qwen, Llama 3 and GPT-2 use false)");
      if (step.flag("use_regex", true))
        splits.push_back(std::make_unique<Regex>(kGpt2Pattern, step.where() + " (GPT-2 regex)"));
    } else {
      step["type"].fail(fmt::format(
          "unsupported pre-tokenizer \"{}\" (supported: Split, ByteLevel, Sequence)", type));
    }
  }
  if (steps.empty() || steps.back()["type"].str() != "ByteLevel")
    n.fail("a byte-level BPE needs a ByteLevel pre-tokenizer (last in the sequence)");
}

void Tokenizer::Impl::load_model(const Node& n) {
  // files written by old versions of tokenizers may leave out the type of a BPE model
  const auto type = n.get("type");
  if (type && type->str() != "BPE")
    type->fail(fmt::format("unsupported model \"{}\" (supported: BPE)", type->str()));
  if (const auto dropout = n.get("dropout");
      dropout && dropout->value().is_number() && dropout->value().get<double>() > 0)
    dropout->fail("BPE dropout is not supported (it makes encoding random)");
  if (n.flag("byte_fallback", false)) n["byte_fallback"].fail("byte_fallback is not supported");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (const auto affix = n.get(key); affix && !affix->str().empty())
      affix->fail("only empty subword prefixes and suffixes are supported");

  std::unordered_map<std::string, int32_t> vocab;
  const Node v = n["vocab"];
  if (!v.value().is_object()) v.fail("expected an object of token: id");
  for (const auto& [token, id] : v.value().items())
    vocab.emplace(token, Node(id, v.path() + "[\"" + token + "\"]", path).id());

  // merges are "a b" strings, or [a, b] pairs since tokenizers 0.20 (tokens may hold spaces)
  std::vector<std::pair<std::string, std::string>> merges;
  for (const Node& m : n["merges"].items()) {
    if (m.value().is_string()) {
      const std::string s = m.str();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        m.fail(fmt::format("expected \"a b\" (two tokens and one space), got \"{}\"", s));
      merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else {
      const auto pair = m.items();
      if (pair.size() != 2) m.fail("expected a pair of tokens");
      merges.emplace_back(pair[0].str(), pair[1].str());
    }
  }
  model = std::make_unique<BpeModel>(std::move(vocab), merges, n.flag("ignore_merges", false),
                                     n.where());
}

void Tokenizer::Impl::load_added_tokens(const Node& n) {
  for (const Node& t : n.items()) {
    AddedToken a;
    a.id = t["id"].id();
    a.content = t["content"].str();
    if (a.content.empty()) t["content"].fail("an added token cannot be empty");
    a.special = t.flag("special", false);
    a.lstrip = t.flag("lstrip", false);
    a.rstrip = t.flag("rstrip", false);
    if (t.flag("single_word", false)) t["single_word"].fail("single_word: true is not supported");
    // `normalized` is not read: added tokens are matched on the raw text. That differs from
    // matching on the NFC text only for a token written decomposed, which no model has.
    added_ids[a.content] = a.id;
    added.push_back(std::move(a));
  }
  splitter = std::make_unique<AddedTokenSplitter>(added);
}

void Tokenizer::Impl::load_post_processor(const Node& n) {
  const std::string type = n["type"].str();
  if (type == "ByteLevel") return;  // it only trims offsets, never changes ids
  if (type == "Sequence") {
    for (const Node& p : n["processors"].items()) load_post_processor(p);
    return;
  }
  if (type != "TemplateProcessing")
    n["type"].fail(fmt::format(
        "unsupported post-processor \"{}\" (supported: TemplateProcessing, ByteLevel, Sequence)",
        type));
  if (!template_ids.empty()) n.fail("only one TemplateProcessing is supported");
  const Node specials = n["special_tokens"];
  int texts = 0;
  for (const Node& item : n["single"].items()) {
    if (const auto seq = item.get("Sequence")) {
      if ((*seq)["id"].str() != "A") (*seq)["id"].fail("a single-text template can only hold A");
      ++texts;
      template_ids.push_back(-1);
    } else if (const auto tok = item.get("SpecialToken")) {
      const std::string name = (*tok)["id"].str();
      const auto entry = specials.get(name.c_str());
      if (!entry) (*tok)["id"].fail(fmt::format("\"{}\" is not in {}", name, specials.path()));
      for (const Node& id : (*entry)["ids"].items()) template_ids.push_back(id.id());
    } else {
      item.fail("expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
  }
  if (texts != 1) n["single"].fail("the template must hold the text (A) once");
}

void Tokenizer::Impl::build_id_tables() {
  int32_t max_id = -1;
  for (const auto& [token, id] : model->vocab()) max_id = std::max(max_id, id);
  for (const auto& a : added) max_id = std::max(max_id, a.id);
  tokens.assign(max_id + 1, {});
  bytes.assign(max_id + 1, {});
  kinds.assign(max_id + 1, Kind::None);
  for (const auto& [token, id] : model->vocab()) {
    tokens[id] = token;
    kinds[id] = Kind::Model;
    // the decoder's rule for a token outside the byte alphabet: its own UTF-8
    if (!byte_level_decode(token, bytes[id])) bytes[id] = token;
  }
  for (const auto& a : added) {  // an added token wins over a vocab entry with its id
    tokens[a.id] = a.content;
    kinds[a.id] = a.special ? Kind::Special : Kind::Added;
  }
}

Tokenizer Tokenizer::load(const std::string& file_or_dir) {
  namespace fs = std::filesystem;
  auto impl = std::make_shared<Impl>();
  std::error_code ec;
  impl->path = fs::is_directory(file_or_dir, ec)
                   ? (fs::path(file_or_dir) / "tokenizer.json").string()
                   : file_or_dir;
  const std::string& path = impl->path;
  std::ifstream in(path, std::ios::binary);
  LT_CHECK(in, "tokenizer '{}': cannot open the file", path);
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    fail("tokenizer '{}': malformed JSON: {}", path, e.what());
  }
  // truncation and padding are left out: transformers resets both on every call too
  const Node root(j, "", path);
  if (!j.is_object()) root.fail("expected a JSON object");
  if (const auto n = root.get("normalizer")) impl->load_normalizer(*n);
  const auto pre = root.get("pre_tokenizer");
  if (!pre) ltrun::fail("tokenizer '{}': pre_tokenizer: missing (byte-level BPE needs one)", path);
  impl->load_pre_tokenizer(*pre);
  impl->load_model(root["model"]);
  if (const auto n = root.get("added_tokens"))
    impl->load_added_tokens(*n);
  else
    impl->splitter = std::make_unique<AddedTokenSplitter>(impl->added);
  if (const auto n = root.get("post_processor")) impl->load_post_processor(*n);
  check_decoder(root["decoder"]);
  impl->build_id_tables();
  Tokenizer t;
  t.impl_ = std::move(impl);
  return t;
}

Encoding Tokenizer::Impl::encode(std::string_view text, bool add_special_tokens,
                                 bool with_offsets) const {
  const size_t bad = invalid_utf8_at(text);
  LT_CHECK(bad == std::string_view::npos, "tokenizer '{}': text is not valid UTF-8 at byte {}",
           path, bad);
  Encoding enc;
  std::vector<Range> pieces, next;
  for (const auto& section : splitter->split(text)) {
    if (section.token >= 0) {
      enc.ids.push_back(added[section.token].id);
      if (with_offsets) enc.offsets.push_back({section.begin, section.end});
      continue;
    }
    const std::string_view original = text.substr(section.begin, section.end - section.begin);
    const Normalized norm = nfc ? Normalized::nfc(original) : Normalized::identity(original);
    const std::string_view s = norm.text();
    pieces.assign(1, {0, s.size()});
    for (const auto& re : splits) {
      next.clear();
      for (const Range& p : pieces)
        re->split_isolated(s.substr(p.begin, p.end - p.begin), p.begin, next);
      pieces.swap(next);
    }
    for (const Range& p : pieces) {
      const size_t first = enc.ids.size();
      model->encode_word(s.substr(p.begin, p.end - p.begin), enc.ids);
      if (!with_offsets) continue;
      size_t at = p.begin;
      for (size_t k = first; k < enc.ids.size(); ++k) {
        const size_t len = bytes[enc.ids[k]].size();
        const auto [b, e] = norm.original_span(at, at + len);
        enc.offsets.push_back({section.begin + b, section.begin + e});
        at += len;
      }
    }
  }
  if (!add_special_tokens || template_ids.empty()) return enc;

  Encoding out;
  for (size_t i = 0; i < template_ids.size(); ++i) {
    if (template_ids[i] >= 0) {
      out.ids.push_back(template_ids[i]);
      if (with_offsets) out.offsets.push_back({0, 0});
    } else {
      out.ids.insert(out.ids.end(), enc.ids.begin(), enc.ids.end());
      out.offsets.insert(out.offsets.end(), enc.offsets.begin(), enc.offsets.end());
    }
  }
  return out;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  return impl_->encode(text, add_special_tokens, false).ids;
}

Encoding Tokenizer::encode_with_offsets(std::string_view text, bool add_special_tokens) const {
  return impl_->encode(text, add_special_tokens, true);
}

std::vector<std::vector<int32_t>> Tokenizer::encode_batch(const std::vector<std::string>& texts,
                                                          bool add_special_tokens) const {
  std::vector<std::vector<int32_t>> out(texts.size());
  const size_t n_threads =
      std::min<size_t>(texts.size(), std::max(1u, std::thread::hardware_concurrency()));
  if (n_threads <= 1) {
    for (size_t i = 0; i < texts.size(); ++i) out[i] = encode(texts[i], add_special_tokens);
    return out;
  }
  std::vector<std::exception_ptr> errors(n_threads);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < n_threads; ++t) {
    threads.emplace_back([&, t] {
      try {
        for (size_t i = t; i < texts.size(); i += n_threads)
          out[i] = encode(texts[i], add_special_tokens);
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  return out;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  const Impl& m = *impl_;
  // Runs of model tokens become bytes and then UTF-8 (lossy); added tokens are copied as
  // written, so that a partial character before one cannot swallow it.
  std::string out, run;
  for (int32_t id : ids) {
    if (id < 0 || id >= static_cast<int32_t>(m.kinds.size())) continue;
    switch (m.kinds[id]) {
      case Impl::Kind::None:
        break;
      case Impl::Kind::Model:
        run += m.bytes[id];
        break;
      case Impl::Kind::Special:
        if (skip_special_tokens) break;
        [[fallthrough]];
      case Impl::Kind::Added:
        append_utf8_lossy(run, out);
        run.clear();
        out += m.tokens[id];
        break;
    }
  }
  append_utf8_lossy(run, out);
  return out;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  const std::string key(token);
  if (const auto it = impl_->added_ids.find(key); it != impl_->added_ids.end()) return it->second;
  const auto& vocab = impl_->model->vocab();
  if (const auto it = vocab.find(key); it != vocab.end()) return it->second;
  return std::nullopt;
}

std::string Tokenizer::id_to_token(int32_t id) const {
  LT_CHECK(id >= 0 && id < vocab_size() && impl_->kinds[id] != Impl::Kind::None,
           "tokenizer '{}': no token has id {} (vocab size {})", impl_->path, id, vocab_size());
  return impl_->tokens[id];
}

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->tokens.size()); }

std::vector<int32_t> Tokenizer::special_ids() const {
  std::vector<int32_t> ids;
  for (const auto& a : impl_->added)
    if (a.special) ids.push_back(a.id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

const std::string& Tokenizer::path() const { return impl_->path; }

}  // namespace ltrun::text
