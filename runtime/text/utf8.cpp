// runtime/text/utf8.cpp: UTF-8 validation, lossy decoding and the GPT-2 byte alphabet.
#include "runtime/text/utf8.h"

namespace ltrun::text {

namespace {

// Length of the valid UTF-8 sequence at s[i], or the length of its maximal invalid
// subpart negated (Unicode 15, section 3.9, "U+FFFD substitution of maximal subparts").
int sequence_at(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = b(i);
  if (c < 0x80) return 1;
  int need;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    need = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return -1;
  }
  for (int k = 1; k < need; ++k) {
    if (i + k >= s.size()) return -k;
    const uint8_t ck = b(i + k);
    const bool ok = k == 1 ? (ck >= lo && ck <= hi) : (ck >= 0x80 && ck <= 0xBF);
    if (!ok) return -k;
  }
  return need;
}

ByteLevelAlphabet make_byte_level() {
  ByteLevelAlphabet a;
  a.char_to_byte.fill(-1);
  const auto printable = [](int b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
  };
  int n = 0, next_extra = 256;
  for (int b = 0; b < 256; ++b)
    if (printable(b)) a.order[n++] = static_cast<uint8_t>(b);
  for (int b = 0; b < 256; ++b)
    if (!printable(b)) a.order[n++] = static_cast<uint8_t>(b);
  for (int b = 0; b < 256; ++b) {
    const uint32_t cp = printable(b) ? b : next_extra++;
    append_codepoint(cp, a.byte_to_char[b]);
    a.char_to_byte[cp] = static_cast<int16_t>(b);
  }
  return a;
}

}  // namespace

size_t invalid_utf8_at(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    // ASCII fast path: most text is mostly ASCII
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const int n = sequence_at(s, i);
    if (n < 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

void append_utf8_lossy(std::string_view bytes, std::string& out) {
  for (size_t i = 0; i < bytes.size();) {
    const int n = sequence_at(bytes, i);
    if (n > 0) {
      out.append(bytes.data() + i, n);
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      i += -n;
    }
  }
}

void append_codepoint(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

uint32_t next_codepoint(std::string_view s, size_t& i) {
  const auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(s[k])); };
  const uint32_t c = b(i);
  if (c < 0x80) {
    i += 1;
    return c;
  }
  if (c < 0xE0) {
    i += 2;
    return ((c & 0x1F) << 6) | (b(i - 1) & 0x3F);
  }
  if (c < 0xF0) {
    i += 3;
    return ((c & 0x0F) << 12) | ((b(i - 2) & 0x3F) << 6) | (b(i - 1) & 0x3F);
  }
  i += 4;
  return ((c & 0x07) << 18) | ((b(i - 3) & 0x3F) << 12) | ((b(i - 2) & 0x3F) << 6) |
         (b(i - 1) & 0x3F);
}

bool is_white_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

const ByteLevelAlphabet& byte_level() {
  static const ByteLevelAlphabet alphabet = make_byte_level();
  return alphabet;
}

bool byte_level_decode(std::string_view token, std::string& out) {
  const auto& a = byte_level();
  for (size_t i = 0; i < token.size();) {
    const int b = a.byte_of(next_codepoint(token, i));
    if (b < 0) return false;
    out += static_cast<char>(b);
  }
  return true;
}

}  // namespace ltrun::text
