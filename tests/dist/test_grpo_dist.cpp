// tests/dist/test_grpo_dist.cpp: GRPO across 2 ranks (Gloo on this CPU) against 1 process on
// the same batch: each rank samples its half of the prompts (whole groups), so with one
// generate call per prompt group the samples are those of the single process; the
// advantages, gathered from the ranks, equal the single process's exactly, the reward
// metrics are over all the rollouts, and the data-parallel update reproduces the loss and
// the gradient norm of every step (2 epochs x 2 mini-batches whose rows straddle the ranks).
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>

#include "runtime/dist/dist.h"
#include "runtime/model/tiny.h"
#include "runtime/rl/grpo.h"
#include "tests/dist/ranks.h"
#include "tests/rl/grpo_fixture.h"
#include "tests/test_util.h"
#include "tests/tiny_spec.h"

using namespace ltrun;
using namespace ltrun::rl;

namespace {

GrpoOptions options() {
  GrpoOptions o = ltrun_test::grpo::options();
  o.prompts = 4;
  o.rollout.batch = 3;  // calls that straddle groups and ranks: each row keeps its own stream
  return o;
}
using ltrun_test::grpo::items;
using ltrun_test::grpo::policy;
using ltrun_test::grpo::prompt_ids;

// one batch of rollouts: 2 epochs x 2 mini-batches
train::LoopOptions loop_options() { return ltrun_test::grpo::loop_options(4); }

double metric(const train::StepLog& s, const std::string& k) {
  for (const auto& [n, v] : s.metrics)
    if (n == k) return v;
  return -1e300;
}

std::vector<double> read_numbers(const std::string& path) {
  std::ifstream f(path);
  std::vector<double> out;
  for (double x; f >> x;) out.push_back(x);
  return out;
}

}  // namespace

// A rank: writes "adv_0 .. adv_15 | reward_mean flat_group_frac | loss grad_norm pg_loss per step"
// (advantages of both ranks, gathered) to LTRUN_GRPO_OUT.RANK.
TEST_CASE("grpo worker", "[.grpo_worker]") {
  const dist::Env e = dist::env_from_environment();
  REQUIRE(e.world_size == 2);
  auto g = dist::Group::create(e, "gloo", "cpu", std::chrono::seconds(60));
  model::Model m = policy();
  m.set_requires_grad(true);
  GrpoObjective obj(m, items(), prompt_ids(), options());
  train::LoopOptions l = loop_options();
  l.group = g.get();
  const train::LoopResult r = train::run_loop(m, obj, l);
  std::ofstream f(std::string(std::getenv("LTRUN_GRPO_OUT")) + "." + std::to_string(e.rank));
  f.precision(17);
  for (const auto& a : g->all_gather(obj.rollout_advantages()))
    for (int64_t i = 0; i < a.numel(); ++i) f << a[i].item<double>() << " ";
  f << metric(r.log[0], "reward_mean") << " " << metric(r.log[0], "flat_group_frac") << " ";
  for (const auto& s : r.log) f << s.loss << " " << s.grad_norm << " " << metric(s, "pg_loss") << " ";
  f << "\n";
}

TEST_CASE("grpo across 2 ranks: the advantages, rewards and steps of 1 process on the same batch") {
  const std::string dir = ltrun_test::scratch_dir("dist", "grpo");
  model::Model m = policy();
  m.set_requires_grad(true);
  GrpoObjective obj(m, items(), prompt_ids(), options());
  const train::LoopResult one = train::run_loop(m, obj, loop_options());
  const at::Tensor adv = obj.rollout_advantages();
  REQUIRE(adv.numel() == 16);

  ltrun_test::run_two_ranks("[.grpo_worker]", {"LTRUN_GRPO_OUT=" + dir + "/out"});
  const auto a = read_numbers(dir + "/out.0"), b = read_numbers(dir + "/out.1");
  REQUIRE(a.size() == 16 + 2 + 3 * 4);
  REQUIRE(b == a);  // every rank reports the same
  // the same samples, the same rewards: the advantages to the bit (computed per group)
  bool some_nonzero = false;
  for (int64_t i = 0; i < 16; ++i) {
    INFO("row " << i);
    CHECK(a[size_t(i)] == adv[i].item<double>());
    some_nonzero |= a[size_t(i)] != 0;
  }
  CHECK(some_nonzero);  // the batch has signal (else the comparison below is empty)
  CHECK(a[16] == Approx(metric(one.log[0], "reward_mean")).epsilon(1e-12));
  CHECK(a[17] == metric(one.log[0], "flat_group_frac"));
  // Loss, gradient norm and pg_loss of each step: fp32 sums over ~100 response tokens grouped
  // into other micro-batches and split over the ranks (and prompts left-padded to another
  // width), then 4 AdamW steps of lr 3e-3 on weights that moved alike: relative 1e-4 is some
  // 100 fp32 roundings (1.2e-7 each) of headroom and far below the effect of a row counted
  // twice, a wrong divisor (a factor 2) or an advantage on the wrong row.
  for (size_t k = 0; k < 4; ++k) {
    INFO("step " << k + 1);
    const size_t o = 18 + 3 * k;
    CHECK(a[o] == Approx(one.log[k].loss).epsilon(1e-4).margin(1e-6));
    CHECK(a[o + 1] == Approx(one.log[k].grad_norm).epsilon(1e-4));
    CHECK(a[o + 2] == Approx(metric(one.log[k], "pg_loss")).epsilon(1e-4).margin(1e-6));
  }
}
