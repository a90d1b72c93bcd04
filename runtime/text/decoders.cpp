// runtime/text/decoders.cpp: the decode_chain of Hugging Face's SentencePiece-era decoders,
// rule for rule (the cases where they differ from a plain "undo the encoder" are noted).
#include "runtime/text/decoders.h"

#include <string_view>

#include "runtime/text/utf8.h"

namespace ltrun::text {

namespace {

constexpr const char* kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  std::string out;
  size_t i = 0;
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, i)) {
    out.append(s, i, at - i).append(to);
    i = at + from.size();
  }
  return out.append(s, i, std::string::npos);
}

std::vector<std::string> byte_fallback(std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  std::string run;  // bytes of consecutive <0xNN> tokens
  const auto flush = [&] {
    if (run.empty()) return;
    // a run that is not valid UTF-8 becomes one U+FFFD per byte, not per maximal invalid
    // subpart: Hugging Face's rule, unlike the byte-level decoder's
    if (invalid_utf8_at(run) == std::string::npos) {
      out.push_back(run);
    } else {
      for (size_t k = 0; k < run.size(); ++k) out.emplace_back(kReplacementChar);
    }
    run.clear();
  };
  for (auto& token : tokens) {
    const int byte = fallback_byte(token);
    if (byte >= 0) {
      run += static_cast<char>(byte);
      continue;
    }
    flush();
    out.push_back(std::move(token));
  }
  flush();
  return out;
}

std::string strip(const std::string& token, uint32_t c, size_t start, size_t stop) {
  std::vector<std::pair<size_t, uint32_t>> chars;  // byte offset, code point
  for (size_t i = 0; i < token.size();) {
    const size_t at = i;
    chars.emplace_back(at, next_codepoint(token, i));
  }
  size_t first = 0, last = chars.size();
  while (first < start && first < chars.size() && chars[first].second == c) ++first;
  for (size_t k = 0; k < stop && last > first && chars[last - 1].second == c; ++k) --last;
  // (Hugging Face panics where the two cuts overlap, e.g. start 2 on a token of one
  // such character; here the token becomes empty)
  if (first >= last) return {};
  const size_t b = chars[first].first;
  const size_t e = last < chars.size() ? chars[last].first : token.size();
  return token.substr(b, e - b);
}

}  // namespace

int fallback_byte(const std::string& token) {
  if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') return -1;
  // Rust's u8::from_str_radix(.., 16), which Hugging Face uses, also takes a leading '+'
  if (token[3] == '+') return hex_digit(token[4]);
  const int hi = hex_digit(token[3]), lo = hex_digit(token[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

void apply_decoders(const std::vector<DecoderStep>& steps, std::vector<std::string>& tokens) {
  for (const DecoderStep& step : steps) {
    switch (step.type) {
      case DecoderStep::Type::Replace:
        for (auto& t : tokens) t = replace_all(t, step.pattern, step.content);
        break;
      case DecoderStep::Type::ByteFallback:
        tokens = byte_fallback(tokens);
        break;
      case DecoderStep::Type::Fuse: {
        std::string all;
        for (const auto& t : tokens) all += t;
        tokens.assign(1, std::move(all));
        break;
      }
      case DecoderStep::Type::Strip:
        for (auto& t : tokens) t = strip(t, step.strip_char, step.start, step.stop);
        break;
      case DecoderStep::Type::Metaspace:
        // every replacement character of the first token goes, not just a leading one:
        // Hugging Face's rule (the first token is the first in the list, an added token too)
        for (size_t i = 0; i < tokens.size(); ++i)
          tokens[i] = replace_all(tokens[i], step.pattern, i == 0 && step.drop_in_first ? "" : " ");
        break;
    }
  }
}

}  // namespace ltrun::text
