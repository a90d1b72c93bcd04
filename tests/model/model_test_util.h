// tests/model/model_test_util.h: scratch folders, tiny models and error checks for the model tests.
#pragma once
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <ATen/core/grad_mode.h>

#include "runtime/core/error.h"
#include "tests/test_util.h"
#include "tests/tiny_spec.h"
#include "runtime/model/tiny.h"

namespace model_test {

// A fresh, empty folder under $LTRUN_TEST_TMP (or /tmp) for one test.
inline std::string scratch(const std::string& name) { return ltrun_test::scratch_dir("model", name); }

// Small enough to run in milliseconds, big enough for GQA (4 heads over 2 kv heads).
inline ltrun::model::TinySpec spec(const std::string& arch, uint64_t seed = 1) {
  return ltrun_test::tiny_spec(arch, 3, seed);
}

// Random weights (std 0.02) make near-uniform logits; larger ones make the tests see
// attention and MLP contributions well above rounding.
inline ltrun::model::Model sharp_tiny(const ltrun::model::TinySpec& s,
                                      c10::ScalarType dtype = c10::kFloat) {
  ltrun::model::Model m = ltrun::model::make_tiny(s, c10::kCPU, dtype);
  at::NoGradGuard no_grad;
  for (auto& p : m.parameters())
    if (p.name.find("norm") == std::string::npos)
      p.tensor.mul_(15);
    else
      p.tensor.add_(at::rand(p.tensor.sizes(), p.tensor.options()) * 0.5 - 0.25);
  return m;
}

// The layer kinds that keep a decode state besides attention, as sharp tiny models: Mamba2
// (nemotron_h M*-M) and Gated DeltaNet with gated attention (qwen3_5_text LLA, chunk 4, its
// weights scaled up so that the recurrence is well above rounding). Named for test sections.
struct KindModel {
  std::string name;
  ltrun::model::Model m;
};
inline std::vector<KindModel> recurrent_kinds() {
  std::vector<KindModel> out;
  ltrun::model::TinySpec nh = spec("nemotron_h");
  nh.pattern = "M*-M";
  nh.layers = 4;
  out.push_back({"mamba2 + attention (nemotron_h M*-M)", sharp_tiny(nh)});
  ltrun::model::TinySpec q = spec("qwen3_5_text");
  q.pattern = "LLA";
  ltrun::model::Config c = ltrun::model::tiny_config(q);
  c.gdn.chunk = 4;
  ltrun::model::Model qm = ltrun::model::Model::init(c, 1);
  {
    at::NoGradGuard no_grad;
    for (auto& p : qm.parameters())
      if (p.decay) p.tensor.mul_(12);
  }
  out.push_back({"gated deltanet + attention (qwen3_5_text LLA)", std::move(qm)});
  return out;
}

inline at::Tensor random_ids(int64_t B, int64_t T, int64_t vocab, uint64_t seed) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  return at::randint(vocab, {B, T}, g, at::kLong);
}

// max |a - b| / max |b|.
// The error budget of tests/model's fp32 comparisons: two computations of the same outputs in
// other summation orders (a padded batch, a decode state, chunks, a double reference) differ by
// about sqrt(K) x 2^-24 relative per dot product of length K (<= 61 here: vocabulary,
// intermediate and hidden widths), compounded over <= 4 layers: ~2e-6 of the largest |value|.
// rel_err < 1e-5 is five times that; 2e-5 where a variant adds biases of std 0.5. In double
// (2^-53) the same sums are good to ~1e-15, so 1e-12 leaves a thousandfold margin.
inline double rel_err(const at::Tensor& a, const at::Tensor& b) {
  const double scale = b.abs().max().item<double>();
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>() /
         (scale > 0 ? scale : 1);
}

using ltrun_test::require_error;

}  // namespace model_test
