// runtime/text/utf8.h: UTF-8 helpers and the GPT-2 byte-level alphabet (internal to text/).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ltrun::text {

// Byte offset of the first invalid UTF-8 sequence in s, or npos when s is valid.
size_t invalid_utf8_at(std::string_view s);

// Appends bytes as UTF-8, replacing each maximal invalid subpart with U+FFFD: the rule of
// Rust's String::from_utf8_lossy and of WHATWG TextDecoder, so decode matches both.
void append_utf8_lossy(std::string_view bytes, std::string& out);

void append_codepoint(uint32_t cp, std::string& out);

// Decodes the code point at s[i] (s must be valid UTF-8) and advances i past it.
uint32_t next_codepoint(std::string_view s, size_t& i);

// Unicode White_Space (Rust's char::is_whitespace), used for added tokens' lstrip/rstrip.
bool is_white_space(uint32_t cp);

// GPT-2's bytes_to_unicode: every byte is shown as one printable character, so that
// byte-level vocabularies are valid JSON strings ("Ġ" is the space byte 0x20).
struct ByteLevelAlphabet {
  std::array<std::string, 256> byte_to_char;  // UTF-8 of the character for each byte
  std::array<uint8_t, 256> order;             // bytes in GPT-2's order (printable first)
  // the byte a character stands for, or -1 (characters are all below U+0144)
  int byte_of(uint32_t cp) const { return cp < char_to_byte.size() ? char_to_byte[cp] : -1; }
  std::array<int16_t, 324> char_to_byte;
};
const ByteLevelAlphabet& byte_level();

// Appends the raw bytes a byte-level token stands for (token: valid UTF-8); false if it
// has a character outside the alphabet.
bool byte_level_decode(std::string_view token, std::string& out);

}  // namespace ltrun::text
