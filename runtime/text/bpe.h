// runtime/text/bpe.h: the BPE model: vocabulary, merges applied by rank, and a cache of
// encoded words (internal to text/). Byte-level (GPT-2 style: a word starts as its bytes)
// or SentencePiece style (a word starts as its characters, with byte fallback or <unk>).
#pragma once
#include <array>
#include <cstdint>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ltrun::text {

struct BpeOptions {
  bool byte_level = true;  // symbols are bytes in GPT-2's alphabet; else characters
  bool ignore_merges = false;
  // characters only: a character without a token becomes its bytes as <0xNN> tokens ...
  bool byte_fallback = false;
  int32_t unk_id = -1;    // ... or else this token (-1: an error)
  bool fuse_unk = false;  // consecutive <unk> become one
};

class BpeModel {
 public:
  // vocab: token string -> id; merges in rank order. `where` names the model in error
  // messages ("tokenizer 'x/tokenizer.json': model").
  BpeModel(std::unordered_map<std::string, int32_t> vocab,
           const std::vector<std::pair<std::string, std::string>>& merges,
           const BpeOptions& options, std::string where);

  // One token of a word: its id and the bytes [begin, end) of the word it stands for.
  struct Piece {
    int32_t id;
    uint32_t begin, end;
  };
  // Appends the tokens of one pre-tokenized word (raw bytes for a byte-level model, valid
  // UTF-8 otherwise). Thread-safe.
  void encode_word(std::string_view word, std::vector<Piece>& out) const;

  const std::unordered_map<std::string, int32_t>& vocab() const { return vocab_; }

 private:
  struct Merge {
    int32_t rank, id;
  };
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  struct Symbol {
    int32_t id, prev, next;
    uint32_t begin, end;
    bool alive;
  };
  void initial_bytes(std::string_view word, std::vector<Symbol>& sym) const;
  void initial_chars(std::string_view word, std::vector<Symbol>& sym) const;
  void merge_word(std::string_view word, std::vector<Piece>& out) const;

  std::unordered_map<std::string, int32_t> vocab_;
  // byte-level: the id of each byte's token; with byte_fallback: of each <0xNN>; -1 if absent
  std::array<int32_t, 256> byte_ids_;
  std::unordered_map<uint64_t, Merge> merges_;
  BpeOptions options_;
  std::string where_;

  // Words repeat a lot in text; caching them skips most merging. Bounded like Hugging
  // Face's (which stops inserting when full) so memory stays flat on long corpora.
  static constexpr size_t kCacheCapacity = 1 << 16;
  static constexpr size_t kMaxCachedWord = 256;
  mutable std::shared_mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<Piece>> cache_;
};

}  // namespace ltrun::text
