// runtime/text/decoders.h: Hugging Face's decoders for SentencePiece-style BPE (Replace,
// ByteFallback, Fuse, Strip, Metaspace), applied in order to the token strings of an id list
// (internal to text/). Byte-level BPE decodes in tokenizer.cpp, on raw bytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ltrun::text {

struct DecoderStep {
  enum class Type { Replace, ByteFallback, Fuse, Strip, Metaspace };
  Type type;
  // Replace: every `pattern` in a token becomes `content`. Metaspace: `pattern` is the
  // replacement character, which becomes a space.
  std::string pattern, content;
  // Strip: up to `start` leading and `stop` trailing `strip_char`s leave each token
  uint32_t strip_char = 0;
  size_t start = 0, stop = 0;
  // Metaspace with prepend_scheme "first" or "always": it removes the replacement
  // characters of the first token instead of turning them into spaces
  bool drop_in_first = false;
};

// Each step maps the token list to a new one, as Hugging Face's decode_chain does; the
// caller joins the result.
void apply_decoders(const std::vector<DecoderStep>& steps, std::vector<std::string>& tokens);

// ByteFallback's test for one token: "<0xNN>" -> the byte, else -1.
int fallback_byte(const std::string& token);

}  // namespace ltrun::text
