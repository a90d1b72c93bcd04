// tests/core: field lists (runtime/core/fields.h): keys in order, duplicates found.
#include <catch2/catch.hpp>

#include <cstring>

#include "runtime/core/fields.h"

namespace {
struct Opts {
  double lr = 0.1;
  int64_t steps = 3;
  std::string name;
};
}  // namespace

TEST_CASE("fields: keys in order, then the extra ones; a key named twice is found") {
  using namespace ltrun;
  const Fields<Opts> f = {{"lr", &Opts::lr}, {"steps", &Opts::steps, 1}, {"name", &Opts::name}};
  const auto keys = field_keys(f, {"seed"});
  REQUIRE(keys.size() == 4);
  CHECK(std::strcmp(keys[0], "lr") == 0);
  CHECK(std::strcmp(keys[2], "name") == 0);
  CHECK(std::strcmp(keys[3], "seed") == 0);
  CHECK(duplicate_key(keys) == "");
  CHECK(duplicate_key(field_keys(f, {"x", "steps"})) == "steps");
  CHECK(f[1].lo == 1);
  Opts o;
  CHECK(o.*std::get<int64_t Opts::*>(f[1].member) == 3);
}
