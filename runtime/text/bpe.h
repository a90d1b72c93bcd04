// runtime/text/bpe.h: the byte-level BPE model: vocabulary, merges applied by rank, and a
// cache of encoded words (internal to text/).
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

class BpeModel {
 public:
  // vocab: byte-level token string -> id; merges in rank order. `where` names the model
  // in error messages ("tokenizer 'x/tokenizer.json': model").
  BpeModel(std::unordered_map<std::string, int32_t> vocab,
           const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges,
           std::string where);

  // Appends the ids of one pre-tokenized word, given as raw bytes. Thread-safe.
  void encode_word(std::string_view bytes, std::vector<int32_t>& out) const;

  const std::unordered_map<std::string, int32_t>& vocab() const { return vocab_; }

 private:
  struct Merge {
    int32_t rank, id;
  };
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  void merge_word(std::string_view bytes, std::vector<int32_t>& out) const;

  std::unordered_map<std::string, int32_t> vocab_;
  std::array<int32_t, 256> byte_ids_;  // id of each single-byte token, -1 if absent
  std::unordered_map<uint64_t, Merge> merges_;
  bool ignore_merges_;
  std::string where_;

  // Words repeat a lot in text; caching them skips most merging. Bounded like Hugging
  // Face's (which stops inserting when full) so memory stays flat on long corpora.
  static constexpr size_t kCacheCapacity = 1 << 16;
  static constexpr size_t kMaxCachedWord = 256;
  mutable std::shared_mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace ltrun::text
