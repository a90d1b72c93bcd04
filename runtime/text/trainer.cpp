// runtime/text/trainer.cpp: byte-level BPE training (Hugging Face's BpeTrainer algorithm:
// most frequent pair first, ties to the smaller pair of ids), written as a Qwen-like
// tokenizer.json that Tokenizer::load reads back.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "runtime/core/error.h"
#include "runtime/text/added_tokens.h"
#include "runtime/text/normalize.h"
#include "runtime/text/regex.h"
#include "runtime/text/tokenizer.h"
#include "runtime/text/utf8.h"

namespace ltrun::text {

namespace {

// Qwen2/2.5/3's split regex: words with an optional leading non-letter, single digits,
// punctuation runs, newlines, and white space (a trailing space joins the next word).
constexpr const char* kQwenPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

struct Word {
  std::vector<int32_t> symbols;
  int64_t count;
};

// The pre-tokenized words of the corpus with their counts, sorted by bytes (determinism).
std::vector<std::pair<std::string, int64_t>> count_words(const std::vector<std::string>& texts,
                                                         const std::vector<AddedToken>& specials) {
  const AddedTokenSplitter splitter(specials);
  const Regex regex(kQwenPattern, "train_bpe: Qwen split regex");
  std::unordered_map<std::string, int64_t> counts;
  std::vector<Range> pieces;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string_view text = texts[i];
    const size_t bad = invalid_utf8_at(text);
    LT_CHECK(bad == std::string_view::npos, "train_bpe: text #{} is not valid UTF-8 at byte {}", i,
             bad);
    for (const auto& section : splitter.split(text)) {
      if (section.token >= 0) continue;  // special tokens are never merged into words
      const Normalized norm =
          Normalized::nfc(text.substr(section.begin, section.end - section.begin));
      const std::string_view s = norm.text();
      pieces.clear();
      regex.split_isolated(s, 0, pieces);
      for (const Range& p : pieces) ++counts[std::string(s.substr(p.begin, p.end - p.begin))];
    }
  }
  std::vector<std::pair<std::string, int64_t>> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end());
  return sorted;
}

class Trainer {
 public:
  Trainer(const std::vector<std::pair<std::string, int64_t>>& words) {
    const auto& alphabet = byte_level();
    std::array<int32_t, 256> byte_id;
    for (int k = 0; k < 256; ++k) {
      byte_id[alphabet.order[k]] = k;
      add_token(alphabet.byte_to_char[alphabet.order[k]]);
    }
    for (const auto& [bytes, count] : words) {
      Word w{{}, count};
      for (char c : bytes) w.symbols.push_back(byte_id[static_cast<uint8_t>(c)]);
      words_.push_back(std::move(w));
    }
    for (size_t w = 0; w < words_.size(); ++w) add_pairs(static_cast<int32_t>(w), +1);
    for (const auto& [key, count] : pair_count_) queue_.push({count, key});
  }

  // Merges until the vocabulary has `max_tokens` tokens or no pair occurs min_count times.
  void train(size_t max_tokens, int64_t min_count) {
    while (tokens_.size() < max_tokens && !queue_.empty()) {
      const Candidate top = queue_.top();
      queue_.pop();
      const int64_t current = pair_count_[top.key];
      if (current != top.count) {  // stale: counts changed since it was queued
        if (current > 0) queue_.push({current, top.key});
        continue;
      }
      if (current < min_count) break;
      merge(static_cast<int32_t>(top.key >> 32), static_cast<int32_t>(top.key & 0xFFFFFFFF));
    }
  }

  const std::vector<std::string>& tokens() const { return tokens_; }
  const std::vector<std::pair<int32_t, int32_t>>& merges() const { return merges_; }

 private:
  struct Candidate {
    int64_t count;
    uint64_t key;  // the pair (a, b) as a << 32 | b, so smaller keys are smaller pairs
    bool operator<(const Candidate& o) const {  // the queue's top: highest count, smallest pair
      return count != o.count ? count < o.count : key > o.key;
    }
  };

  int32_t add_token(const std::string& token) {
    const auto [it, inserted] = ids_.emplace(token, static_cast<int32_t>(tokens_.size()));
    if (inserted) tokens_.push_back(token);
    return it->second;
  }

  // Adds (sign +1) or removes (-1) the pairs of word w from the counts.
  void add_pairs(int32_t w, int sign) {
    const Word& word = words_[w];
    for (size_t i = 0; i + 1 < word.symbols.size(); ++i) {
      const uint64_t key = pair_key(word.symbols[i], word.symbols[i + 1]);
      pair_count_[key] += sign * word.count;
      if (sign > 0) pair_words_[key].push_back(w);
    }
  }

  void merge(int32_t a, int32_t b) {
    // two pairs may spell the same token ("ab"+"c", "a"+"bc"): it keeps its first id
    const int32_t merged = add_token(tokens_[a] + tokens_[b]);
    merges_.emplace_back(a, b);
    std::vector<int32_t> where = std::move(pair_words_[pair_key(a, b)]);
    std::sort(where.begin(), where.end());
    where.erase(std::unique(where.begin(), where.end()), where.end());
    std::unordered_set<uint64_t> grown;  // pairs with the new token, to queue afterwards
    for (int32_t w : where) {
      std::vector<int32_t>& s = words_[w].symbols;
      bool found = false;
      for (size_t i = 0; i + 1 < s.size() && !found; ++i) found = s[i] == a && s[i + 1] == b;
      if (!found) continue;  // the pair was merged away by an earlier merge
      add_pairs(w, -1);
      std::vector<int32_t> out;
      for (size_t i = 0; i < s.size(); ++i) {
        if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
          out.push_back(merged);
          ++i;
        } else {
          out.push_back(s[i]);
        }
      }
      s = std::move(out);
      add_pairs(w, +1);
      for (size_t i = 0; i + 1 < s.size(); ++i)
        if (s[i] == merged || s[i + 1] == merged) grown.insert(pair_key(s[i], s[i + 1]));
    }
    std::vector<uint64_t> keys(grown.begin(), grown.end());
    std::sort(keys.begin(), keys.end());
    for (uint64_t key : keys) queue_.push({pair_count_[key], key});
  }

  std::vector<Word> words_;
  std::vector<std::string> tokens_;  // byte-level token strings, by id
  std::unordered_map<std::string, int32_t> ids_;
  std::vector<std::pair<int32_t, int32_t>> merges_;
  std::unordered_map<uint64_t, int64_t> pair_count_;
  std::unordered_map<uint64_t, std::vector<int32_t>> pair_words_;  // may repeat a word
  std::priority_queue<Candidate> queue_;
};

}  // namespace

void train_bpe(const std::vector<std::string>& texts, const BpeTrainOptions& options,
               const std::string& out_tokenizer_json) {
  const auto& specials = options.special_tokens;
  const std::unordered_set<std::string> distinct(specials.begin(), specials.end());
  LT_CHECK(distinct.size() == specials.size() && !distinct.count(""),
           "train_bpe: special tokens must be distinct and non-empty");
  const size_t fixed = 256 + specials.size();
  LT_CHECK(options.vocab_size >= static_cast<int>(fixed),
           "train_bpe: vocab_size {} is below the {} byte tokens plus {} special tokens",
           options.vocab_size, 256, specials.size());
  LT_CHECK(options.min_frequency >= 1, "train_bpe: min_frequency must be at least 1, got {}",
           options.min_frequency);

  std::vector<AddedToken> added;
  for (const auto& s : specials) added.push_back({s, -1, true, false, false});
  Trainer trainer(count_words(texts, added));
  trainer.train(options.vocab_size - specials.size(), options.min_frequency);

  using ojson = nlohmann::ordered_json;
  const auto& tokens = trainer.tokens();
  ojson vocab = ojson::object();
  // appended to the underlying vector: ordered_map's own insert searches linearly for the
  // key, quadratic for a large vocabulary (the tokens are distinct anyway)
  auto& entries = static_cast<ojson::object_t::Container&>(vocab.get_ref<ojson::object_t&>());
  entries.reserve(tokens.size());
  for (size_t id = 0; id < tokens.size(); ++id) entries.emplace_back(tokens[id], id);
  ojson merges = ojson::array();
  for (const auto& [a, b] : trainer.merges()) merges.push_back({tokens[a], tokens[b]});
  ojson added_tokens = ojson::array();
  for (size_t i = 0; i < specials.size(); ++i)
    added_tokens.push_back({{"id", tokens.size() + i},
                            {"content", specials[i]},
                            {"single_word", false},
                            {"lstrip", false},
                            {"rstrip", false},
                            {"normalized", false},
                            {"special", true}});
  const ojson byte_level_step = {{"type", "ByteLevel"},
                                 {"add_prefix_space", false},
                                 {"trim_offsets", false},
                                 {"use_regex", false}};
  ojson j = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added_tokens},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"},
           {"pattern", {{"Regex", kQwenPattern}}},
           {"behavior", "Isolated"},
           {"invert", false}},
          byte_level_step}}}},
      {"post_processor", byte_level_step},
      {"decoder", byte_level_step},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", ""},
        {"end_of_word_suffix", ""},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", false},
        {"vocab", vocab},
        {"merges", merges}}},
  };
  std::ofstream out(out_tokenizer_json, std::ios::binary | std::ios::trunc);
  LT_CHECK(out, "train_bpe: cannot write '{}'", out_tokenizer_json);
  out << j.dump(2) << "\n";
  out.close();
  LT_CHECK(out, "train_bpe: writing '{}' failed", out_tokenizer_json);
}

}  // namespace ltrun::text
