// tests/rl/test_grpo.cpp: the GRPO objective on the shared training loop with a tiny model and
// a made-up verifiable reward: steps per batch of rollouts (epochs x mini-batches), the
// metrics of the step that sampled, a frozen prefix left untouched, and exact resume (weights
// and the rollouts in flight) against an uninterrupted run.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <catch2/catch.hpp>
#include <map>
#include <memory>

#include "runtime/model/tiny.h"
#include "runtime/rl/grpo.h"
#include "runtime/train/freeze.h"
#include "tests/rl/grpo_fixture.h"
#include "tests/test_util.h"
#include "tests/tiny_spec.h"

using namespace ltrun;
using namespace ltrun::rl;

namespace {

// GRPO centres the rewards per group, so a group whose rewards are all equal gives no gradient
// (a test that checks a gradient must not hope for one from what is sampled: the fixture's
// "abc" share ties whenever a group's responses hold as many a-c letters). "other" is 1 for a
// response whose text differs from the first response of its prompt in this objective and 0
// otherwise: within a group the rewards differ exactly when the responses do (abc, in [0, 1],
// cannot even out its weight 10). Responses are 6 tokens sampled at temperature 1 from a random
// model's near-uniform logits: a group of 4 alike does not come up.
GrpoOptions options() {
  GrpoOptions o = ltrun_test::grpo::options();
  o.prompts = 2;
  o.rollout.temperature = 1.0;
  o.chunk = 7;
  auto first = std::make_shared<std::map<std::string, std::string>>();
  o.rewards.push_back({"other", 10.0, [first](const PromptItem& it, const std::string& r) {
                         const auto [pos, fresh] = first->emplace(it.id, r);
                         return fresh || pos->second == r ? 0.0 : 1.0;
                       }});
  return o;
}
using ltrun_test::grpo::items;
using ltrun_test::grpo::policy;
using ltrun_test::grpo::prompt_ids;

// 2 batches of rollouts x 2 epochs x 2 mini-batches
train::LoopOptions loop_options() { return ltrun_test::grpo::loop_options(8); }


}  // namespace

TEST_CASE("grpo on the shared loop: steps, metrics, frozen prefix", "[rl][grpo]") {
  model::Model m = policy();
  train::train_only(m, train::Spec::blocks({1, 2}));
  const model::Model before = m.clone();
  GrpoObjective obj(m, items(), prompt_ids(), options());
  REQUIRE(obj.reference() != nullptr);
  CHECK(obj.reference()->from_layer() == 1);
  std::map<std::string, int> logged;
  train::LoopOptions l = loop_options();
  l.sink.metric = [&](const std::string& name, double, int64_t) { ++logged[name]; };
  const train::LoopResult r = train::run_loop(m, obj, l);
  REQUIRE(r.log.size() == 8);
  auto has = [](const train::StepLog& s, const std::string& k) {
    for (const auto& [n, v] : s.metrics)
      if (n == k) return true;
    return false;
  };
  auto get = [](const train::StepLog& s, const std::string& k) {
    for (const auto& [n, v] : s.metrics)
      if (n == k) return v;
    return -1.0;
  };
  // rollouts at steps 1 and 5 (4 optimizer steps use each batch)
  for (size_t i = 0; i < 8; ++i) CHECK(has(r.log[i], "reward_mean") == (i == 0 || i == 4));
  CHECK(has(r.log[0], "time/old_logprobs_s"));  // more than one step uses them: captured
  CHECK(has(r.log[0], "time/reference_s"));
  CHECK(obj.reference_entry() == "old_logprobs");  // block 1: the old-log-prob pass's state
  for (const auto& s : r.log) {
    CHECK(s.grad_norm > 0);
    CHECK(get(s, "entropy") > 0);
    CHECK(get(s, "clip_frac") >= 0);
    CHECK(get(s, "clip_frac") <= 1);
  }
  // the first mini-batch of a batch: the policy has not moved since the old log-probs
  CHECK(std::abs(get(r.log[0], "approx_kl")) < 1e-5);
  CHECK(logged["reward/abc"] == 2);
  CHECK(logged["pg_loss"] == 8);
  // block 0 and the embeddings are frozen: untouched; block 2 trained
  const auto p = m.parameters(), q = before.parameters();
  for (size_t i = 0; i < p.size(); ++i) {
    INFO(p[i].name);
    const bool trains = p[i].name.find("layers.1.") != std::string::npos ||
                        p[i].name.find("layers.2.") != std::string::npos;
    if (!trains) CHECK(at::equal(p[i].tensor, q[i].tensor));
    else if (p[i].name.find("proj") != std::string::npos) CHECK(!at::equal(p[i].tensor, q[i].tensor));
  }
}

TEST_CASE("grpo resume is exact, the rollouts in flight included", "[rl][grpo]") {
  const std::string dir = ltrun_test::scratch_dir("rl", "grpo_resume");
  model::Model full = policy();
  train::train_only(full, train::Spec::named("all"));
  {
    GrpoObjective obj(full, items(), prompt_ids(), options());
    train::run_loop(full, obj, loop_options());
  }
  {
    model::Model a = policy();
    train::train_only(a, train::Spec::named("all"));
    GrpoObjective obj(a, items(), prompt_ids(), options());
    train::LoopOptions l = loop_options();
    l.checkpoint_dir = dir;
    l.stop_after = 3;  // inside the first batch of rollouts (steps 1-4 use it)
    const auto r = train::run_loop(a, obj, l);
    CHECK(r.steps_done == 3);
  }
  model::Model b = policy();  // the base again: the reference is the base, the weights resume
  train::train_only(b, train::Spec::named("all"));
  GrpoObjective obj(b, items(), prompt_ids(), options());
  train::LoopOptions l = loop_options();
  l.checkpoint_dir = dir;
  l.resume = true;
  const auto r = train::run_loop(b, obj, l);
  CHECK(r.start_step == 3);
  CHECK(r.steps_done == 8);
  const auto p = full.parameters(), q = b.parameters();
  for (size_t i = 0; i < p.size(); ++i) {
    INFO(p[i].name);
    CHECK(at::equal(p[i].tensor, q[i].tensor));
  }
}

TEST_CASE("one step per batch: the shared-prefix reference resumes from the update's own pass, "
          "equal to a copied reference", "[rl][grpo]") {
  // epochs = mini_batches = 1: no old-log-prob pass; block 2 of 3 trains, so the reference
  // starts at block 2 from the hidden state the update's pass computes there
  struct Out {
    std::vector<train::StepLog> log;
    std::vector<at::Tensor> weights;
  };
  auto run = [](bool copy) {
    model::Model m = policy();
    train::train_only(m, train::Spec::blocks({2}));
    GrpoOptions o = options();
    o.epochs = 1;
    o.mini_batches = 1;
    o.kl = 0.5;  // large, so that the reference's log-probs move the weights visibly
    o.copy_reference = copy;
    GrpoObjective obj(m, items(), prompt_ids(), o);
    REQUIRE(obj.reference() != nullptr);
    CHECK(obj.reference()->from_layer() == (copy ? 0 : 2));
    Out out;
    train::LoopOptions l = ltrun_test::grpo::loop_options(3);
    l.eps = 1e-3;  // AdamW's step is then at most 1 / eps sensitive to its gradient (see below)
    out.log = train::run_loop(m, obj, l).log;
    CHECK(obj.reference_entry() == (copy ? "own" : "update"));
    for (const auto& p : m.parameters()) out.weights.push_back(p.tensor.clone());
    return out;
  };
  const Out shared = run(false), copied = run(true);
  auto get = [](const train::StepLog& s, const std::string& k) {
    for (const auto& [n, v] : s.metrics)
      if (n == k) return v;
    return -1.0;
  };
  REQUIRE(shared.log.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    INFO("step " << i + 1);
    CHECK(get(shared.log[i], "time/old_logprobs_s") == -1.0);  // no old-log-prob pass
    CHECK(get(shared.log[i], "time/reference_s") >= 0);        // timed inside the update
    // the KL term, after the policy moved from the reference (step 1: they are equal).
    // Both references compute the same function on the same rows, but in other batches (the
    // copy at rollout time, the shared prefix in the update's micro-batches): a few fp32 ulps
    const double a = get(shared.log[i], "kl"), b = get(copied.log[i], "kl");
    if (i > 0) CHECK(b > 0);
    CHECK(std::abs(a - b) <= 1e-5 * std::max(1.0, std::abs(b)) + 1e-9);
  }
  // the runs differ only in those reference log-probs (~1e-6 relative), which enter the
  // gradient through beta * k3: a gradient element differs by delta <~ 1e-6 of the gradient
  // scale (~1e-2), 1e-8. AdamW's step lr x g / (|g| + eps) moves by at most lr x delta / eps:
  // with the usual eps = 1e-8 an element whose gradient is ~0 could differ by ~lr, so eps is
  // 1e-3 here, and 3 updates of lr = 3e-3 differ by <= 3 x 3e-3 x 1e-8 / 1e-3 = 1e-7 of a
  // weight: 1e-6 absolute + 1e-4 relative is ten times that (the equality of the KL is the
  // main check)
  for (size_t i = 0; i < shared.weights.size(); ++i)
    CHECK(at::allclose(shared.weights[i], copied.weights[i], 1e-4, 1e-6));
}

// Batches made by the caller (GrpoOptions::produce: an agent's steps with GiGPO advantages)
// train as sampled ones do: the rows and advantages of a sampled batch, read back from the
// objective's state and produced again, give the same weights bit for bit (same packing, same
// mini-batch order, same old and reference log-probs).
TEST_CASE("produced batches train exactly as the same rows sampled", "[rl][grpo]") {
  model::Model a = policy();
  train::train_only(a, train::Spec::blocks({1, 2}));
  model::Model b = a.clone();
  train::train_only(b, train::Spec::blocks({1, 2}));
  GrpoObjective sampled(a, items(), prompt_ids(), options());
  train::run_loop(a, sampled, ltrun_test::grpo::loop_options(4));  // one batch: 2 epochs x 2 mini-batches
  const train::ObjectiveState st = sampled.state();
  auto get = [&](const std::string& k) {
    for (const auto& [n, t] : st.tensors)
      if (n == k) return t;
    FAIL("no " << k);
    return at::Tensor();
  };
  const at::Tensor ids = get("rollout.ids"), am = get("rollout.attention_mask"), rm = get("rollout.response_mask"),
                   adv = get("rollout.adv");
  const int64_t P = st.json.at("prompt_len").get<int64_t>();
  ProducedBatch rows;
  for (int64_t r = 0; r < ids.size(0); ++r) {
    std::vector<int64_t> p, resp;
    for (int64_t c = 0; c < P; ++c)
      if (am[r][c].item<int64_t>()) p.push_back(ids[r][c].item<int64_t>());
    for (int64_t c = 0; c < rm.size(1); ++c)
      if (rm[r][c].item<float>() > 0) resp.push_back(ids[r][P + c].item<int64_t>());
    rows.prompts.push_back(p);
    rows.responses.push_back(resp);
    rows.advantages.push_back(adv[r].item<double>());
  }
  REQUIRE(rows.prompts.size() == 8);
  GrpoOptions o = options();
  int calls = 0;
  o.produce = [&](int64_t batch) {
    ++calls;
    CHECK(batch == 0);
    return rows;
  };
  GrpoObjective produced(b, {}, {}, o);
  const train::LoopResult r = train::run_loop(b, produced, ltrun_test::grpo::loop_options(4));
  CHECK(calls == 1);
  CHECK(r.log.size() == 4);
  const auto pa = a.parameters(), pb = b.parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    INFO(pa[i].name);
    CHECK(at::equal(pa[i].tensor, pb[i].tensor));
  }
}

TEST_CASE("produced batches: any number of rows, zero advantages move nothing, bad rows refused", "[rl][grpo]") {
  model::Model m = policy();
  train::train_only(m, train::Spec::blocks({0, 1, 2}));
  const model::Model before = m.clone();
  GrpoOptions o = options();
  o.kl = 0.0;  // no reference: the loss is the advantage-weighted ratio alone
  ProducedBatch rows;
  rows.prompts = {{5, 17, 9}, {12, 4}, {8, 30, 21, 2}, {40, 41}, {7}};
  rows.responses = {{10, 11}, {12}, {13, 14, 15}, {}, {16}};
  rows.advantages = {0, 0, 0, 0, 0};
  rows.metrics = {{"episode_return", 0.5}};
  int calls = 0;
  o.produce = [&](int64_t) {
    ++calls;
    return rows;
  };
  {
    GrpoObjective obj(m, {}, {}, o);
    std::map<std::string, int> logged;
    train::LoopOptions l = ltrun_test::grpo::loop_options(8);  // 2 batches; 5 rows in mini-batches of 2 and 3
    l.sink.metric = [&](const std::string& name, double, int64_t) { ++logged[name]; };
    const train::LoopResult r = train::run_loop(m, obj, l);
    CHECK(r.log.size() == 8);
    CHECK(calls == 2);  // once per batch, though 5 rows are not the 2 x 4 a sampled batch has
    CHECK(logged["episode_return"] == 2);  // the caller's metrics, once per batch
    CHECK(logged["rows"] == 2);
    // zero advantages, no KL: a zero gradient, and AdamW without weight decay does not move
    const auto p = m.parameters(), q = before.parameters();
    for (size_t i = 0; i < p.size(); ++i) CHECK(at::equal(p[i].tensor, q[i].tensor));
  }
  rows.advantages = {1, 0};
  GrpoObjective bad(m, {}, {}, o);
  CHECK_THROWS_WITH(train::run_loop(m, bad, ltrun_test::grpo::loop_options(1)),
                    Catch::Contains("5 prompts, 5 responses and 2 advantages"));
  rows.advantages = {1, 0, std::nan(""), 0, 0};
  GrpoObjective nan(m, {}, {}, o);
  CHECK_THROWS_WITH(train::run_loop(m, nan, ltrun_test::grpo::loop_options(1)),
                    Catch::Contains("row 3: advantage nan is not finite"));
}
