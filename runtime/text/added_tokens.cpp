// runtime/text/added_tokens.cpp: leftmost-longest matching of added tokens.
#include "runtime/text/added_tokens.h"

#include <algorithm>

#include "runtime/text/utf8.h"

namespace ltrun::text {

AddedTokenSplitter::AddedTokenSplitter(const std::vector<AddedToken>& tokens) : tokens_(tokens) {
  for (size_t i = 0; i < tokens.size(); ++i)
    if (!tokens[i].content.empty())
      by_first_byte_[static_cast<uint8_t>(tokens[i].content[0])].push_back(static_cast<int>(i));
  for (auto& list : by_first_byte_)
    std::stable_sort(list.begin(), list.end(), [&](int a, int b) {
      return tokens[a].content.size() > tokens[b].content.size();
    });
}

std::vector<AddedTokenSplitter::Section> AddedTokenSplitter::split(std::string_view text) const {
  std::vector<Section> out;
  size_t plain = 0;  // start of the current plain section
  for (size_t i = 0; i < text.size();) {
    int found = -1;
    for (int t : by_first_byte_[static_cast<uint8_t>(text[i])]) {
      if (text.compare(i, tokens_[t].content.size(), tokens_[t].content) == 0) {
        found = t;
        break;
      }
    }
    if (found < 0) {
      ++i;
      continue;
    }
    size_t begin = i, end = i + tokens_[found].content.size();
    if (tokens_[found].lstrip) {
      // step back over whole white-space characters, not into the previous match
      while (begin > plain) {
        size_t start = begin - 1;
        while (start > plain && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
        size_t k = start;
        if (!is_white_space(next_codepoint(text, k))) break;
        begin = start;
      }
    }
    if (tokens_[found].rstrip) {
      while (end < text.size()) {
        size_t k = end;
        if (!is_white_space(next_codepoint(text, k))) break;
        end = k;
      }
    }
    if (begin > plain) out.push_back({plain, begin, -1});
    out.push_back({begin, end, found});
    plain = i = end;
  }
  if (plain < text.size()) out.push_back({plain, text.size(), -1});
  return out;
}

}  // namespace ltrun::text
