// runtime/cli/model_cmd.cpp: `ltrun model new [options] OUT`, `ltrun model hybrid OUT ...` and
// `ltrun model info PATH`.
#include <cstdio>

#include "runtime/cli/cli.h"
#include "runtime/core/error.h"
#include "runtime/model/config.h"
#include "runtime/model/create.h"
#include "runtime/model/assemble.h"
#include "runtime/model/info.h"

namespace ltrun::cli {
namespace {

const char kModelUsage[] = R"(usage:
  ltrun model new [options] OUT   write a new random model folder (HF layout) with a tokenizer
      --arch qwen3|qwen2|llama|nemotron_h|qwen3_5_text (qwen3)   --layers N (4)   --hidden N (64)
      --heads N (4)   --kv-heads N (2)   --head-dim N (hidden/heads)   --intermediate N (3*hidden)
      --tie (tie embeddings and head)
      --pattern M*- (nemotron_h: each layer's kind, M Mamba2, * attention, - MLP;
          qwen3_5_text: L Gated DeltaNet, A attention; default every fourth layer A)
      --vocab N (1024): size of the BPE tokenizer trained on --corpus PATH (repeatable;
          files or folders; default: Debian's English fortunes)
      --tokenizer PATH: copy this tokenizer.json instead of training one
      (the global --seed N seeds the weights)
  ltrun model hybrid OUT --embed DIR [--head DIR] --layers SPEC [--no-native]
                                  a stack assembled from donor checkpoints (HF layout)
      --layers: comma-separated DIR:I or DIR:I-J (donor layers, copied) and KIND or KIND@DIR
          (a fresh layer: decoder, mamba, attention, mlp, ... with DIR's config, HF's init),
          e.g. --layers models/nh:0-3,models/q:4-7
      --embed DIR: embeddings and tokenizer; --head DIR: final norm and LM head (default: embed)
      --no-native: always write the ltrun_hybrid config (default: the architecture's own
          config when the stack is one architecture, e.g. nemotron_h)
      (the global --seed N seeds fresh layers)
  ltrun model info PATH           architecture, layers, parameters by part, dtype, size
)";

int cmd_model_hybrid(const Globals& g, const std::vector<std::string>& args) {
  model::HybridSpec s;
  if (g.seed) s.seed = *g.seed;
  ArgReader a(args, 1, "model hybrid");
  while (a.next()) {
    const std::string& k = a.key();
    if (k == "--embed") s.embed = a.value();
    else if (k == "--head") s.head = a.value();
    else if (k == "--layers") {
      for (auto& l : model::parse_hybrid_layers(a.value())) s.layers.push_back(std::move(l));
    } else if (k == "--no-native") s.native = false;
    else if (a.is_option()) fail("model hybrid: unknown option {}\n{}", k, kModelUsage);
    else if (s.out_dir.empty()) s.out_dir = k;
    else fail("model hybrid: one output folder, got '{}' and '{}'", s.out_dir, k);
  }
  LT_CHECK(!s.out_dir.empty(), "model hybrid: the output folder is missing\n{}", kModelUsage);
  LT_CHECK(!s.embed.empty(), "model hybrid: --embed DIR (the embeddings' donor) is missing");
  const model::HybridResult r = model::assemble_hybrid(s);
  std::string kinds;
  for (size_t l = 0; l < r.layer_types.size(); ++l) kinds += (l ? "," : "") + r.layer_types[l];
  std::printf("wrote %s: %s, %lld layers (%s), %lld parameters (%s), %zu tensors copied, %zu fresh layers\n",
              r.dir.c_str(), r.model_type.c_str(), (long long)r.n_layers, kinds.c_str(),
              (long long)r.parameters, r.dtype.c_str(), r.copied.size(), r.fresh_layers.size());
  return kExitOk;
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
  if (args[0] == "hybrid") return cmd_model_hybrid(g, args);
  LT_CHECK(args[0] == "new", "model: unknown subcommand '{}' (new, hybrid, info)", args[0]);
  model::NewModelSpec s;
  if (g.seed) s.tiny.seed = *g.seed;
  ArgReader a(args, 1, "model new");
  while (a.next()) {
    const std::string& k = a.key();
    if (k == "--arch") s.tiny.arch = a.value();
    else if (k == "--layers") s.tiny.layers = a.integer();
    else if (k == "--hidden") s.tiny.hidden = a.integer();
    else if (k == "--heads") s.tiny.heads = a.integer();
    else if (k == "--kv-heads") s.tiny.kv_heads = a.integer();
    else if (k == "--intermediate") s.tiny.intermediate = a.integer();
    else if (k == "--head-dim") s.tiny.head_dim = a.integer();
    else if (k == "--vocab") s.vocab = int(a.integer());
    else if (k == "--corpus") s.corpus.push_back(a.value());
    else if (k == "--tokenizer") s.tokenizer = a.value();
    else if (k == "--tie") s.tiny.tie_word_embeddings = true;
    else if (k == "--pattern") s.tiny.pattern = a.value();
    else if (a.is_option()) fail("model new: unknown option {}\n{}", k, kModelUsage);
    else if (s.out_dir.empty()) s.out_dir = k;
    else fail("model new: one output folder, got '{}' and '{}'", s.out_dir, k);
  }
  LT_CHECK(!s.out_dir.empty(), "model new: the output folder is missing\n{}", kModelUsage);
  auto r = model::create_model_dir(s);
  std::printf("wrote %s: %s, %lld layers, hidden %lld, %lld parameters, vocab %lld (tokenizer %s)\n",
              r.dir.c_str(), s.tiny.arch.c_str(),
              (long long)(s.tiny.pattern.empty() ? s.tiny.layers : int64_t(s.tiny.pattern.size())),
              (long long)s.tiny.hidden,
              (long long)r.parameters, (long long)r.vocab, r.tokenizer_source.c_str());
  return kExitOk;
}

}  // namespace ltrun::cli
