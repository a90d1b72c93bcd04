// tests/train/test_loop.cpp: the shared training loop with objectives other than the causal
// LM: micro-batch scales and the accumulated gradient (computed by hand), objective metrics
// and state through the sink and the checkpoint, the flush before a checkpoint is published,
// an interrupt in the middle of a step, and a freeze plan changed during a run (new groups,
// per-parameter AdamW bias correction, backward reaching a newly trainable lower block), and
// master_weights on a bf16 model (its fp32 masters checkpointed, the resume bit for bit).
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <chrono>
#include <map>
#include <thread>

#include "runtime/core/error.h"
#include "runtime/core/interrupt.h"
#include "runtime/io/safetensors.h"
#include "runtime/model/tiny.h"
#include "runtime/store/session.h"
#include "runtime/train/freeze.h"
#include "runtime/train/loop.h"
#include "runtime/train/trainer.h"
#include "tests/test_util.h"
#include "tests/tiny_spec.h"

using namespace ltrun;
using namespace ltrun::train;

namespace {

std::string scratch(const std::string& name) { return ltrun_test::scratch_dir("train", name); }

at::Tensor head_of(const model::Model& m) {
  for (const auto& p : m.parameters())
    if (p.name == "lm_head.weight") return p.tensor;
  FAIL("no lm_head.weight");
  return {};
}

// A toy objective on the head W: micro-batch i of a step has loss c_i * sum(W^2) and scale
// s_i, so the accumulated gradient is sum_i s_i c_i 2 W (checked in end_step, before the
// loop clips and steps). Its state is a counter (json) and a tensor.
struct Toy : Objective {
  model::Model& m;
  int64_t cursor = 0;       // micro-batches handed out
  at::Tensor memo = at::zeros({2});
  double grad_err = -1;
  int64_t interrupt_at_step = -1;  // raise SIGINT inside micro-batch 1 of this step
  int64_t slow_step = -1;          // this step: SIGTERM, then 4 s of work, in micro-batch 0
  std::vector<int64_t> begun;

  explicit Toy(model::Model& mm) : m(mm) {}
  std::string name() const override { return "toy"; }
  static double c(int64_t i) { return 1.0 + double(i); }
  static double s(int64_t i) { return i == 0 ? 0.5 : 0.25; }
  int64_t begin_step(const StepContext& ctx) override {
    begun.push_back(ctx.step);
    return 3;
  }
  MicroLoss micro_batch(const StepContext& ctx, int64_t i) override {
    if (ctx.step == interrupt_at_step && i == 1) std::raise(SIGINT);
    if (ctx.step == slow_step && i == 0) {
      std::raise(SIGTERM);  // as a scheduler stopping the job in the middle of a long step
      std::this_thread::sleep_for(std::chrono::seconds(4));  // longer than the watchdog's 3 s
    }
    ++cursor;
    memo += 1;
    MicroLoss ml;
    ml.loss = head_of(m).pow(2).sum() * c(i);
    ml.value = ml.loss.item<double>();
    ml.scale = s(i);
    ml.tokens = 10;
    return ml;
  }
  Metrics end_step(const StepContext&) override {
    at::NoGradGuard g;
    const at::Tensor w = head_of(m);
    double k = 0;
    for (int64_t i = 0; i < 3; ++i) k += s(i) * c(i) * 2;
    grad_err = (w.grad() - w * k).abs().max().item<double>() / (w * k).abs().max().item<double>();
    return {{"toy_cursor", double(cursor)}, {"grad_err", grad_err}};
  }
  ObjectiveState state() const override {
    ObjectiveState st;
    st.json["cursor"] = cursor;
    st.tensors.emplace_back("memo", memo.clone());
    return st;
  }
  void load_state(const ObjectiveState& st) override {
    cursor = st.json.at("cursor").get<int64_t>();
    REQUIRE(st.tensors.size() == 1);
    CHECK(st.tensors[0].first == "memo");
    memo = st.tensors[0].second.clone();
  }
};

model::Model tiny_model(int layers = 2) {
  model::Model m = model::make_tiny(ltrun_test::tiny_spec("qwen3", layers, 4, 50));
  m.set_requires_grad(true);
  return m;
}

LoopOptions quiet(int64_t steps) {
  LoopOptions o;
  o.steps = steps;
  o.lr = 1e-3;
  o.progress = false;
  return o;
}

}  // namespace

TEST_CASE("loop: micro-batch scales, objective metrics and state, flush before publishing") {
  const std::string dir = scratch("loop_toy");
  model::Model m = tiny_model();
  train_only(m, Spec::named("lm_head"));
  Toy toy(m);
  LoopOptions o = quiet(4);
  o.clip = 0;
  o.checkpoint_dir = dir;
  o.checkpoint_every = 2;
  std::map<std::pair<std::string, int64_t>, double> got;
  std::vector<std::string> latest_at_flush;
  o.sink.metric = [&](const std::string& k, double v, int64_t step) { got[{k, step}] = v; };
  o.sink.flush = [&] { latest_at_flush.push_back(latest_checkpoint(dir)); };
  const LoopResult r = run_loop(m, toy, o);
  REQUIRE(r.log.size() == 4);
  CHECK(toy.grad_err < 1e-6);  // an fp32 gradient of a quadratic against its formula: a few 6e-8
  CHECK(r.log[3].tokens == 30);
  // the step's loss is sum_i s_i * value_i, with value_i = c_i * |W|^2 before that step
  const double w2 = r.log[3].loss / (0.5 * 1 + 0.25 * 2 + 0.25 * 3);
  CHECK(w2 > 0);
  CHECK(got.at({"toy_cursor", 4}) == 12);
  CHECK(got.at({"loss", 2}) == r.log[1].loss);
  CHECK(got.count({"grad_err", 1}) == 1);
  // flushed before `latest` moved to the new checkpoint: at steps 2 and 4
  REQUIRE(latest_at_flush.size() == 2);
  CHECK(latest_at_flush[0].empty());
  CHECK(latest_at_flush[1].find("step-00000002") != std::string::npos);

  // resume: the objective gets its json and tensors back
  model::Model m2 = tiny_model();
  train_only(m2, Spec::named("lm_head"));
  Toy toy2(m2);
  LoopOptions o2 = quiet(6);
  o2.clip = 0;
  o2.checkpoint_dir = dir;
  o2.resume = true;
  const LoopResult r2 = run_loop(m2, toy2, o2);
  CHECK(r2.start_step == 4);
  CHECK(toy2.cursor == 18);
  CHECK(toy2.memo[0].item<double>() == 18);
  // a checkpoint of another objective is refused
  model::Model m3 = tiny_model();
  m3.set_requires_grad(true);
  DataSource d = tensor_source(at::zeros({4, 5}, at::kLong));
  TrainOptions o3;
  o3.steps = 8;
  o3.progress = false;
  o3.checkpoint_dir = dir;
  o3.resume = true;
  ltrun_test::require_error([&] { train_causal_lm(m3, d, o3); },
                            {"written by a toy run", "this run trains causal_lm"});
}

TEST_CASE("loop: Ctrl-C inside a step drops that step and checkpoints the one before") {
  const std::string dir = scratch("loop_midstep");
  install_interrupt_handler(nullptr);
  model::Model m = tiny_model();
  train_only(m, Spec::named("lm_head"));
  Toy toy(m);
  toy.interrupt_at_step = 2;
  LoopOptions o = quiet(5);
  o.checkpoint_dir = dir;
  std::vector<int64_t> flushed;
  CHECK_THROWS_AS(run_loop(m, toy, o), Interrupted);
  clear_interrupt();
  CHECK(latest_checkpoint(dir).find("step-00000002") != std::string::npos);

  // the reference: 5 steps in one go
  model::Model a = tiny_model();
  train_only(a, Spec::named("lm_head"));
  Toy ta(a);
  const LoopResult ra = run_loop(a, ta, quiet(5));

  model::Model b = tiny_model();
  train_only(b, Spec::named("lm_head"));
  Toy tb(b);
  LoopOptions ob = quiet(5);
  ob.checkpoint_dir = dir;
  ob.resume = true;
  const LoopResult rb = run_loop(b, tb, ob);
  CHECK(rb.start_step == 2);
  CHECK(tb.begun.front() == 2);
  REQUIRE(rb.log.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(rb.log[i].loss == Approx(ra.log[i + 2].loss).epsilon(1e-6));
  CHECK(tb.cursor == ta.cursor);  // the dropped step's micro-batches were handed out again
  CHECK(at::equal(head_of(a), head_of(b)));
}

TEST_CASE("loop: SIGTERM during a step longer than the watchdog's grace still checkpoints") {
  // The session's watchdog ends a process whose script ignores Ctrl-C after 3 s with
  // _exit(130); the loop honours the flag itself, so the watchdog must leave it alone (if it
  // did not, this test process would end with 130 here).
  const std::string dir = scratch("loop_sigterm");
  install_interrupt_handler(nullptr);
  store::RunStart rs;
  rs.name = "sigterm";
  store::Session session(store::Store::open(dir + "/runs.db"), rs);
  model::Model m = tiny_model();
  train_only(m, Spec::named("lm_head"));
  Toy toy(m);
  toy.slow_step = 2;
  LoopOptions o = quiet(5);
  o.checkpoint_dir = dir + "/ck";
  CHECK_THROWS_AS(run_loop(m, toy, o), Interrupted);
  clear_interrupt();
  CHECK(latest_checkpoint(o.checkpoint_dir).find("step-00000002") != std::string::npos);
  session.end(session.current(), store::Status::interrupted, "test");
}

TEST_CASE("loop: a freeze plan changed during the run is followed by the optimizer") {
  model::Model m = tiny_model(3);
  train_only(m, Spec::blocks({2}));
  DataSource d = tensor_source(
      (at::arange(8, at::kLong).mul(7).unsqueeze(1) + at::arange(9, at::kLong).unsqueeze(0)).remainder(50));
  TrainOptions o;
  o.steps = 4;
  o.lr = 1e-2;
  o.decay = "constant";
  o.clip = 0;
  o.weight_decay = 0;
  o.micro_batch = 4;
  o.progress = false;
  std::map<std::string, at::Tensor> at_switch;
  o.on_step = [&](int64_t step, double) {
    if (step != 2) return;
    for (const auto& p : m.parameters()) at_switch[p.name] = p.tensor.detach().clone();
    train_only(m, Spec::blocks({0}));  // below the old lowest trainable block
  };
  const TrainResult r = train_causal_lm(m, d, o);
  REQUIRE(r.log.size() == 4);
  REQUIRE(!at_switch.empty());
  for (const auto& p : m.parameters()) {
    INFO(p.name);
    const at::Tensor before = at_switch.at(p.name);
    if (p.layer == 0) CHECK_FALSE(at::equal(p.tensor, before));  // reached by backward
    else CHECK(at::equal(p.tensor, before));  // frozen after the switch: bit-identical
  }
  // Block 0's first update, seen by training one step after the switch: from fresh AdamW
  // state it is lr * g / (|g| + eps), of size lr for |g| >> eps (the bias correction of a
  // first step; with the optimizer's step 3 instead it would be about 0.62 lr).
  int64_t moved = 0, near_lr = 0, over = 0;
  model::Model m1 = tiny_model(3);
  train_only(m1, Spec::blocks({2}));
  DataSource d1 = tensor_source(
      (at::arange(8, at::kLong).mul(7).unsqueeze(1) + at::arange(9, at::kLong).unsqueeze(0)).remainder(50));
  TrainOptions o1 = o;
  o1.steps = 3;
  std::map<std::string, at::Tensor> sw1;
  o1.on_step = [&](int64_t step, double) {
    if (step != 2) return;
    for (const auto& p : m1.parameters()) sw1[p.name] = p.tensor.detach().clone();
    train_only(m1, Spec::blocks({0}));
  };
  o1.decay = "constant";
  train_causal_lm(m1, d1, o1);
  for (const auto& p : m1.parameters(0)) {
    const at::Tensor delta = (p.tensor - sw1.at(p.name)).abs().to(at::kDouble).flatten();
    for (int64_t i = 0; i < delta.numel(); ++i) {
      const double x = delta[i].item<double>() / o.lr;
      moved += x > 0;
      near_lr += std::abs(x - 1) < 1e-3;
      over += x > 1 + 1e-3;
    }
  }
  CHECK(moved > 1000);
  CHECK(over == 0);
  // AdamW's first step is lr x g / (|g| + 1e-8): within 1e-3 of lr unless |g| < 1e-5, which
  // few of these gradients are; rounding moves a ratio by ~1e-7, so the 95% is not at stake
  CHECK(double(near_lr) > 0.95 * double(moved));
}

TEST_CASE("loop: master_weights on a bf16 model checkpoints the fp32 masters and resumes bit for bit") {
  const std::string dir = scratch("loop_master");
  auto bf16_model = [] {
    model::Model m = tiny_model();
    m.to(c10::kCPU, c10::kBFloat16);
    m.set_requires_grad(true);
    train_only(m, Spec::named("lm_head"));
    return m;
  };
  auto opts = [] {
    LoopOptions o = quiet(5);
    o.master_weights = true;
    return o;
  };
  // the reference: 5 steps in one go
  model::Model a = bf16_model();
  Toy ta(a);
  run_loop(a, ta, opts());
  // 2 steps, a checkpoint, then a resumed run to 5
  model::Model b = bf16_model();
  Toy tb(b);
  LoopOptions ob = opts();
  ob.checkpoint_dir = dir;
  ob.stop_after = 2;
  run_loop(b, tb, ob);
  const std::string ck = latest_checkpoint(dir);
  REQUIRE(ck.find("step-00000002") != std::string::npos);
  const io::SafetensorsFile f = io::SafetensorsFile::open(ck + "/optimizer.safetensors");
  REQUIRE(f.has("master.lm_head.weight"));
  CHECK(f.tensor("master.lm_head.weight").scalar_type() == at::kFloat);
  model::Model c = bf16_model();
  Toy tc(c);
  LoopOptions oc = opts();
  oc.checkpoint_dir = dir;
  oc.resume = true;
  const LoopResult rc = run_loop(c, tc, oc);
  CHECK(rc.start_step == 2);
  CHECK(head_of(c).scalar_type() == at::kBFloat16);
  CHECK(at::equal(head_of(a), head_of(c)));
  // the final checkpoint's master equals the one-go run's master rounded: the parameter
  const io::SafetensorsFile g = io::SafetensorsFile::open(latest_checkpoint(dir) + "/optimizer.safetensors");
  CHECK(at::equal(g.tensor("master.lm_head.weight").to(at::kBFloat16), head_of(a).detach()));
  // resuming without the option refuses the masters (it would continue from the rounded weights)
  model::Model d = bf16_model();
  Toy td(d);
  LoopOptions od = quiet(6);
  od.checkpoint_dir = dir;
  od.resume = true;
  ltrun_test::require_error([&] { run_loop(d, td, od); }, {"master.lm_head.weight", "master_weights = true"});
}
