// tests/rl: lt.rl.grpo reads its own, the rollout's and the loop's option keys from one table:
// no key may be in two lists (it would be read into two members).

#include "runtime/rl/grpo.h"
// Catch2 after the runtime headers: LibTorch brings glog, whose CHECK would otherwise win
#include <catch2/catch.hpp>

using namespace ltrun;

TEST_CASE("rl fields: grpo, rollout and loop option keys are unique") {
  const auto keys = field_keys(rl::grpo_option_fields(),
                               field_keys(rl::rollout_option_fields(), field_keys(train::loop_option_fields())));
  CHECK(duplicate_key(keys) == "");
  CHECK(keys.size() == rl::grpo_option_fields().size() + rl::rollout_option_fields().size() +
                           train::loop_option_fields().size());
}
