// runtime/cli/data_cmd.cpp: `ltrun data pack --tokenizer PATH --out DIR [--field text]
// [--val 0.01] [--seed N] [--eos TOKEN] INPUT...` and `ltrun data info DIR`.
#include <fmt/format.h>

#include <cstdio>

#include "runtime/cli/cli.h"
#include "runtime/core/error.h"
#include "runtime/data/corpus.h"

namespace ltrun::cli {
namespace {

const char kDataUsage[] = R"(usage:
  ltrun data pack --tokenizer PATH --out DIR [options] INPUT...
      tokenize text files, .jsonl files and folders into uint32 token shards + index.json
      (EOS after every document; documents split train/validation)
      --field NAME (text)   the JSONL field holding a document
      --val FRACTION (0.01) share of documents for validation
      --eos TOKEN           EOS token (default <|endoftext|>)
      --max-bytes N         read at most N bytes of text
      (the global --seed N picks the validation documents)
  ltrun data info DIR     tokens per split of a packed corpus
)";

}  // namespace

int cmd_data(const Globals& g, const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kDataUsage, args.empty() ? stderr : stdout);
    return args.empty() ? kExitUsage : kExitOk;
  }
  if (args[0] == "info") {
    LT_CHECK(args.size() == 2, "usage: ltrun data info DIR");
    const data::Corpus c = data::Corpus::open(args[1]);
    fmt::print("{}: train {} tokens, val {} tokens, vocab {}, eos id {}\n", args[1],
               c.tokens("train"), c.tokens("val"), c.vocab_size(), c.eos_id());
    return kExitOk;
  }
  LT_CHECK(args[0] == "pack", "data: unknown subcommand '{}' (pack, info)", args[0]);
  data::PackOptions o;
  if (g.seed) o.seed = *g.seed;
  ArgReader a(args, 1, "data pack");
  while (a.next()) {
    const std::string& k = a.key();
    if (k == "--tokenizer") o.tokenizer = a.value();
    else if (k == "--out") o.out_dir = a.value();
    else if (k == "--field") o.field = a.value();
    else if (k == "--eos") o.eos = a.value();
    else if (k == "--val") {
      const std::string v = a.value();
      try {
        o.val_fraction = std::stod(v);
      } catch (const std::exception&) {
        fail("data pack: --val expects a fraction, got '{}'", v);
      }
    } else if (k == "--max-bytes") {
      o.max_bytes = a.integer();
    } else if (a.is_option()) {
      fail("data pack: unknown option {} (see ltrun data --help)", k);
    } else {
      o.inputs.push_back(k);
    }
  }
  LT_CHECK(!o.tokenizer.empty(), "data pack: --tokenizer PATH is required");
  LT_CHECK(!o.out_dir.empty(), "data pack: --out DIR is required");
  LT_CHECK(!o.inputs.empty(), "data pack: no INPUT files or folders given");
  const data::PackResult r = data::pack(o);
  fmt::print("{}: {} documents ({} bytes) -> train {} tokens ({} docs), val {} tokens ({} docs) "
             "in {:.1f}s ({:.0f} tokens/s)\n",
             r.out_dir, r.documents, r.bytes, r.train_tokens, r.train_documents, r.val_tokens,
             r.val_documents, r.seconds, double(r.train_tokens + r.val_tokens) / std::max(r.seconds, 1e-9));
  return kExitOk;
}

}  // namespace ltrun::cli
