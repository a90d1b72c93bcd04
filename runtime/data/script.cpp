// runtime/data/script.cpp: lt.data's functions over script values (runtime/data/script.h).
#include "runtime/data/script.h"

#include <ATen/ATen.h>

#include "runtime/core/run_context.h"
#include "runtime/data/corpus.h"

namespace ltrun::data {
namespace {

std::vector<std::string> paths(const Options& o, const char* key) {
  const Value& x = o[key];
  if (x.is_nil()) return {};
  if (x.is_string()) return {x.str()};
  if (!x.is_table()) fail("{}: option {}: expected a path or a list of paths, got {}", o.fn(), key, x.type_name());
  return strings_of(x, o.fn(), key);
}

// lt.data.pack{tokenizer = PATH, inputs = {PATHS} | PATH, out = DIR, field = "text",
//              val = 0.01, seed = (stream "data.pack"), eos = TOKEN, max_bytes = 0, shard_tokens =, progress =}
const ApiDoc& kPack = declare_api(
    {"lt.data.pack", "lt.data.pack{tokenizer=PATH, inputs=PATHS, out=DIR, ...} → {dir=, documents=, ...}",
     "tokenizes text files (.txt, .jsonl) into token shards with a validation split",
     {{"tokenizer", "string", "a tokenizer.json or a model folder (required)"},
      {"inputs", "string|strings", "text or JSONL files"},
      {"input", "string|strings", "the same as inputs"},
      {"out", "string", "the folder to write (required)"},
      {"field", "string", "the JSONL field holding the text (default \"text\")"},
      {"val", "number", "fraction of documents for validation (default 0.01)"},
      {"seed", "integer", "split seed (default: the run's stream \"data.pack\")"},
      {"eos", "string", "the EOS token appended after each document (default <|endoftext|>)"},
      {"max_bytes", "integer", "stop after this many input bytes (0: all)"},
      {"shard_tokens", "integer", "tokens per shard file at most"},
      {"progress", "boolean", "documents and tokens/s on stderr (default true)"}}});

List pack_fn(const Args& a) {
  a.table(1);
  const Options opts = a.options(1);
  PackOptions o;
  opts.check(kPack).read(o, pack_option_fields());
  LT_CHECK(!o.tokenizer.empty(), "{}: option tokenizer (a tokenizer.json or model folder) is required", a.fn());
  LT_CHECK(!o.out_dir.empty(), "{}: option out (the folder to write) is required", a.fn());
  o.inputs = paths(opts, "inputs");
  if (o.inputs.empty()) o.inputs = paths(opts, "input");
  o.seed = opts.seed(a.run().stream("data.pack"));
  return {Value::record(pack(o), pack_result_fields())};
}

// lt.data.info(DIR) → {train_tokens =, val_tokens =, eos_id =, vocab_size =}
List info(const Args& a) {
  const Corpus c = Corpus::open(a.string(1));
  return {Value::table().set("train_tokens", c.tokens("train")).set("val_tokens", c.tokens("val"))
              .set("eos_id", c.eos_id()).set("vocab_size", c.vocab_size())};
}

// lt.data.windows(DIR, {split = "train", seq_len = 128, n = 8, cursor = 0,
//                       seed = (stream "data.windows"),
//                       shuffle = true}) → int64 tensor [n, seq_len + 1]
const ApiDoc& kWindows = declare_api(
    {"lt.data.windows", "lt.data.windows(dir[, opts]) → int64 tensor [n, seq_len + 1]", "token windows of a packed corpus",
     {{"split", "string", "train | val (default train)"},
      {"seq_len", "integer", "tokens per window, one more is returned (default 128)"},
      {"n", "integer", "windows (default 8; -1: all)"},
      {"seed", "integer", "order seed (default: the run's stream \"data.windows\")"},
      {"cursor", "integer", "windows to skip first (default 0)"},
      {"shuffle", "boolean", "shuffled order (default: true for train)"}}});

List windows(const Args& a) {
  const Options o = a.options(2).check(kWindows);
  const Corpus c = Corpus::open(a.string(1));
  const std::string split = o.string("split").value_or("train");
  Windows w(c, split, o.integer("seq_len").value_or(128), o.seed(a.run().stream("data.windows")),
            o.boolean("shuffle").value_or(split == "train"));
  w.seek(uint64_t(o.integer("cursor").value_or(0)));
  int64_t n = o.integer("n").value_or(8);
  if (n < 0) n = w.count();
  return {w.next(n)};
}

}  // namespace

const std::vector<ScriptFunction>& script_functions() {
  static const std::vector<ScriptFunction> fs = {
      {"lt.data.pack", pack_fn}, {"lt.data.info", info}, {"lt.data.windows", windows}};
  return fs;
}

}  // namespace ltrun::data
