// runtime/text/bpe.cpp: BPE merging with Hugging Face's order of merges.
#include "runtime/text/bpe.h"

#include <mutex>
#include <queue>

#include "runtime/core/error.h"
#include "runtime/text/utf8.h"

namespace ltrun::text {

BpeModel::BpeModel(std::unordered_map<std::string, int32_t> vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges,
                   bool ignore_merges, std::string where)
    : vocab_(std::move(vocab)), ignore_merges_(ignore_merges), where_(std::move(where)) {
  const auto& alphabet = byte_level();
  for (int b = 0; b < 256; ++b) {
    const auto it = vocab_.find(alphabet.byte_to_char[b]);
    byte_ids_[b] = it == vocab_.end() ? -1 : it->second;
  }
  merges_.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const auto& [a, b] = merges[i];
    const auto id_of = [&](const std::string& token) {
      const auto it = vocab_.find(token);
      if (it == vocab_.end())
        fail("{}.merges[{}]: token \"{}\" is not in the vocab", where_, i, token);
      return it->second;
    };
    const int32_t ia = id_of(a), ib = id_of(b), merged = id_of(a + b);
    // a repeated pair takes its last rank, as in Hugging Face (a map filled in order)
    merges_.insert_or_assign(pair_key(ia, ib), Merge{static_cast<int32_t>(i), merged});
  }
}

void BpeModel::encode_word(std::string_view bytes, std::vector<int32_t>& out) const {
  const bool cacheable = bytes.size() <= kMaxCachedWord;
  std::string key;
  if (cacheable) {
    key.assign(bytes);
    std::shared_lock lock(cache_mutex_);
    const auto it = cache_.find(key);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> ids;
  merge_word(bytes, ids);
  out.insert(out.end(), ids.begin(), ids.end());
  if (cacheable) {
    std::unique_lock lock(cache_mutex_);
    if (cache_.size() < kCacheCapacity) cache_.emplace(std::move(key), std::move(ids));
  }
}

void BpeModel::merge_word(std::string_view bytes, std::vector<int32_t>& out) const {
  if (ignore_merges_) {
    // Llama 3: a word that is itself a token is taken whole, whatever the merges say
    std::string token;
    for (char c : bytes) token += byte_level().byte_to_char[static_cast<uint8_t>(c)];
    const auto it = vocab_.find(token);
    if (it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  struct Symbol {
    int32_t id, prev, next;
    bool alive;
  };
  const int32_t n = static_cast<int32_t>(bytes.size());
  if (n == 0) return;
  std::vector<Symbol> sym(n);
  for (int32_t i = 0; i < n; ++i) {
    const auto byte = static_cast<uint8_t>(bytes[i]);
    LT_CHECK(byte_ids_[byte] >= 0, "{}: byte 0x{:02x} has no token in the vocabulary", where_,
             byte);
    sym[i] = {byte_ids_[byte], i - 1, i + 1 < n ? i + 1 : -1, true};
  }

  // Hugging Face's order: lowest rank first, ties to the leftmost pair. Queue entries go
  // stale when a neighbour merges; a stale entry is recognised because the pair now at its
  // position no longer produces the same token.
  struct Candidate {
    int32_t rank, pos, id;
  };
  const auto later = [](const Candidate& a, const Candidate& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(later)> queue(later);
  const auto push = [&](int32_t pos) {
    const auto it = merges_.find(pair_key(sym[pos].id, sym[sym[pos].next].id));
    if (it != merges_.end()) queue.push({it->second.rank, pos, it->second.id});
  };
  for (int32_t i = 0; i + 1 < n; ++i) push(i);

  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = sym[top.pos];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = sym[left.next];
    const auto it = merges_.find(pair_key(left.id, right.id));
    if (it == merges_.end() || it->second.id != top.id) continue;
    left.id = top.id;
    right.alive = false;
    left.next = right.next;
    if (left.next >= 0) sym[left.next].prev = top.pos;
    if (left.prev >= 0) push(left.prev);
    if (left.next >= 0) push(top.pos);
  }
  // the first symbol is never the right side of a merge, so the chain starts at 0
  for (int32_t i = 0; i >= 0; i = sym[i].next) out.push_back(sym[i].id);
}

}  // namespace ltrun::text
