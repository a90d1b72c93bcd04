// tests/seed_each_test.cpp: linked into every Catch2 executable of an area that uses LibTorch;
// seeds LibTorch's default CPU generator before each test case. Left alone it starts from a
// nondeterministic seed in every process, so a test drawing at::rand / at::randn without a
// generator of its own saw other numbers on every run (model_test::sharp_tiny's norm weights
// made tests/model/test_generate.cpp's stop-ids case fail about one run in ten).
#include <ATen/Context.h>

#define CATCH_CONFIG_EXTERNAL_INTERFACES  // TestEventListenerBase, CATCH_REGISTER_LISTENER
#include <catch2/catch.hpp>

namespace {

struct SeedEachTestCase : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseStarting(const Catch::TestCaseInfo&) override { at::manual_seed(20261125); }
};

}  // namespace

CATCH_REGISTER_LISTENER(SeedEachTestCase)
