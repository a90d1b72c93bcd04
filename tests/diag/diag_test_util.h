// tests/diag/diag_test_util.h: error checks and small random models for the diag tests.
#pragma once
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <initializer_list>
#include <string>
#include <ATen/core/grad_mode.h>

#include "runtime/core/error.h"
#include "tests/test_util.h"
#include "tests/tiny_spec.h"
#include "runtime/model/tiny.h"

namespace diag_test {

using ltrun_test::require_error;

// A small model whose blocks matter: weights larger than HF's std 0.02 make the lens and the
// perturbations move probabilities well above rounding.
inline ltrun::model::Model sharp_tiny(const std::string& arch, int64_t layers = 4, uint64_t seed = 1) {
  ltrun::model::Model m = ltrun::model::make_tiny(ltrun_test::tiny_spec(arch, layers, seed));
  at::NoGradGuard no_grad;
  for (auto& p : m.parameters())
    if (p.name.find("norm") == std::string::npos) p.tensor.mul_(15);
  return m;
}

}  // namespace diag_test
