// tests/train/test_train.cpp: freeze specs, parameter groups, AdamW against the update formula
// computed by hand, the schedule, clipping, training with frozen parts (bit-identical), no
// backward below the lowest trainable block, gradient accumulation, exact resume, NaN stop,
// weight change.
#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <unordered_set>
#include <ATen/core/grad_mode.h>

#include "runtime/core/error.h"
#include "runtime/core/interrupt.h"
#include "runtime/model/tiny.h"
#include "runtime/train/freeze.h"
#include "runtime/train/loss.h"
#include "runtime/train/optim.h"
#include "runtime/train/trainer.h"
#include "runtime/train/weight_change.h"
#include "tests/test_util.h"
#include "tests/tiny_spec.h"

using namespace ltrun;
using namespace ltrun::train;

namespace {

std::string scratch(const std::string& name) { return ltrun_test::scratch_dir("train", name); }

model::Model tiny(int layers = 4, bool tie = false, uint64_t seed = 3) {
  model::TinySpec s = ltrun_test::tiny_spec("qwen3", layers, seed, 50);
  s.tie_word_embeddings = tie;
  model::Model m = model::make_tiny(s);
  m.set_requires_grad(true);
  return m;
}

// Token rows [n, T + 1] with a learnable pattern (each row counts up modulo the vocabulary).
at::Tensor pattern_rows(int64_t n, int64_t T, int64_t vocab = 50) {
  at::Tensor start = at::arange(n, at::kLong).mul(7).remainder(vocab).unsqueeze(1);
  return (start + at::arange(T + 1, at::kLong).unsqueeze(0)).remainder(vocab);
}

std::map<std::string, at::Tensor> snapshot(const model::Model& m) {
  std::map<std::string, at::Tensor> out;
  for (const auto& p : m.parameters()) out[p.name] = p.tensor.detach().clone();
  return out;
}

size_t graph_nodes(const at::Tensor& loss) {
  std::unordered_set<torch::autograd::Node*> seen;
  std::vector<torch::autograd::Node*> stack{loss.grad_fn().get()};
  while (!stack.empty()) {
    auto* n = stack.back();
    stack.pop_back();
    if (!n || !seen.insert(n).second) continue;
    for (const auto& e : n->next_edges()) stack.push_back(e.function.get());
  }
  return seen.size();
}

TrainOptions quiet(int64_t steps) {
  TrainOptions o;
  o.steps = steps;
  o.lr = 1e-2;
  o.micro_batch = 4;
  o.progress = false;
  return o;
}

}  // namespace

TEST_CASE("layer selections: shallow, deep, range, middle") {
  CHECK(shallow_layers(8, 0.5) == std::set<int>{0, 1, 2, 3});
  CHECK(deep_layers(8, 0.5) == std::set<int>{4, 5, 6, 7});
  CHECK(shallow_layers(5, 0.5) == std::set<int>{0, 1, 2});  // round(2.5) = 3
  CHECK(deep_layers(5, 0.5) == std::set<int>{3, 4});
  CHECK(range_layers(2, 4) == std::set<int>{2, 3, 4});
  CHECK(middle_layers(8, 2) == std::set<int>{3, 4});
  CHECK(middle_layers(7, 2) == std::set<int>{2, 3});
  CHECK_THROWS_WITH(range_layers(3, 1), Catch::Contains("a <= b"));
  CHECK(Spec::blocks({0, 1, 2, 5}, Part::Sub::Mlp).add(Spec::named("embeddings")).describe() ==
        "blocks 0-2,5 (mlp) + embeddings");
}

TEST_CASE("freeze and train_only select parameters by part") {
  model::Model m = tiny(4);
  const FreezeReport all = count_trainable(m);
  CHECK(all.trainable == all.total);

  freeze(m, Spec::blocks(shallow_layers(4, 0.5)).add(Spec::named("embeddings")));
  int64_t expect = 0;
  for (const auto& p : m.parameters()) {
    const bool frozen = p.name == "model.embed_tokens.weight" || (p.layer >= 0 && p.layer < 2);
    CHECK(p.tensor.requires_grad() == !frozen);
    if (!frozen) expect += p.tensor.numel();
  }
  CHECK(count_trainable(m).trainable == expect);
  CHECK(lowest_trainable_layer(m) == 2);

  const FreezeReport r = train_only(m, Spec::blocks({1}, Part::Sub::Attention));
  int64_t attn = 0;
  for (const auto& p : m.parameters()) {
    const bool sel = p.layer == 1 && p.name.find(".self_attn.") != std::string::npos;
    CHECK(p.tensor.requires_grad() == sel);
    if (sel) attn += p.tensor.numel();
  }
  CHECK(r.trainable == attn);
  CHECK(attn == 2 * 32 * 32 + 2 * 16 * 32 + 2 * 8);  // q, o (32x32) + k, v (16x32) + q/k norms
  CHECK(lowest_trainable_layer(m) == 1);

  train_only(m, Spec::named("lm_head").add(Spec::named("final_norm")));
  CHECK(lowest_trainable_layer(m) == 4);
  CHECK_THROWS_WITH(freeze(m, Spec::blocks({4})), Catch::Contains("block 4 out of range 0..3"));

  // a plan is a whole spec: on a model loaded for inference, freeze makes the rest trainable
  m.set_requires_grad(false);
  int64_t block0 = 0;
  for (const auto& p : m.parameters(0)) block0 += p.tensor.numel();
  CHECK(freeze(m, Spec::blocks({0})).trainable == all.total - block0);
}

TEST_CASE("tied embeddings: freezing one freezes both, and the report says so") {
  model::Model m = tiny(2, /*tie=*/true);
  const FreezeReport r = freeze(m, Spec::named("lm_head"));
  for (const auto& p : m.parameters())
    if (p.name == "model.embed_tokens.weight") CHECK_FALSE(p.tensor.requires_grad());
  REQUIRE(r.notes.size() == 1);
  CHECK(r.notes[0].find("also freezes embeddings") != std::string::npos);
  model::Model u = tiny(2, /*tie=*/false);
  CHECK(freeze(u, Spec::named("lm_head")).notes.empty());
}

TEST_CASE("parameter groups: no decay on norms and biases, per-layer lr multipliers") {
  model::TinySpec s;
  s.arch = "qwen2";  // q/k/v biases
  s.layers = 2;
  s.hidden = 32;
  s.vocab = 50;
  model::Model m = model::make_tiny(s);
  m.set_requires_grad(true);
  m.set_requires_grad(0, false);
  const auto groups = param_groups(m, 0.1, {{1, 5.0}});
  int64_t n = 0;
  for (const auto& g : groups)
    for (const auto& p : g.params) {
      ++n;
      const bool nd = p.name.find("norm") != std::string::npos ||
                      p.name.substr(p.name.size() - 5) == ".bias";
      CHECK(g.weight_decay == (nd ? 0.0 : 0.1));
      CHECK(g.lr_mult == (p.layer == 1 ? 5.0 : 1.0));
      CHECK(p.layer != 0);
    }
  CHECK(n == int64_t(m.parameters().size() - m.parameters(0).size()));
  CHECK_THROWS_WITH(param_groups(m, 0.1, {{2, 1.0}}), Catch::Contains("layer 2 out of range"));
}

TEST_CASE("AdamW matches the update formula computed by hand") {
  at::Tensor w = at::tensor({0.5, -1.0, 2.0}, at::kFloat).requires_grad_(true);
  model::Param p{"layer.weight", w, 0};
  ParamGroup g;
  g.lr_mult = 2.0;
  g.weight_decay = 0.01;
  g.params = {p};
  AdamW opt({g}, {0.9, 0.95, 1e-8});
  double ref[3] = {0.5, -1.0, 2.0}, m[3] = {0, 0, 0}, v[3] = {0, 0, 0};
  const double grads[2][3] = {{0.1, -0.2, 0.3}, {-0.05, 0.4, 0.0}};
  const double lr = 1e-3 * 2.0;
  for (int t = 1; t <= 2; ++t) {
    w.mutable_grad() = at::tensor({grads[t - 1][0], grads[t - 1][1], grads[t - 1][2]}, at::kFloat);
    opt.step(1e-3);
    for (int i = 0; i < 3; ++i) {
      const double gi = grads[t - 1][i];
      ref[i] *= 1 - lr * 0.01;
      m[i] = 0.9 * m[i] + 0.1 * gi;
      v[i] = 0.95 * v[i] + 0.05 * gi * gi;
      const double mh = m[i] / (1 - std::pow(0.9, t)), vh = v[i] / (1 - std::pow(0.95, t));
      ref[i] -= lr * mh / (std::sqrt(vh) + 1e-8);
    }
    for (int i = 0; i < 3; ++i) CHECK(w[i].item<double>() == Approx(ref[i]).epsilon(1e-6));
  }
  CHECK(opt.steps() == 2);
}

TEST_CASE("schedule: warmup, then cosine or linear decay") {
  Schedule s{1.0, 0.1, 0.0, 100, "cosine"};
  CHECK(s.at(0) == Approx(0.1));
  CHECK(s.at(9) == Approx(1.0));
  CHECK(s.at(10) == Approx(1.0));
  CHECK(s.at(55) == Approx(0.5));  // halfway through the 90 decay steps
  CHECK(s.at(99) > 0);
  Schedule l{1.0, 0.0, 0.0, 10, "linear"};
  CHECK(l.at(0) == Approx(1.0));
  CHECK(l.at(5) == Approx(0.5));
  CHECK(l.at(9) == Approx(0.1));
  Schedule bad{1.0, 0, 0, 10, "step"};
  CHECK_THROWS_WITH(bad.at(0), Catch::Contains("unknown decay"));
}

TEST_CASE("clip_grad_norm: global norm, scaled down only above the limit") {
  at::Tensor a = at::zeros({2}).requires_grad_(true), b = at::zeros({1}).requires_grad_(true);
  a.mutable_grad() = at::tensor({3.0f, 0.0f});
  b.mutable_grad() = at::tensor({4.0f});
  std::vector<model::Param> ps{{"a", a, 0}, {"b", b, 0}};
  CHECK(clip_grad_norm(ps, 10.0) == Approx(5.0));
  CHECK(a.grad()[0].item<double>() == Approx(3.0));
  CHECK(clip_grad_norm(ps, 1.0) == Approx(5.0));
  CHECK(b.grad()[0].item<double>() == Approx(0.8).epsilon(1e-5));
}

TEST_CASE("training: loss falls, frozen weights stay bit-identical") {
  at::manual_seed(0);
  model::Model m = tiny(4);
  freeze(m, Spec::blocks(deep_layers(4, 0.5)).add(Spec::named("final_norm")));
  const auto before = snapshot(m);
  DataSource d = tensor_source(pattern_rows(16, 12));
  TrainOptions o = quiet(30);
  o.lr = 3e-3;
  const TrainResult r = train_causal_lm(m, d, o);
  REQUIRE(r.log.size() == 30);
  CHECK(r.log.back().loss < r.log.front().loss * 0.8);
  CHECK(r.trainable_params == count_trainable(m).trainable);
  for (const auto& p : m.parameters()) {
    const bool frozen = p.layer >= 2 || p.name == "model.norm.weight";
    INFO(p.name);
    if (frozen) CHECK(at::equal(p.tensor, before.at(p.name)));
    else CHECK_FALSE(at::equal(p.tensor, before.at(p.name)));
  }
}

TEST_CASE("no backward below the lowest trainable block") {
  model::Model m = tiny(4);
  freeze(m, Spec::blocks(shallow_layers(4, 0.5)).add(Spec::named("embeddings")));
  REQUIRE(lowest_trainable_layer(m) == 2);
  const at::Tensor batch = pattern_rows(2, 10);

  const LossPass skip = causal_lm_loss(m, batch, 2);
  REQUIRE(skip.entry.defined());
  CHECK_FALSE(skip.entry.requires_grad());  // the residual entering block 2 carries no graph
  const LossPass full = causal_lm_loss(m, batch, 0, /*full_backward=*/true);
  const size_t n_skip = graph_nodes(skip.loss), n_full = graph_nodes(full.loss);
  INFO("graph nodes: " << n_skip << " skipping, " << n_full << " through every block");
  // two of four blocks (and the embeddings) are left out of the graph
  CHECK(n_skip < n_full * 2 / 3);
  // the same loss and the same gradients either way
  CHECK(skip.loss.item<double>() == Approx(full.loss.item<double>()).epsilon(1e-6));
  skip.loss.backward();
  std::map<std::string, at::Tensor> g1;
  for (auto& p : m.parameters())
    if (p.tensor.grad().defined()) {
      g1[p.name] = p.tensor.grad().clone();
      p.tensor.mutable_grad() = at::Tensor();
    }
  full.loss.backward();
  for (auto& p : m.parameters()) {
    INFO(p.name);
    const bool trains = p.layer >= 2 || (p.layer == -1 && p.name != "model.embed_tokens.weight");
    CHECK(p.tensor.grad().defined() == trains);
    if (g1.count(p.name)) CHECK(at::allclose(g1[p.name], p.tensor.grad(), 1e-5, 1e-7));
  }
}

TEST_CASE("only the head trains: no block runs with grad") {
  model::Model m = tiny(3);
  train_only(m, Spec::named("lm_head").add(Spec::named("final_norm")));
  REQUIRE(lowest_trainable_layer(m) == 3);
  const LossPass lp = causal_lm_loss(m, pattern_rows(2, 6), 3);
  CHECK_FALSE(lp.entry.requires_grad());
  const auto before = snapshot(m);
  DataSource d = tensor_source(pattern_rows(8, 6));
  const TrainResult r = train_causal_lm(m, d, quiet(3));
  CHECK(r.lowest_trainable_layer == 3);
  for (const auto& p : m.parameters())
    CHECK(at::equal(p.tensor, before.at(p.name)) == (p.layer >= 0 || p.name == "model.embed_tokens.weight"));
}

TEST_CASE("activation checkpointing gives the gradients of the plain backward") {
  for (bool tie : {false, true}) {
    for (int from : {0, 1, 2}) {
      model::Model a = tiny(4, tie, 11);
      model::Model b = a.clone();
      if (from > 0) {  // freeze the embeddings and blocks below `from`, as the trainer would
        std::set<int> below;
        for (int l = 0; l < from; ++l) below.insert(l);
        Spec frozen = Spec::blocks(below);
        frozen.add(Spec::named("embeddings"));
        freeze(a, frozen);
        freeze(b, frozen);
      }
      const at::Tensor batch = pattern_rows(3, 9);
      (causal_lm_loss(a, batch, from).loss * 0.5).backward();
      const at::Tensor loss = checkpointed_loss_backward(b, batch, from, 0.5);
      CHECK(loss.item<double>() == Approx(causal_lm_loss(a, batch, from).loss.item<double>()).epsilon(1e-6));
      const auto pa = a.parameters(), pb = b.parameters();
      for (size_t i = 0; i < pa.size(); ++i) {
        INFO(pa[i].name << " tie=" << tie << " from=" << from);
        const at::Tensor ga = pa[i].tensor.grad(), gb = pb[i].tensor.grad();
        REQUIRE(ga.defined() == gb.defined());
        if (ga.defined()) CHECK(ga.allclose(gb, 1e-5, 1e-7));
      }
    }
  }
}

TEST_CASE("gradient accumulation: 2 x 2 micro-batches = one batch of 4") {
  model::Model a = tiny(2), b = tiny(2);
  DataSource da = tensor_source(pattern_rows(8, 8)), db = tensor_source(pattern_rows(8, 8));
  TrainOptions oa = quiet(3), ob = quiet(3);
  oa.micro_batch = 4;
  ob.micro_batch = 2;
  ob.grad_accum = 2;
  // The two sum the same gradients in another order: each element differs by ~2^-24 of the
  // gradient scale g (~1e-2), 6e-10. AdamW's step lr x g / (|g| + eps) turns that into at most
  // lr x 6e-10 / eps: with the usual eps = 1e-8 an element whose gradient is ~0 could move by
  // 6e-4 more in one run (its sign decided by rounding), beyond any tolerance that still
  // catches a wrong accumulation. eps = 1e-3 keeps the step's sensitivity to 1 / eps, so the
  // weights differ by <= 3 steps x lr x 6e-10 / 1e-3 = 2e-8, far inside 1e-6 + 1e-4 x |w|.
  oa.eps = ob.eps = 1e-3;
  const TrainResult ra = train_causal_lm(a, da, oa), rb = train_causal_lm(b, db, ob);
  // fp32 losses of the same rows summed in another order: a few ulps (1e-7 each) of the loss
  for (int i = 0; i < 3; ++i) CHECK(ra.log[i].loss == Approx(rb.log[i].loss).epsilon(1e-5));
  const auto pa = a.parameters(), pb = b.parameters();
  for (size_t i = 0; i < pa.size(); ++i) CHECK(at::allclose(pa[i].tensor, pb[i].tensor, 1e-4, 1e-6));
  // and the weights did move (by ~lr x g / (|g| + eps) per step): the comparison is not empty
  CHECK(!at::allclose(pa.back().tensor, tiny(2).parameters().back().tensor, 1e-4, 1e-6));
}

TEST_CASE("checkpoints: an interrupted and resumed run equals the uninterrupted one") {
  const std::string dir_a = scratch("resume_a"), dir_b = scratch("resume_b");
  TrainOptions o = quiet(8);
  o.warmup = 0.25;
  o.micro_batch = 3;
  o.grad_accum = 2;
  o.clip = 0.5;

  model::Model a = tiny(3);
  freeze(a, Spec::blocks({0}));
  DataSource da = tensor_source(pattern_rows(10, 9));
  TrainOptions oa = o;
  oa.checkpoint_dir = dir_a;
  const TrainResult ra = train_causal_lm(a, da, oa);

  model::Model b = tiny(3);
  freeze(b, Spec::blocks({0}));
  DataSource db = tensor_source(pattern_rows(10, 9));
  TrainOptions ob = o;
  ob.checkpoint_dir = dir_b;
  ob.checkpoint_every = 2;
  ob.stop_after = 5;
  const TrainResult rb1 = train_causal_lm(b, db, ob);
  CHECK(rb1.stopped_early);
  // stopping writes a checkpoint of its own; every_2 kept the last two (steps 4 and 5)
  CHECK(latest_checkpoint(dir_b).find("step-00000005") != std::string::npos);
  CHECK(std::filesystem::exists(std::filesystem::path(dir_b) / "step-00000004"));
  CHECK_FALSE(std::filesystem::exists(std::filesystem::path(dir_b) / "step-00000002"));

  // a fresh process: the base model again, resumed from step 5
  model::Model c = tiny(3);
  freeze(c, Spec::blocks({0}));
  DataSource dc = tensor_source(pattern_rows(10, 9));
  TrainOptions oc = o;
  oc.checkpoint_dir = dir_b;
  oc.resume = true;
  const TrainResult rc = train_causal_lm(c, dc, oc);
  CHECK(rc.start_step == 5);
  REQUIRE(rc.log.size() == 3);
  for (int i = 0; i < 3; ++i) {
    INFO("step " << i + 6);
    CHECK(std::abs(rc.log[size_t(i)].loss - ra.log[size_t(i + 5)].loss) <= 1e-6);
    CHECK(rc.log[size_t(i)].lr == ra.log[size_t(i + 5)].lr);
  }
  const auto pa = a.parameters(), pc = c.parameters();
  for (size_t i = 0; i < pa.size(); ++i) CHECK(at::equal(pa[i].tensor, pc[i].tensor));
  // HF-format weights in the checkpoint load as a model
  model::Model back = model::Model::load(latest_checkpoint(dir_a));
  for (size_t i = 0; i < pa.size(); ++i) CHECK(at::equal(pa[i].tensor, back.parameters()[i].tensor));
}

TEST_CASE("Ctrl-C between steps writes a checkpoint, and resuming from it is exact") {
  const std::string dir = scratch("interrupt");
  TrainOptions o = quiet(6);
  o.warmup = 0.2;
  model::Model a = tiny(2);
  DataSource da = tensor_source(pattern_rows(8, 8));
  const TrainResult ra = train_causal_lm(a, da, o);

  install_interrupt_handler(nullptr);
  model::Model b = tiny(2);
  DataSource db = tensor_source(pattern_rows(8, 8));
  TrainOptions ob = o;
  ob.checkpoint_dir = dir;
  ob.on_step = [](int64_t step, double) {
    if (step == 3) std::raise(SIGINT);  // as if pressed during step 3
  };
  CHECK_THROWS_AS(train_causal_lm(b, db, ob), Interrupted);
  clear_interrupt();
  CHECK(latest_checkpoint(dir).find("step-00000003") != std::string::npos);

  model::Model c = tiny(2);
  DataSource dc = tensor_source(pattern_rows(8, 8));
  TrainOptions oc = o;
  oc.checkpoint_dir = dir;
  oc.resume = true;
  const TrainResult rc = train_causal_lm(c, dc, oc);
  REQUIRE(rc.log.size() == 3);
  for (int i = 0; i < 3; ++i) CHECK(std::abs(rc.log[size_t(i)].loss - ra.log[size_t(i + 3)].loss) <= 1e-6);
}

TEST_CASE("a NaN loss stops the run with a clear error") {
  model::Model m = tiny(2);
  {
    // the MLP's output weight: its NaN reaches the loss under every attention kernel (the
    // fused CPU kernel of LibTorch 2.x returns zeros, not NaN, for NaN keys and finite values)
    at::NoGradGuard g;
    bool poisoned = false;
    for (const auto& p : m.parameters(1))
      if (p.name.find("mlp.down_proj") != std::string::npos) {
        p.tensor.fill_(std::nan(""));
        poisoned = true;
      }
    REQUIRE(poisoned);
  }
  DataSource d = tensor_source(pattern_rows(4, 6));
  CHECK_THROWS_WITH(train_causal_lm(m, d, quiet(3)), Catch::Contains("loss is nan at step 1"));
  model::Model f = tiny(2);
  f.set_requires_grad(false);
  CHECK_THROWS_WITH(train_causal_lm(f, d, quiet(3)), Catch::Contains("every parameter is frozen"));
}

TEST_CASE("weight change: per-layer L2 norm of trained - base") {
  model::Model base = tiny(3), m = base.clone();
  {
    at::NoGradGuard g;
    m.parameters(1)[0].tensor.add_(0.5);  // q_proj of block 1: 32 x 32 entries
    m.parameters()[0].tensor.index_put_({0, 0}, m.parameters()[0].tensor.index({0, 0}) + 2.0);
  }
  const WeightChange w = weight_change(m, base);
  REQUIRE(w.layers.size() == 3);
  CHECK(w.layers[0] == 0);
  CHECK(w.layers[1] == Approx(0.5 * 32).epsilon(1e-6));
  CHECK(w.layers[2] == 0);
  CHECK(w.embeddings == Approx(2.0).epsilon(1e-6));
  CHECK(w.relative[1] > 0);
  CHECK_THROWS_WITH(weight_change(tiny(2), base), Catch::Contains("layers"));
}
