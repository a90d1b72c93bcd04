// tests/core: the script API registry (runtime/core/api.h): a check reads its declaration, so
// the keys accepted are the keys documented, and the registry finds entries by name, sorted.
#include <catch2/catch.hpp>

#include "runtime/core/api.h"
#include "runtime/core/options.h"

namespace {
const ltrun::ApiDoc& kDeclared = ltrun::declare_api(
    {"test.api.fn", "test.api.fn([opts])", "a function of this test",
     {{"alpha", "number", "the first"}, {"beta", "string", "the second"}}});
}  // namespace

TEST_CASE("api: a declaration is the check: declared keys pass, others are refused naming the declared") {
  using namespace ltrun;
  Value t = Value::table().set("alpha", 1.0).set("beta", std::string("x"));
  CHECK_NOTHROW(Options(t, "test.api.fn").check(kDeclared));
  t.set("gamma", 2.0);
  CHECK_THROWS_WITH(Options(t, "test.api.fn").check(kDeclared),
                    "test.api.fn: unknown option 'gamma' (known: alpha, beta)");
  CHECK_NOTHROW(Options(Value(), "test.api.fn").check(kDeclared));  // no options at all
}

TEST_CASE("api: the registry finds a declaration by name and lists every one sorted") {
  using namespace ltrun;
  REQUIRE(find_api("test.api.fn") == &kDeclared);
  CHECK(find_api("test.api.none") == nullptr);
  CHECK(kDeclared.has("beta"));
  CHECK_FALSE(kDeclared.has("gamma"));
  const auto all = all_apis();
  REQUIRE(!all.empty());
  for (size_t i = 1; i < all.size(); i++) CHECK(all[i - 1]->name < all[i]->name);
  // the tensor constructors' options are declared in runtime/core (tensor_ops.cpp)
  REQUIRE(find_api("lt.zeros") != nullptr);
  CHECK(find_api("lt.zeros")->has("dtype"));
}
