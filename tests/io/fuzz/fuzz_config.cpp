// tests/io/fuzz/fuzz_config.cpp: libFuzzer entry point for config.json parsing. Built like
// fuzz_safetensors (runtime/io/CMakeLists.txt, -DLTRUN_FUZZ=ON in a clang build); seed it
// with config.json files (tests/io/fuzz/seeds/config). Beyond "no crash" it checks the
// promise of parse_config: a config that parses gives finite RoPE frequencies and a finite,
// positive attention factor (issue 12: values that gave NaN logits now fail with the key),
// and abort()s otherwise, which libFuzzer reports.
#include <ATen/ATen.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/core/error.h"
#include "runtime/model/blocks.h"
#include "runtime/model/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  ltrun::model::Config c;
  try {
    c = ltrun::model::parse_config(text, "fuzz/config.json");
  } catch (const ltrun::Error&) {  // a rejected file: fine
    return 0;
  }
  ltrun::model::RopeFreqs f;
  try {
    f = ltrun::model::rope_freqs(c.rope_scaling, c.rope_theta, c.head_dim, c.max_position_embeddings);
  } catch (const ltrun::Error&) {  // refused when the model is built: an error, fine
    return 0;
  }
  const bool finite = at::isfinite(f.inv_freq).all().item<bool>();
  if (!finite || !std::isfinite(f.attention_factor) || f.attention_factor <= 0 || !(c.rms_norm_eps > 0)) {
    std::fprintf(stderr, "config accepted but RoPE/norm give NaN or inf: %s\n", text.c_str());
    std::abort();
  }
  return 0;
}
