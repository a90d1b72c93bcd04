// runtime/text/normalize.h: the normalizer's rewrites of a text (Unicode NFC, prepending and
// replacing strings) with an alignment back to the original bytes (internal to text/), so
// that token offsets point into the text the caller gave.
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

  // Steps applied to the current text, in the order a normalizer Sequence lists them.
  void apply_nfc();
  // Hugging Face's Prepend: nothing on an empty text. The inserted bytes come from no byte
  // of the original: they map to the empty span where the text they precede begins.
  void prepend(std::string_view s);
  // Every occurrence of `from` (non-empty), left to right, without overlaps; the bytes of
  // `to` map to the bytes `from` held.
  void replace(std::string_view from, std::string_view to);

  std::string_view text() const { return changed_ ? std::string_view(owned_) : original_; }
  // Byte span of the original text that normalized bytes [b, e) come from. A character
  // that normalization merged or reordered maps to its whole source segment.
  std::pair<size_t, size_t> original_span(size_t b, size_t e) const;

 private:
  // Replaces the current text with `text`, whose byte k comes from the current bytes
  // [from_begin[k], from_end[k]) (an empty range: inserted before that position).
  void rewrite(std::string text, const std::vector<uint32_t>& from_begin,
               const std::vector<uint32_t>& from_end);

  std::string_view original_;
  bool changed_ = false;
  std::string owned_;
  std::vector<uint32_t> begin_, end_;  // per normalized byte, when changed_
};

}  // namespace ltrun::text
