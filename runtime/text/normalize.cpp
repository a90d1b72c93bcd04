// runtime/text/normalize.cpp: NFC through utf8proc, aligned segment by segment.
#include "runtime/text/normalize.h"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "runtime/core/error.h"
#include "runtime/text/utf8.h"

namespace ltrun::text {

namespace {

std::string utf8proc_nfc(std::string_view s) {
  if (s.empty()) return {};
  utf8proc_uint8_t* out = nullptr;
  // an explicit length (no UTF8PROC_NULLTERM) so that NUL characters are kept
  const utf8proc_ssize_t n = utf8proc_map(
      reinterpret_cast<const utf8proc_uint8_t*>(s.data()), static_cast<utf8proc_ssize_t>(s.size()),
      &out, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) fail("NFC normalization failed: {}", utf8proc_errmsg(n));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owner(out, &std::free);
  return std::string(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
}

// True when NFC cannot join cp with what precedes it: a starter that is never the second
// character of a composition. Hangul vowel and trailing jamo compose algorithmically, so
// utf8proc's tables do not mark them.
bool starts_segment(uint32_t cp) {
  if ((cp >= 0x1161 && cp <= 0x1175) || (cp >= 0x11A8 && cp <= 0x11C2)) return false;
  const utf8proc_property_t* p = utf8proc_get_property(static_cast<utf8proc_int32_t>(cp));
  const bool composes_as_second = p->comb_index != UINT16_MAX && p->comb_index >= 0x8000;
  return p->combining_class == 0 && !composes_as_second;
}

}  // namespace

Normalized Normalized::identity(std::string_view original) {
  Normalized n;
  n.original_ = original;
  return n;
}

Normalized Normalized::nfc(std::string_view original) {
  Normalized n;
  n.original_ = original;
  bool ascii = true;
  for (char c : original) ascii = ascii && static_cast<uint8_t>(c) < 0x80;
  if (ascii) return n;  // ASCII is always in NFC
  std::string whole = utf8proc_nfc(original);
  if (whole == original) return n;

  // Normalize segment by segment (a segment starts where NFC cannot reach back), so each
  // normalized byte knows which original bytes it came from.
  n.changed_ = true;
  size_t seg = 0;
  const auto flush = [&](size_t end) {
    const std::string_view source = original.substr(seg, end - seg);
    const bool ascii_char = source.size() == 1 && static_cast<uint8_t>(source[0]) < 0x80;
    const std::string part = ascii_char ? std::string(source) : utf8proc_nfc(source);
    n.owned_ += part;
    if (part == source) {  // unchanged: byte for byte
      for (size_t k = 0; k < part.size(); ++k) {
        n.begin_.push_back(static_cast<uint32_t>(seg + k));
        n.end_.push_back(static_cast<uint32_t>(seg + k + 1));
      }
    } else {
      n.begin_.insert(n.begin_.end(), part.size(), static_cast<uint32_t>(seg));
      n.end_.insert(n.end_.end(), part.size(), static_cast<uint32_t>(end));
    }
    seg = end;
  };
  for (size_t i = 0; i < original.size();) {
    const size_t at = i;
    const uint32_t cp = next_codepoint(original, i);
    if (at > seg && starts_segment(cp)) flush(at);
  }
  flush(original.size());
  if (n.owned_ != whole) {
    // a composition crossed a segment boundary: fall back to one segment for all
    n.owned_ = std::move(whole);
    n.begin_.assign(n.owned_.size(), 0);
    n.end_.assign(n.owned_.size(), static_cast<uint32_t>(original.size()));
  }
  return n;
}

std::pair<size_t, size_t> Normalized::original_span(size_t b, size_t e) const {
  if (!changed_) return {b, e};
  if (b == e) {
    const size_t p = b < begin_.size() ? begin_[b] : original_.size();
    return {p, p};
  }
  return {begin_[b], end_[e - 1]};
}

}  // namespace ltrun::text
