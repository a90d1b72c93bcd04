// tests/train: the loop's and the causal LM's option keys (read from one table by
// lt.train.causal_lm) are unique, and map to the members they name.

#include "runtime/train/trainer.h"
#include "runtime/train/weight_change.h"
// Catch2 after the runtime headers: LibTorch brings glog, whose CHECK would otherwise win
#include <catch2/catch.hpp>

using namespace ltrun;

TEST_CASE("train fields: causal_lm's option keys are unique; clip_grad is the clip") {
  CHECK(duplicate_key(field_keys(train::loop_option_fields(), field_keys(train::train_option_fields()))) == "");
  train::LoopOptions o;
  for (const auto& f : train::loop_option_fields())
    if (std::string(f.key) == "clip_grad") CHECK(std::get<double train::LoopOptions::*>(f.member) == &train::LoopOptions::clip);
  train::LoopResult r;
  r.steps_done = 7;
  CHECK(r.*std::get<int64_t train::LoopResult::*>(train::loop_result_fields().front().member) == 7);
}

TEST_CASE("train fields: weight_change's keys name its members") {
  train::WeightChange w;
  w.layers = {1.0, 2.0};
  w.lm_head = 3.0;
  const auto& f = train::weight_change_fields();
  REQUIRE(f.size() == 5);
  CHECK(std::string(f[0].key) == "layers");
  CHECK((w.*std::get<std::vector<double> train::WeightChange::*>(f[0].member)).size() == 2);
  CHECK(std::string(f[4].key) == "lm_head");
  CHECK(w.*std::get<double train::WeightChange::*>(f[4].member) == 3.0);
}
