// tests/model/model_test_util.h: scratch folders, tiny models and error checks for the model tests.
#pragma once
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <string>

#include "runtime/core/error.h"
#include "runtime/model/tiny.h"

namespace model_test {

// A fresh, empty folder under $LTRUN_TEST_TMP (or /tmp) for one test.
inline std::string scratch(const std::string& name) {
  const char* root = std::getenv("LTRUN_TEST_TMP");
  auto dir = std::filesystem::path(root && *root ? root : "/tmp") / "model" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// Small enough to run in milliseconds, big enough for GQA (4 heads over 2 kv heads).
inline ltrun::model::TinySpec spec(const std::string& arch, uint64_t seed = 1) {
  ltrun::model::TinySpec s;
  s.arch = arch;
  s.layers = 3;
  s.hidden = 32;
  s.heads = 4;
  s.kv_heads = 2;
  s.intermediate = 48;
  s.vocab = 61;
  s.seed = seed;
  return s;
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

inline at::Tensor random_ids(int64_t B, int64_t T, int64_t vocab, uint64_t seed) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  return at::randint(vocab, {B, T}, g, at::kLong);
}

// max |a - b| / max |b|
inline double rel_err(const at::Tensor& a, const at::Tensor& b) {
  const double scale = b.abs().max().item<double>();
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>() /
         (scale > 0 ? scale : 1);
}

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

}  // namespace model_test
