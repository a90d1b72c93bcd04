// runtime/text/tokenizer.h: text <-> token ids with a Hugging Face tokenizer.json (byte-level
// BPE: Qwen2/2.5/3, Llama 3, GPT-2; SentencePiece-style BPE with byte fallback: Llama 2,
// TinyLlama, Mistral v0.1, in the legacy Prepend/Replace layout or with a Metaspace
// pre-tokenizer), and a BPE trainer that writes a byte-level one.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ltrun::text {

// Ids of one text plus, for each token, the bytes [begin, end) of the original text it
// covers. Byte-exact: a token holding part of a multi-byte character covers just those
// bytes, and the spans of plain text tokens tile the text in order. Where NFC changed the
// text (e.g. "e" + U+0301 -> "é"), tokens map to the whole changed segment. A "▁" that
// Prepend or Metaspace inserted stands for no byte: alone it is the empty span where the
// text it precedes begins, and a token starting with it ("▁Hello") starts at that text;
// a "▁" that replaced a space covers the space. A byte-fallback token (<0xC3>) covers its
// byte, an <unk> the characters it stands for. Tokens the post-processor adds (e.g.
// <|begin_of_text|>, <s>) have the empty span [0, 0).
struct Encoding {
  struct Span {
    size_t begin, end;
  };
  std::vector<int32_t> ids;
  std::vector<Span> offsets;
};

class Tokenizer {
 public:
  // A tokenizer.json, or a folder holding one. Errors name the file and the JSON path.
  static Tokenizer load(const std::string& file_or_dir);

  // add_special_tokens: apply the post-processor's template (Llama 3 prepends
  // <|begin_of_text|>; Qwen adds nothing; Llama 2 <s>). Special tokens written in the text
  // are always recognised. The text must be valid UTF-8. A character (SentencePiece style)
  // or byte (byte-level) without a token, byte fallback or unk_token is an error, where
  // Hugging Face would drop it silently.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const;
  Encoding encode_with_offsets(std::string_view text, bool add_special_tokens = true) const;
  // Encodes on several threads; same results as encode() one by one.
  std::vector<std::vector<int32_t>> encode_batch(const std::vector<std::string>& texts,
                                                 bool add_special_tokens = true) const;

  // Ids without a token (e.g. padding rows of an embedding) are skipped, as Hugging Face
  // does. Byte sequences that are not valid UTF-8 become U+FFFD (byte-level: one per
  // maximal invalid subpart; ByteFallback: one per byte of an invalid run of <0xNN>, as
  // Hugging Face does). SentencePiece style: added tokens go through the decoders too, so
  // Llama 2's [<s>, ▁Hi] decodes to "<s> Hi" and, skipping special tokens, to "Hi".
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = false) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  std::string id_to_token(int32_t id) const;  // error if no token has this id
  int32_t vocab_size() const;                 // incl. added tokens (max id + 1)
  std::vector<int32_t> special_ids() const;   // added tokens marked special, ascending
  const std::string& path() const;            // the tokenizer.json loaded

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;  // immutable after load: copies share it
};

// BPE training on a small corpus, written as a Qwen-like tokenizer.json: NFC, Qwen's split
// regex, byte-level BPE whose vocabulary always holds the 256 byte tokens (so any text
// encodes), special tokens as added tokens after them. vocab_size counts all of these;
// training stops early when no pair occurs min_frequency times. Deterministic: the same
// input gives a byte-identical file.
struct BpeTrainOptions {
  int vocab_size = 1024;
  std::vector<std::string> special_tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  int min_frequency = 2;
};
void train_bpe(const std::vector<std::string>& texts, const BpeTrainOptions& options,
               const std::string& out_tokenizer_json);

}  // namespace ltrun::text
