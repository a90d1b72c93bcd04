// runtime/cli/model_cmd.cpp: `ltrun model new [options] OUT` and `ltrun model info PATH`.
#include <cstdio>

#include "runtime/cli/cli.h"
#include "runtime/core/error.h"
#include "runtime/model/config.h"
#include "runtime/model/create.h"
#include "runtime/model/info.h"

namespace ltrun::cli {
namespace {

const char kModelUsage[] = R"(usage:
  ltrun model new [options] OUT   write a new random model folder (HF layout) with a tokenizer
      --arch qwen3|qwen2|llama (qwen3)   --layers N (4)   --hidden N (64)   --heads N (4)
      --kv-heads N (2)   --intermediate N (3*hidden)   --tie (tie embeddings and head)
      --vocab N (1024): size of the BPE tokenizer trained on --corpus PATH (repeatable;
          files or folders; default: Debian's English fortunes)
      --tokenizer PATH: copy this tokenizer.json instead of training one
      (the global --seed N seeds the weights)
  ltrun model info PATH           architecture, layers, parameters by part, dtype, size
)";

int64_t to_int(const std::string& flag, const std::string& v) {
  LT_CHECK(!v.empty() && v.find_first_not_of("0123456789") == std::string::npos,
           "model new: {} expects a positive integer, got '{}'", flag, v);
  return std::stoll(v);
}

}  // namespace

int cmd_model(const Globals& g, const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kModelUsage, args.empty() ? stderr : stdout);
    return args.empty() ? kExitUsage : kExitOk;
  }
  if (args[0] == "info") {
    LT_CHECK(args.size() == 2, "usage: ltrun model info PATH");
    std::fputs(model::describe(args[1]).to_string().c_str(), stdout);
    return kExitOk;
  }
  LT_CHECK(args[0] == "new", "model: unknown subcommand '{}' (new, info)", args[0]);
  model::NewModelSpec s;
  if (g.seed) s.tiny.seed = *g.seed;
  for (size_t i = 1; i < args.size(); i++) {
    std::string a = args[i], v;
    const auto eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
      v = a.substr(eq + 1);
      a = a.substr(0, eq);
    }
    auto value = [&]() -> std::string {
      if (!v.empty()) return v;
      LT_CHECK(i + 1 < args.size(), "model new: {} needs a value", a);
      return args[++i];
    };
    if (a == "--arch") s.tiny.arch = value();
    else if (a == "--layers") s.tiny.layers = to_int(a, value());
    else if (a == "--hidden") s.tiny.hidden = to_int(a, value());
    else if (a == "--heads") s.tiny.heads = to_int(a, value());
    else if (a == "--kv-heads") s.tiny.kv_heads = to_int(a, value());
    else if (a == "--intermediate") s.tiny.intermediate = to_int(a, value());
    else if (a == "--vocab") s.vocab = int(to_int(a, value()));
    else if (a == "--corpus") s.corpus.push_back(value());
    else if (a == "--tokenizer") s.tokenizer = value();
    else if (a == "--tie") s.tiny.tie_word_embeddings = true;
    else if (a.rfind("--", 0) == 0) fail("model new: unknown option {}\n{}", a, kModelUsage);
    else if (s.out_dir.empty()) s.out_dir = a;
    else fail("model new: one output folder, got '{}' and '{}'", s.out_dir, a);
  }
  LT_CHECK(!s.out_dir.empty(), "model new: the output folder is missing\n{}", kModelUsage);
  auto r = model::create_model_dir(s);
  std::printf("wrote %s: %s, %lld layers, hidden %lld, %lld parameters, vocab %lld (tokenizer %s)\n",
              r.dir.c_str(), s.tiny.arch.c_str(), (long long)s.tiny.layers, (long long)s.tiny.hidden,
              (long long)r.parameters, (long long)r.vocab, r.tokenizer_source.c_str());
  return kExitOk;
}

}  // namespace ltrun::cli
