// tests/text/unicode_test.cpp: lossy UTF-8 decoding (expected strings are what Python's
// bytes.decode("utf-8", "replace") gives, the same Unicode "maximal subpart" rule), the
// GPT-2 byte alphabet (ids as in GPT-2's and Qwen's vocabularies) and NFC alignment.
#include <catch2/catch.hpp>

#include "runtime/text/normalize.h"
#include "runtime/text/utf8.h"

using namespace ltrun::text;

namespace {
const std::string R = "\xEF\xBF\xBD";  // U+FFFD
std::string lossy(std::string_view bytes) {
  std::string out;
  append_utf8_lossy(bytes, out);
  return out;
}
}  // namespace

TEST_CASE("lossy UTF-8: one U+FFFD per maximal invalid subpart") {
  CHECK(lossy("\xC3") == R);
  CHECK(lossy("a\xE2\x82") == "a" + R);
  CHECK(lossy("\xF0\x9F\x98") == R);
  CHECK(lossy("\xED\xA0\x80") == R + R + R);  // a surrogate
  CHECK(lossy("\xC0\xAF") == R + R);          // overlong
  CHECK(lossy("\xE0\x80\x80") == R + R + R);
  CHECK(lossy("\xF4\x90\x80\x80") == R + R + R + R);  // above U+10FFFF
  CHECK(lossy("\xFF") == R);
  CHECK(lossy("\xE2\x82\xAC\xE2") == "\xE2\x82\xAC" + R);
  CHECK(lossy("\xF0\x9F\x98\x80x") == "\xF0\x9F\x98\x80x");
  CHECK(invalid_utf8_at("ok \xF0\x9F\x98\x80") == std::string_view::npos);
  CHECK(invalid_utf8_at("ok \xF0\x9F\x98") == 3);
}

TEST_CASE("GPT-2 byte alphabet") {
  const auto& a = byte_level();
  CHECK(a.byte_to_char[' '] == "Ġ");   // U+0120
  CHECK(a.byte_to_char['\n'] == "Ċ");  // U+010A
  CHECK(a.byte_to_char['!'] == "!");
  CHECK(a.byte_to_char[0xAD] == "Ń");  // the last of the 68 shifted bytes: U+0143
  CHECK(a.order[0] == '!');            // "!" is id 0 in GPT-2 and Qwen
  int space_id = -1;
  for (int k = 0; k < 256; ++k)
    if (a.order[k] == ' ') space_id = k;
  CHECK(space_id == 220);  // "Ġ" is id 220 in GPT-2 and Qwen
  std::string raw;
  CHECK(byte_level_decode("ĠcafÃ©", raw));
  CHECK(raw == " café");
  CHECK_FALSE(byte_level_decode("€", raw));
}

TEST_CASE("NFC with alignment to the original bytes") {
  const std::string text =
      "x e\xCC\x81 \xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB y";  // e+acute, jamo 한
  const auto n = Normalized::nfc(text);
  CHECK(n.text() == "x é 한 y");
  using Span = std::pair<size_t, size_t>;
  CHECK(n.original_span(0, 1) == Span{0, 1});     // x
  CHECK(n.original_span(2, 4) == Span{2, 5});     // é <- "e" U+0301
  CHECK(n.original_span(2, 3) == Span{2, 5});     // a part of it maps to all of it
  CHECK(n.original_span(5, 8) == Span{6, 15});    // 한 <- three jamo
  CHECK(n.original_span(9, 10) == Span{16, 17});  // y
  CHECK(n.original_span(10, 10) == Span{17, 17});

  const auto same = Normalized::nfc("déjà vu 😀");  // already NFC: the text itself
  CHECK(same.text() == "déjà vu 😀");
  CHECK(same.original_span(1, 2) == std::pair<size_t, size_t>{1, 2});
}
