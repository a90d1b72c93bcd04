// runtime/data/corpus.h: a tokenized corpus on disk: packing text files, JSONL and folders
// into uint32 token shards plus index.json (EOS between documents, train/validation split
// by document), memory-mapped reading, and deterministic shuffled windows of seq_len + 1.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/fields.h"

namespace ltrun::data {

struct PackOptions {
  std::string tokenizer;            // tokenizer.json or a folder holding one
  std::vector<std::string> inputs;  // text files, .jsonl files, folders (recursively)
  std::string out_dir;
  std::string field = "text";       // the JSONL field holding a document
  double val_fraction = 0.01;       // share of documents in the validation split
  uint64_t seed = 0;                // which documents go to validation
  std::string eos;                  // EOS token text; "" = <|endoftext|>, else the first special
  int64_t shard_tokens = 64 << 20;  // tokens per shard file at most
  int64_t max_bytes = 0;            // stop after documents of this many bytes (0: all)
  bool progress = true;             // documents and tokens/s on stderr
};

struct PackResult {
  std::string out_dir;
  int64_t documents = 0, train_documents = 0, val_documents = 0;
  int64_t train_tokens = 0, val_tokens = 0, bytes = 0;
  int32_t eos_id = 0;
  double seconds = 0;
};

// By key (runtime/core/fields.h): the options tokenizer, out (out_dir), field, val
// (val_fraction), eos, max_bytes, shard_tokens, progress (inputs and seed are the caller's);
// the results dir (out_dir), documents, train_documents, val_documents, train_tokens,
// val_tokens, bytes, eos_id, seconds.
const Fields<PackOptions>& pack_option_fields();
const Fields<PackResult>& pack_result_fields();

// Documents of the inputs. A text file is split at lines holding only "%" (the fortune
// format) or kept whole; in .jsonl every line is an object whose `field` is a document;
// folders are walked in name order, skipping hidden files and *.dat (fortune indexes).
// Errors name the file: missing, empty, not UTF-8, bad JSON line (with its number).
std::vector<std::string> read_documents(const std::vector<std::string>& inputs,
                                        const std::string& field, int64_t max_bytes = 0,
                                        int64_t* bytes_read = nullptr);

PackResult pack(const PackOptions& o);

// A packed corpus, memory-mapped.
class Corpus {
 public:
  static Corpus open(const std::string& dir);  // reads index.json, maps the shards
  int64_t tokens(const std::string& split) const;  // "train" | "val"
  int32_t eos_id() const;
  int64_t vocab_size() const;
  const std::string& dir() const;
  // The tokens [begin, begin + n) of a split as int64 (a copy); error past the end.
  at::Tensor slice(const std::string& split, int64_t begin, int64_t n) const;

  struct State;

 private:
  std::shared_ptr<const State> s_;
};

// Windows of seq_len + 1 tokens starting every seq_len tokens of a split, visited in a
// shuffled order that depends only on (seed, epoch); the cursor counts windows handed out,
// so a saved cursor resumes the exact sequence.
class Windows {
 public:
  Windows(Corpus c, std::string split, int64_t seq_len, uint64_t seed, bool shuffle = true);
  int64_t count() const { return n_; }  // windows per epoch
  at::Tensor next(int64_t batch);       // int64 [batch, seq_len + 1]
  at::Tensor get(int64_t i) const;      // window i of the epoch order (unshuffled index)
  uint64_t cursor() const { return cursor_; }
  void seek(uint64_t c) { cursor_ = c; }

 private:
  int64_t order(uint64_t k);  // window index of the k-th handed out
  Corpus c_;
  std::string split_;
  int64_t seq_len_, n_;
  uint64_t seed_, cursor_ = 0;
  bool shuffle_;
  int64_t perm_epoch_ = -1;
  std::vector<int64_t> perm_;
};

// The held-out batches of a split, in order (unshuffled): up to n_batches batches of up to
// batch windows each, int64 [b, seq_len + 1]; empty when the split has no window.
std::vector<at::Tensor> validation_batches(const Corpus& c, const std::string& split, int64_t seq_len,
                                           int64_t batch, int64_t n_batches);

}  // namespace ltrun::data
