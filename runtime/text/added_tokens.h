// runtime/text/added_tokens.h: added tokens (special or not) are cut out of the text
// before normalization and pre-tokenization, as Hugging Face does (internal to text/).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ltrun::text {

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;
  bool lstrip = false;  // the match swallows white space on its left
  bool rstrip = false;  // ... and on its right
};

class AddedTokenSplitter {
 public:
  explicit AddedTokenSplitter(const std::vector<AddedToken>& tokens);

  struct Section {
    size_t begin, end;
    int token;  // index into the tokens given to the constructor, -1 for plain text
  };
  // Splits text (valid UTF-8) into plain sections and added tokens: leftmost match first,
  // the longest token at that position. Empty plain sections are left out.
  std::vector<Section> split(std::string_view text) const;

 private:
  const std::vector<AddedToken>& tokens_;
  std::array<std::vector<int>, 256> by_first_byte_;  // candidates, longest first
};

}  // namespace ltrun::text
