// runtime/text/tokenizer.cpp: loading tokenizer.json and the encode/decode pipeline:
// added tokens -> normalizer (NFC, Prepend, Replace) -> pre-tokenizer (split regexes then
// byte-level BPE, or Metaspace then BPE over characters) -> post-processor; decoding by the
// ByteLevel decoder, or by the SentencePiece-era decoders of decoders.h.
#include "runtime/text/tokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unordered_map>

#include "runtime/core/env.h"
#include "runtime/core/error.h"
#include "runtime/core/json_depth.h"
#include "runtime/text/added_tokens.h"
#include "runtime/text/bpe.h"
#include "runtime/text/decoders.h"
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
  size_t count() const {
    if (!v_.is_number_integer() || v_.get<int64_t>() < 0)
      fail(fmt::format("expected a non-negative integer, got {}", v_.dump()));
    return v_.get<size_t>();
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

}  // namespace

struct Tokenizer::Impl {
  enum class Kind : uint8_t { None, Model, Added, Special };

  // one step of the normalizer: NFC, Prepend(a), or Replace(a -> b)
  struct NormalizerStep {
    enum class Type { Nfc, Prepend, Replace } type;
    std::string a, b;
  };
  // The Metaspace pre-tokenizer: spaces become the replacement character, which is also
  // prepended to the first section of the text ("first") or to every section ("always")
  // unless it starts with one; with split, a word starts at every replacement character.
  struct Metaspace {
    std::string replacement;
    enum class Prepend { Always, First, Never } prepend;
    bool split;
  };

  std::string path;
  std::vector<NormalizerStep> normalizer;
  // byte-level BPE (GPT-2 style: a ByteLevel pre-tokenizer) or SentencePiece style (no
  // pre-tokenizer or Metaspace; BPE over characters, decoders of decoders.h)
  bool byte_level = true;
  std::vector<std::unique_ptr<Regex>> splits;  // applied in order, each to every piece
  std::optional<Metaspace> metaspace;
  std::unique_ptr<BpeModel> model;
  std::vector<DecoderStep> decoders;  // SentencePiece style only
  std::vector<AddedToken> added;
  std::unique_ptr<AddedTokenSplitter> splitter;
  std::unordered_map<std::string, int32_t> added_ids;
  // post-processor template for one text: ids to add, and -1 where the text goes;
  // empty without a TemplateProcessing
  std::vector<int32_t> template_ids;

  // by id
  std::vector<std::string> tokens;
  std::vector<std::string> bytes;  // byte-level: the raw bytes a model token stands for
  std::vector<Kind> kinds;

  void load_normalizer(const Node& n);
  void load_pre_tokenizer(const Node& n);
  void load_model(const Node& n);
  void load_added_tokens(const Node& n);
  // Ids index the tables built from them: all must be below the count of tokens, vocab and
  // added (set by load_model from that count and n_added).
  size_t n_added = 0, id_limit = 0;
  std::string id_beyond(int32_t id) const {
    return fmt::format("id {} is beyond the {} tokens of the vocab and added_tokens (ids must be below {})",
                       id, id_limit, id_limit);
  }
  void load_post_processor(const Node& n);
  void load_decoder(const Node& n);
  void build_id_tables();
  Metaspace load_metaspace(const Node& n) const;

  Encoding encode(std::string_view text, bool add_special_tokens, bool with_offsets) const;
  Normalized normalize(std::string_view original, size_t at) const;
};

void Tokenizer::Impl::load_normalizer(const Node& n) {
  const std::string type = n["type"].str();
  if (type == "NFC") {
    normalizer.push_back({NormalizerStep::Type::Nfc, {}, {}});
  } else if (type == "Prepend") {
    normalizer.push_back({NormalizerStep::Type::Prepend, n["prepend"].str(), {}});
  } else if (type == "Replace") {
    const auto pattern = n["pattern"].get("String");
    if (!pattern) n["pattern"].fail("only {\"String\": ...} patterns are supported");
    if (pattern->str().empty()) pattern->fail("the pattern cannot be empty");
    normalizer.push_back({NormalizerStep::Type::Replace, pattern->str(), n["content"].str()});
  } else if (type == "Sequence") {
    for (const Node& item : n["normalizers"].items()) load_normalizer(item);
  } else {
    n["type"].fail(fmt::format(
        "unsupported normalizer \"{}\" (supported: NFC, Prepend, Replace, Sequence)", type));
  }
}

// Metaspace's fields as the pre-tokenizer and the decoder write them. Files from before
// tokenizers 0.19 have add_prefix_space instead of prepend_scheme.
Tokenizer::Impl::Metaspace Tokenizer::Impl::load_metaspace(const Node& n) const {
  Metaspace m;
  const Node replacement = n["replacement"];
  m.replacement = replacement.str();
  size_t end = 0;
  if (m.replacement.empty() || (next_codepoint(m.replacement, end), end != m.replacement.size()))
    replacement.fail("expected one character");
  const bool add_prefix_space = n.flag("add_prefix_space", true);
  if (const auto scheme = n.get("prepend_scheme")) {
    const std::string s = scheme->str();
    if (s == "always")
      m.prepend = Metaspace::Prepend::Always;
    else if (s == "first")
      m.prepend = Metaspace::Prepend::First;
    else if (s == "never")
      m.prepend = Metaspace::Prepend::Never;
    else
      scheme->fail(fmt::format("expected \"always\", \"first\" or \"never\", got \"{}\"", s));
    if (n.get("add_prefix_space") && add_prefix_space != (m.prepend != Metaspace::Prepend::Never))
      n["add_prefix_space"].fail("does not match prepend_scheme");
  } else {
    m.prepend = add_prefix_space ? Metaspace::Prepend::Always : Metaspace::Prepend::Never;
  }
  m.split = n.flag("split", true);
  return m;
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
    } else if (type == "Metaspace") {
      // it rewrites the text it splits; after other splits that would be per piece
      if (steps.size() != 1)
        step.fail("Metaspace must be the only pre-tokenizer (SentencePiece-style BPE)");
      metaspace = load_metaspace(step);
      byte_level = false;
      return;
    } else if (type == "ByteLevel") {
      // byte-level BPE turns the pieces into byte symbols last; it must end the sequence
      if (i + 1 != steps.size()) step.fail("ByteLevel must be the last pre-tokenizer");
      if (step.flag("add_prefix_space", true))
        step.fail("add_prefix_space: true is not supported (Qwen, Llama 3 and GPT-2 use false)");
      if (step.flag("use_regex", true))
        splits.push_back(std::make_unique<Regex>(kGpt2Pattern, step.where() + " (GPT-2 regex)"));
    } else {
      step["type"].fail(fmt::format(
          "unsupported pre-tokenizer \"{}\" (supported: Split, ByteLevel, Metaspace, Sequence)",
          type));
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
  BpeOptions options;
  options.byte_level = byte_level;
  options.ignore_merges = n.flag("ignore_merges", false);
  options.byte_fallback = n.flag("byte_fallback", false);
  options.fuse_unk = n.flag("fuse_unk", false);
  if (byte_level && options.byte_fallback)
    n["byte_fallback"].fail(
        "byte_fallback is not supported with a byte-level BPE (a ByteLevel pre-tokenizer)");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (const auto affix = n.get(key); affix && !affix->str().empty())
      affix->fail("only empty subword prefixes and suffixes are supported");

  std::unordered_map<std::string, int32_t> vocab;
  const Node v = n["vocab"];
  if (!v.value().is_object()) v.fail("expected an object of token: id");
  // The id tables are indexed by id: ids must stay below the number of tokens there are (the
  // vocab's and the added ones), so that one stray id (100000000 in a small file) cannot size
  // them, and no id may name two tokens of the vocab.
  id_limit = v.value().size() + n_added;
  std::unordered_map<int32_t, const std::string*> token_of;
  for (const auto& [token, id] : v.value().items()) {
    const Node entry(id, v.path() + "[\"" + token + "\"]", path);
    const int32_t i = entry.id();
    if (size_t(i) >= id_limit) entry.fail(id_beyond(i));
    const auto [it, fresh] = token_of.emplace(i, nullptr);
    if (!fresh) entry.fail(fmt::format("id {} is also the id of \"{}\"", i, *it->second));
    it->second = &vocab.emplace(token, i).first->first;
  }

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
  // a byte-level BPE has a token for every byte: its unk_token is never used
  if (const auto unk = n.get("unk_token"); unk && !byte_level) {
    const auto it = vocab.find(unk->str());
    if (it == vocab.end()) unk->fail(fmt::format("\"{}\" is not in the vocab", unk->str()));
    options.unk_id = it->second;
  }
  model = std::make_unique<BpeModel>(std::move(vocab), merges, options, n.where());
}

void Tokenizer::Impl::load_added_tokens(const Node& n) {
  // Added tokens follow the vocab (or reuse its ids, as Llama 2's <s> does): each id at most
  // once among them, and below id_limit like the vocab's.
  std::unordered_map<int32_t, std::string> seen;
  for (const Node& t : n.items()) {
    AddedToken a;
    a.id = t["id"].id();
    if (size_t(a.id) >= id_limit) t["id"].fail(id_beyond(a.id));
    if (const auto [it, fresh] = seen.emplace(a.id, t["content"].str()); !fresh)
      t["id"].fail(fmt::format("id {} is also the id of the added token \"{}\"", a.id, it->second));
    a.content = t["content"].str();
    if (a.content.empty()) t["content"].fail("an added token cannot be empty");
    a.special = t.flag("special", false);
    a.lstrip = t.flag("lstrip", false);
    a.rstrip = t.flag("rstrip", false);
    if (t.flag("single_word", false)) t["single_word"].fail("single_word: true is not supported");
    // Added tokens are matched on the raw text. For `normalized: true` that differs from
    // matching on the NFC text only for a token written decomposed, which no model has; but
    // Hugging Face matches such a token after Prepend / Replace too, and applies them to the
    // token itself ("<x>" becomes "▁<x>"), which is not done here.
    const bool rewrites = std::any_of(normalizer.begin(), normalizer.end(), [](const auto& s) {
      return s.type != NormalizerStep::Type::Nfc;
    });
    if (rewrites && t.flag("normalized", false))
      t["normalized"].fail("true is not supported with a Prepend or Replace normalizer");
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

void Tokenizer::Impl::load_decoder(const Node& n) {
  const std::string type = n["type"].str();
  if (byte_level) {
    // decode() implements the ByteLevel decoder; Qwen3.5-style files wrap it in a Sequence
    if (type == "Sequence") {
      const auto steps = n["decoders"].items();
      if (steps.size() != 1) n["decoders"].fail("only a Sequence of one ByteLevel is supported");
      return load_decoder(steps[0]);
    }
    if (type != "ByteLevel")
      n["type"].fail(fmt::format("unsupported decoder \"{}\" (supported: ByteLevel)", type));
    return;
  }
  DecoderStep step;
  if (type == "Sequence") {
    for (const Node& item : n["decoders"].items()) load_decoder(item);
    return;
  } else if (type == "Replace") {
    const auto pattern = n["pattern"].get("String");
    if (!pattern) n["pattern"].fail("only {\"String\": ...} patterns are supported");
    if (pattern->str().empty()) pattern->fail("the pattern cannot be empty");
    step = {DecoderStep::Type::Replace, pattern->str(), n["content"].str()};
  } else if (type == "ByteFallback") {
    step.type = DecoderStep::Type::ByteFallback;
  } else if (type == "Fuse") {
    step.type = DecoderStep::Type::Fuse;
  } else if (type == "Strip") {
    step.type = DecoderStep::Type::Strip;
    const Node content = n["content"];
    const std::string c = content.str();
    size_t end = 0;
    if (c.empty()) content.fail("expected one character");
    step.strip_char = next_codepoint(c, end);
    if (end != c.size()) content.fail("expected one character");
    step.start = n["start"].count();
    step.stop = n["stop"].count();
  } else if (type == "Metaspace") {
    const Metaspace m = load_metaspace(n);
    step.type = DecoderStep::Type::Metaspace;
    step.pattern = m.replacement;
    step.drop_in_first = m.prepend != Metaspace::Prepend::Never;
  } else if (type == "ByteLevel") {
    n["type"].fail("a ByteLevel decoder needs a byte-level BPE (a ByteLevel pre-tokenizer)");
  } else {
    n["type"].fail(fmt::format(
        "unsupported decoder \"{}\" (supported: Replace, ByteFallback, Fuse, Strip, Metaspace, "
        "Sequence)",
        type));
  }
  decoders.push_back(std::move(step));
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
    if (byte_level && !byte_level_decode(token, bytes[id])) bytes[id] = token;
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
  std::string text;
  try {
    text = read_file(path);  // a regular file of at most 1 GiB (runtime/core/env.h)
  } catch (const Error& e) {
    fail("tokenizer '{}': cannot open the file: {}", path, e.what());
  }
  json j;
  try {
    j = json::parse(text, json_depth_limit("tokenizer '" + path + "'"));
  } catch (const json::exception& e) {
    fail("tokenizer '{}': malformed JSON: {}", path, e.what());
  }
  // truncation and padding are left out: transformers resets both on every call too
  const Node root(j, "", path);
  if (!j.is_object()) root.fail("expected a JSON object");
  if (const auto n = root.get("normalizer")) impl->load_normalizer(*n);
  // no pre-tokenizer: Llama 2's legacy layout, SentencePiece style (each section is one word)
  if (const auto pre = root.get("pre_tokenizer"))
    impl->load_pre_tokenizer(*pre);
  else
    impl->byte_level = false;
  if (const auto n = root.get("added_tokens"); n && n->value().is_array()) impl->n_added = n->value().size();
  impl->load_model(root["model"]);
  if (const auto n = root.get("added_tokens"))
    impl->load_added_tokens(*n);
  else
    impl->splitter = std::make_unique<AddedTokenSplitter>(impl->added);
  if (const auto n = root.get("post_processor")) impl->load_post_processor(*n);
  impl->load_decoder(root["decoder"]);
  impl->build_id_tables();
  Tokenizer t;
  t.impl_ = std::move(impl);
  return t;
}

// The normalizer, then Metaspace's rewrites, of the section of the text that starts at byte
// `at` (Metaspace's "first" prepends to the section at the very start only).
Normalized Tokenizer::Impl::normalize(std::string_view original, size_t at) const {
  Normalized norm = Normalized::identity(original);
  for (const NormalizerStep& step : normalizer) {
    switch (step.type) {
      case NormalizerStep::Type::Nfc:
        norm.apply_nfc();
        break;
      case NormalizerStep::Type::Prepend:
        norm.prepend(step.a);
        break;
      case NormalizerStep::Type::Replace:
        norm.replace(step.a, step.b);
        break;
    }
  }
  if (metaspace) {
    const Metaspace& m = *metaspace;
    norm.replace(" ", m.replacement);
    const bool prepend = m.prepend == Metaspace::Prepend::Always ||
                         (m.prepend == Metaspace::Prepend::First && at == 0);
    if (prepend && norm.text().compare(0, m.replacement.size(), m.replacement) != 0)
      norm.prepend(m.replacement);
  }
  return norm;
}

Encoding Tokenizer::Impl::encode(std::string_view text, bool add_special_tokens,
                                 bool with_offsets) const {
  const size_t bad = invalid_utf8_at(text);
  LT_CHECK(bad == std::string_view::npos, "tokenizer '{}': text is not valid UTF-8 at byte {}",
           path, bad);
  Encoding enc;
  std::vector<Range> pieces, next;
  std::vector<BpeModel::Piece> tokens;
  for (const auto& section : splitter->split(text)) {
    if (section.token >= 0) {
      enc.ids.push_back(added[section.token].id);
      if (with_offsets) enc.offsets.push_back({section.begin, section.end});
      continue;
    }
    const Normalized norm =
        normalize(text.substr(section.begin, section.end - section.begin), section.begin);
    const std::string_view s = norm.text();
    pieces.assign(1, {0, s.size()});
    for (const auto& re : splits) {
      next.clear();
      for (const Range& p : pieces)
        re->split_isolated(s.substr(p.begin, p.end - p.begin), p.begin, next);
      pieces.swap(next);
    }
    if (metaspace && metaspace->split) {
      // a word starts at every replacement character (Hugging Face's MergedWithNext)
      pieces.clear();
      const std::string& r = metaspace->replacement;
      size_t begin = 0;
      for (size_t at = s.find(r, 1); at != std::string_view::npos; at = s.find(r, at + r.size())) {
        pieces.push_back({begin, at});
        begin = at;
      }
      if (begin < s.size()) pieces.push_back({begin, s.size()});
    }
    for (const Range& p : pieces) {
      tokens.clear();
      model->encode_word(s.substr(p.begin, p.end - p.begin), tokens);
      for (const BpeModel::Piece& t : tokens) {
        enc.ids.push_back(t.id);
        if (!with_offsets) continue;
        const auto [b, e] = norm.original_span(p.begin + t.begin, p.begin + t.end);
        enc.offsets.push_back({section.begin + b, section.begin + e});
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
  if (!m.byte_level) {
    // Hugging Face's way: the token strings, added tokens included, through the decoders
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (int32_t id : ids) {
      if (id < 0 || id >= static_cast<int32_t>(m.kinds.size())) continue;
      const Impl::Kind kind = m.kinds[id];
      if (kind == Impl::Kind::None || (kind == Impl::Kind::Special && skip_special_tokens))
        continue;
      tokens.push_back(m.tokens[id]);
    }
    apply_decoders(m.decoders, tokens);
    std::string out;
    for (const auto& t : tokens) out += t;
    return out;
  }
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
