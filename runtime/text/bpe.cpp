// runtime/text/bpe.cpp: BPE merging with Hugging Face's order of merges, over bytes or over
// characters (with HF's byte fallback and <unk> rules).
#include "runtime/text/bpe.h"

#include <fmt/format.h>

#include <mutex>
#include <queue>

#include "runtime/core/error.h"
#include "runtime/text/utf8.h"

namespace ltrun::text {

BpeModel::BpeModel(std::unordered_map<std::string, int32_t> vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges,
                   const BpeOptions& options, std::string where)
    : vocab_(std::move(vocab)), options_(options), where_(std::move(where)) {
  for (int b = 0; b < 256; ++b) {
    // Hugging Face spells a fallback byte as Rust's format!("<{:#04X}>"): "<0x0A>"
    const std::string token =
        options_.byte_level ? byte_level().byte_to_char[b] : fmt::format("<0x{:02X}>", b);
    const auto it = vocab_.find(token);
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

void BpeModel::encode_word(std::string_view word, std::vector<Piece>& out) const {
  const bool cacheable = word.size() <= kMaxCachedWord;
  std::string key;
  if (cacheable) {
    key.assign(word);
    std::shared_lock lock(cache_mutex_);
    const auto it = cache_.find(key);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<Piece> pieces;
  merge_word(word, pieces);
  out.insert(out.end(), pieces.begin(), pieces.end());
  if (cacheable) {
    std::unique_lock lock(cache_mutex_);
    if (cache_.size() < kCacheCapacity) cache_.emplace(std::move(key), std::move(pieces));
  }
}

void BpeModel::initial_bytes(std::string_view word, std::vector<Symbol>& sym) const {
  for (size_t i = 0; i < word.size(); ++i) {
    const auto byte = static_cast<uint8_t>(word[i]);
    LT_CHECK(byte_ids_[byte] >= 0, "{}: byte 0x{:02x} has no token in the vocabulary", where_,
             byte);
    sym.push_back(
        {byte_ids_[byte], 0, 0, static_cast<uint32_t>(i), static_cast<uint32_t>(i + 1), true});
  }
}

void BpeModel::initial_chars(std::string_view word, std::vector<Symbol>& sym) const {
  const auto add = [&](int32_t id, size_t begin, size_t end) {
    sym.push_back({id, 0, 0, static_cast<uint32_t>(begin), static_cast<uint32_t>(end), true});
  };
  // Hugging Face writes a pending <unk> only when a character with a token (or the end)
  // comes, so the bytes of a fallback character can precede it (only possible when some
  // <0xNN> tokens are missing); kept so that the ids match.
  bool unk_pending = false;
  size_t unk_begin = 0, unk_end = 0;
  std::string ch;
  for (size_t i = 0; i < word.size();) {
    const size_t at = i;
    const uint32_t cp = next_codepoint(word, i);
    ch.assign(word.substr(at, i - at));
    if (const auto it = vocab_.find(ch); it != vocab_.end()) {
      if (unk_pending) add(options_.unk_id, unk_begin, unk_end);
      unk_pending = false;
      add(it->second, at, i);
      continue;
    }
    if (options_.byte_fallback) {
      bool all = true;
      for (size_t k = at; k < i; ++k) all = all && byte_ids_[static_cast<uint8_t>(word[k])] >= 0;
      if (all) {
        for (size_t k = at; k < i; ++k) add(byte_ids_[static_cast<uint8_t>(word[k])], k, k + 1);
        continue;
      }
    }
    // Hugging Face drops such a character silently; losing text unnoticed is worse
    LT_CHECK(options_.unk_id >= 0,
             "{}: character U+{:04X} has no token in the vocabulary{} and there is no unk_token",
             where_, cp, options_.byte_fallback ? " nor <0xNN> byte tokens" : "");
    if (unk_pending && options_.fuse_unk) {
      unk_end = i;
      continue;
    }
    if (unk_pending) add(options_.unk_id, unk_begin, unk_end);
    unk_pending = true;
    unk_begin = at;
    unk_end = i;
  }
  if (unk_pending) add(options_.unk_id, unk_begin, unk_end);
}

void BpeModel::merge_word(std::string_view word, std::vector<Piece>& out) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    // Llama 3: a word that is itself a token is taken whole, whatever the merges say
    std::string token;
    if (options_.byte_level)
      for (char c : word) token += byte_level().byte_to_char[static_cast<uint8_t>(c)];
    else
      token.assign(word);
    const auto it = vocab_.find(token);
    if (it != vocab_.end()) {
      out.push_back({it->second, 0, static_cast<uint32_t>(word.size())});
      return;
    }
  }
  std::vector<Symbol> sym;
  sym.reserve(word.size());
  if (options_.byte_level)
    initial_bytes(word, sym);
  else
    initial_chars(word, sym);
  const int32_t n = static_cast<int32_t>(sym.size());
  for (int32_t i = 0; i < n; ++i) {
    sym[i].prev = i - 1;
    sym[i].next = i + 1 < n ? i + 1 : -1;
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
    left.end = right.end;
    right.alive = false;
    left.next = right.next;
    if (left.next >= 0) sym[left.next].prev = top.pos;
    if (left.prev >= 0) push(left.prev);
    if (left.next >= 0) push(top.pos);
  }
  // the first symbol is never the right side of a merge, so the chain starts at 0
  for (int32_t i = 0; i >= 0 && i < n; i = sym[i].next)
    out.push_back({sym[i].id, sym[i].begin, sym[i].end});
}

}  // namespace ltrun::text
