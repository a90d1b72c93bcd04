// tests/core: the tensor method tables (unary_ops / binary_ops / reductions: unique names, each op against
// LibTorch's own call) and the tensor memory account that forces Lua collections.
#include <ATen/ATen.h>

#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "runtime/core/tensor_ops.h"

using namespace ltrun;

TEST_CASE("tensor op tables: unique names; ops agree with the LibTorch calls") {
  std::set<std::string> names;
  for (const auto& op : unary_ops()) CHECK(names.insert(op.name).second);
  for (const auto& op : binary_ops()) CHECK(names.insert(op.name).second);
  for (const auto& r : reductions()) CHECK(names.insert(r.name).second);
  REQUIRE(reductions().size() == 11);
  CHECK(std::string(reductions().front().name) == "sum");
  CHECK(reductions().front().r == Reduction::sum);
  CHECK(std::string(reductions().back().name) == "logsumexp");
  CHECK(reductions().back().r == Reduction::logsumexp);
  const at::Tensor a = at::tensor({-1.5, 0.0, 2.0}, at::kDouble);
  const at::Tensor b = at::tensor({2.0, -3.0, 2.0}, at::kDouble);
  auto unary = [&](const std::string& n) {
    for (const auto& op : unary_ops())
      if (n == op.name) return op.fn(a);
    FAIL("no unary op " << n);
    return at::Tensor();
  };
  auto binary = [&](const std::string& n) {
    for (const auto& op : binary_ops())
      if (n == op.name) return op.fn(a, b);
    FAIL("no binary op " << n);
    return at::Tensor();
  };
  // exact: the same LibTorch kernels on the same inputs
  CHECK(unary("abs").equal(a.abs()));
  CHECK(unary("float").scalar_type() == at::kFloat);
  CHECK(unary("long").equal(at::tensor({-1, 0, 2}, at::kLong)));
  CHECK(binary("sub").equal(at::tensor({-3.5, 3.0, 0.0}, at::kDouble)));
  CHECK(binary("eq").equal(at::tensor({0, 0, 1}, at::kLong).to(at::kBool)));
  CHECK(binary("maximum").equal(at::tensor({2.0, 0.0, 2.0}, at::kDouble)));
  std::set<std::string> metas;
  for (const auto& op : binary_ops())
    if (op.meta) metas.insert(op.meta);
  CHECK(metas == std::set<std::string>{"__add", "__sub", "__mul", "__div", "__pow", "__mod"});
}

TEST_CASE("tensor memory: a collection is due past the threshold, then counting restarts") {
  TensorMemory m;
  m.set_threshold(100);
  CHECK_FALSE(m.allocated(60));
  CHECK_FALSE(m.allocated(40));  // 100: not more than the threshold
  CHECK(m.allocated(1));
  CHECK(m.collections == 1);
  CHECK(m.since_gc == 0);
  CHECK(m.live == 101);
  m.released(60);
  CHECK(m.live == 41);
  CHECK_THROWS_WITH(m.set_threshold(0), "lt.gc_threshold: expected a positive number of bytes, got 0");
  CHECK(storage_bytes(at::Tensor()) == 0);
  CHECK(storage_bytes(at::zeros({4}, at::kFloat)) == 16);
}
