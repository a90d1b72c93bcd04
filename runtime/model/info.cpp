// runtime/model/info.cpp: describe(): a checkpoint's architecture, parameter counts by part,
// dtypes and size, from its headers.
#include "runtime/model/info.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <set>

#include "runtime/core/env.h"
#include "runtime/io/checkpoint.h"

namespace ltrun::model {

namespace {

std::string grouped(int64_t n) {  // 1234567 -> "1,234,567"
  std::string s = std::to_string(n);
  for (int i = int(s.size()) - 3; i > 0; i -= 3) s.insert(size_t(i), ",");
  return s;
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

}  // namespace

CheckpointInfo describe(const std::string& dir) {
  namespace fs = std::filesystem;
  CheckpointInfo info;
  info.path = dir;
  info.config = read_config(dir);
  const io::Checkpoint ck = io::Checkpoint::open(dir);
  std::set<std::string> dtypes;
  for (const std::string& name : ck.names()) {
    const io::TensorInfo& t = ck.info(name);
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    dtypes.insert(t.dtype);
    // q_norm/k_norm count as norms, not attention: what matters here is matrices vs vectors.
    // "attention" is the token mixer (nemotron_h's Mamba2 and attention layers: .mixer.);
    // nemotron_h's MLP layers keep their up/down projections under .mixer. as well.
    const bool mixer_mlp = contains(name, ".mixer.up_proj") || contains(name, ".mixer.down_proj");
    int64_t& part = contains(name, "norm")                                    ? info.norms
                    : mixer_mlp || contains(name, ".mlp.")                    ? info.mlp
                    : contains(name, ".self_attn.") || contains(name, ".mixer.") ? info.attention
                    : contains(name, "embed_tokens") || contains(name, "embedding") ? info.embeddings
                    : contains(name, "lm_head")                               ? info.head
                                                                              : info.other;
    part += n;
    info.parameters += n;
  }
  info.dtypes = fmt::format("{}", fmt::join(dtypes, ", "));
  if (fs::is_directory(dir)) {
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && e.path().extension() == ".safetensors")
        info.bytes_on_disk += e.file_size();
  } else {
    info.bytes_on_disk = fs::file_size(dir);
  }
  return info;
}

std::string CheckpointInfo::to_string() const {
  const Config& c = config;
  std::string s = fmt::format(
      "{}: {}, {} layers, hidden {}, {} heads ({} kv) of {}, intermediate {}, vocab {}\n"
      "  {} parameters, stored as {} (config: {}), {} on disk\n",
      path, c.model_type, c.n_layers, c.hidden_size, c.n_heads, c.n_kv_heads, c.head_dim,
      c.intermediate_size, c.vocab_size, grouped(parameters), dtypes,
      c.torch_dtype.empty() ? "no torch_dtype" : c.torch_dtype, human_bytes(double(bytes_on_disk)));
  auto row = [&](const char* part, int64_t n, const char* note = "") {
    s += fmt::format("  {:<11}{:>16}  {:5.1f}%{}\n", part, grouped(n),
                     parameters ? 100.0 * double(n) / double(parameters) : 0.0, note);
  };
  row("embeddings", embeddings);
  row("attention", attention);
  row("mlp", mlp);
  row("norms", norms);
  row("head", head, c.tie_word_embeddings ? "  (tied to the embeddings)" : "");
  if (other) row("other", other);
  return s;
}

}  // namespace ltrun::model
