// runtime/text/normalize.h: Unicode NFC with an alignment back to the original bytes
// (internal to text/), so that token offsets point into the text the caller gave.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ltrun::text {

class Normalized {
 public:
  // NFC of `original` (valid UTF-8); `original` must outlive this object.
  static Normalized nfc(std::string_view original);
  // No normalizer: the text itself.
  static Normalized identity(std::string_view original);

  std::string_view text() const { return changed_ ? std::string_view(owned_) : original_; }
  // Byte span of the original text that normalized bytes [b, e) come from. A character
  // that normalization merged or reordered maps to its whole source segment.
  std::pair<size_t, size_t> original_span(size_t b, size_t e) const;

 private:
  std::string_view original_;
  bool changed_ = false;
  std::string owned_;
  std::vector<uint32_t> begin_, end_;  // per normalized byte, when changed_
};

}  // namespace ltrun::text
