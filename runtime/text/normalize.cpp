// runtime/text/normalize.cpp: NFC through utf8proc, aligned segment by segment; Prepend and
// Replace, aligned byte by byte.
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
  Normalized n = identity(original);
  n.apply_nfc();
  return n;
}

void Normalized::apply_nfc() {
  const std::string_view cur = text();
  bool ascii = true;
  for (char c : cur) ascii = ascii && static_cast<uint8_t>(c) < 0x80;
  if (ascii) return;  // ASCII is always in NFC
  std::string whole = utf8proc_nfc(cur);
  if (whole == cur) return;

  // Normalize segment by segment (a segment starts where NFC cannot reach back), so each
  // normalized byte knows which bytes it came from.
  std::string out;
  std::vector<uint32_t> from_begin, from_end;
  size_t seg = 0;
  const auto flush = [&](size_t end) {
    const std::string_view source = cur.substr(seg, end - seg);
    const bool ascii_char = source.size() == 1 && static_cast<uint8_t>(source[0]) < 0x80;
    const std::string part = ascii_char ? std::string(source) : utf8proc_nfc(source);
    out += part;
    if (part == source) {  // unchanged: byte for byte
      for (size_t k = 0; k < part.size(); ++k) {
        from_begin.push_back(static_cast<uint32_t>(seg + k));
        from_end.push_back(static_cast<uint32_t>(seg + k + 1));
      }
    } else {
      from_begin.insert(from_begin.end(), part.size(), static_cast<uint32_t>(seg));
      from_end.insert(from_end.end(), part.size(), static_cast<uint32_t>(end));
    }
    seg = end;
  };
  for (size_t i = 0; i < cur.size();) {
    const size_t at = i;
    const uint32_t cp = next_codepoint(cur, i);
    if (at > seg && starts_segment(cp)) flush(at);
  }
  flush(cur.size());
  if (out != whole) {
    // a composition crossed a segment boundary: fall back to one segment for all
    out = std::move(whole);
    from_begin.assign(out.size(), 0);
    from_end.assign(out.size(), static_cast<uint32_t>(cur.size()));
  }
  rewrite(std::move(out), from_begin, from_end);
}

void Normalized::prepend(std::string_view s) {
  const std::string_view cur = text();
  if (cur.empty() || s.empty()) return;
  std::string out;
  out.reserve(s.size() + cur.size());
  out.append(s).append(cur);
  std::vector<uint32_t> from_begin(s.size(), 0), from_end(s.size(), 0);
  for (size_t k = 0; k < cur.size(); ++k) {
    from_begin.push_back(static_cast<uint32_t>(k));
    from_end.push_back(static_cast<uint32_t>(k + 1));
  }
  rewrite(std::move(out), from_begin, from_end);
}

void Normalized::replace(std::string_view from, std::string_view to) {
  const std::string_view cur = text();
  size_t at = cur.find(from);
  if (from.empty() || at == std::string_view::npos) return;
  std::string out;
  std::vector<uint32_t> from_begin, from_end;
  size_t i = 0;
  const auto keep = [&](size_t end) {
    out.append(cur.substr(i, end - i));
    for (; i < end; ++i) {
      from_begin.push_back(static_cast<uint32_t>(i));
      from_end.push_back(static_cast<uint32_t>(i + 1));
    }
  };
  while (at != std::string_view::npos) {
    keep(at);
    out.append(to);
    from_begin.insert(from_begin.end(), to.size(), static_cast<uint32_t>(at));
    from_end.insert(from_end.end(), to.size(), static_cast<uint32_t>(at + from.size()));
    i = at + from.size();
    at = cur.find(from, i);
  }
  keep(cur.size());
  rewrite(std::move(out), from_begin, from_end);
}

void Normalized::rewrite(std::string next, const std::vector<uint32_t>& from_begin,
                         const std::vector<uint32_t>& from_end) {
  // compose with the alignment so far: the current text's byte i comes from the original
  // bytes [cur_begin(i), cur_end(i))
  const size_t n = text().size();
  const auto cur_begin = [&](size_t i) { return changed_ ? begin_[i] : static_cast<uint32_t>(i); };
  const auto cur_end = [&](size_t i) { return changed_ ? end_[i] : static_cast<uint32_t>(i + 1); };
  std::vector<uint32_t> b(next.size()), e(next.size());
  for (size_t k = 0; k < next.size(); ++k) {
    if (from_begin[k] < from_end[k]) {
      b[k] = cur_begin(from_begin[k]);
      e[k] = cur_end(from_end[k] - 1);
    } else {  // inserted: an empty span where the following byte comes from
      const size_t p = from_begin[k];
      b[k] = e[k] = p < n ? cur_begin(p) : n > 0 ? cur_end(n - 1) : 0;
    }
  }
  owned_ = std::move(next);
  begin_ = std::move(b);
  end_ = std::move(e);
  changed_ = true;
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
