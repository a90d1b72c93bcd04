// tests/tiny_spec.h: the small model shape the Catch2 areas share: runs in milliseconds,
// big enough for grouped-query attention (4 heads over 2 kv heads).
#pragma once
#include <cstdint>
#include <string>

#include "runtime/model/tiny.h"

namespace ltrun_test {

inline ltrun::model::TinySpec tiny_spec(const std::string& arch = "qwen3", int64_t layers = 3,
                                        uint64_t seed = 1, int64_t vocab = 61) {
  ltrun::model::TinySpec s;
  s.arch = arch;
  s.layers = layers;
  s.hidden = 32;
  s.heads = 4;
  s.kv_heads = 2;
  s.intermediate = 48;
  s.vocab = vocab;
  s.seed = seed;
  return s;
}

}  // namespace ltrun_test
