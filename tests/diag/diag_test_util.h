// tests/diag/diag_test_util.h: error checks and small random models for the diag tests.
#pragma once
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <initializer_list>
#include <string>

#include "runtime/core/error.h"
#include "runtime/model/tiny.h"

namespace diag_test {

// Runs `f` and requires an ltrun::Error whose message contains each of `parts`.
template <class F>
void require_error(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
  } catch (const ltrun::Error& e) {
    const std::string msg = e.what();
    INFO("message: " << msg);
    for (const auto& p : parts) CHECK(msg.find(p) != std::string::npos);
    return;
  } catch (const std::exception& e) {
    FAIL("expected ltrun::Error, got another exception: " << e.what());
  }
  FAIL("expected ltrun::Error, nothing was thrown");
}

// A small model whose blocks matter: weights larger than HF's std 0.02 make the lens and the
// perturbations move probabilities well above rounding.
inline ltrun::model::Model sharp_tiny(const std::string& arch, int64_t layers = 4, uint64_t seed = 1) {
  ltrun::model::TinySpec s;
  s.arch = arch;
  s.layers = layers;
  s.hidden = 32;
  s.heads = 4;
  s.kv_heads = 2;
  s.intermediate = 48;
  s.vocab = 61;
  s.seed = seed;
  ltrun::model::Model m = ltrun::model::make_tiny(s);
  at::NoGradGuard no_grad;
  for (auto& p : m.parameters())
    if (p.name.find("norm") == std::string::npos) p.tensor.mul_(15);
  return m;
}

}  // namespace diag_test
