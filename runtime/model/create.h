// runtime/model/create.h: a new model folder a user can start from (`ltrun model new`,
// lt.model.new): a random model of a given architecture and size plus a tokenizer, either
// trained (byte-level BPE) on a small corpus or copied from an existing tokenizer.json.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/fields.h"
#include "runtime/model/tiny.h"

namespace ltrun::model {

struct NewModelSpec {
  TinySpec tiny;                    // tiny.vocab is replaced by the tokenizer's size
  std::string out_dir;
  std::string tokenizer;            // a tokenizer.json (or folder) to copy; "" = train one
  std::vector<std::string> corpus;  // text files or folders to train on; empty = default_corpus()
  int vocab = 1024;                 // when training: the vocabulary size
  int64_t max_corpus_bytes = 4 << 20;
};

struct NewModelResult {
  std::string dir, tokenizer_source;
  int64_t vocab = 0, parameters = 0, corpus_bytes = 0;
};

NewModelResult create_model_dir(const NewModelSpec& spec);

// By key (runtime/core/fields.h), lt.model.new's options: of the tiny spec arch, layers,
// hidden, heads, kv_heads, intermediate, tie (tie_word_embeddings), pattern, chunk
// (1..2^20); of the spec out (out_dir), vocab (>= 1), tokenizer, corpus; its results dir,
// vocab, parameters, tokenizer (tokenizer_source).
const Fields<TinySpec>& tiny_spec_fields();
const Fields<NewModelSpec>& new_model_fields();
const Fields<NewModelResult>& new_model_result_fields();

// English fortunes from Debian's `fortunes` package (real text, a few MB), if installed.
std::vector<std::string> default_corpus();
// Documents of text files / folders: a file is split at lines holding only "%" (the fortune
// format) or kept whole; at most max_bytes in all. Errors name a missing file or bad UTF-8.
std::vector<std::string> read_corpus(const std::vector<std::string>& paths, int64_t max_bytes,
                                     int64_t* bytes_read = nullptr);

}  // namespace ltrun::model
