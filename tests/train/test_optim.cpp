// tests/train/test_optim.cpp: AdamW through ATen's multi-tensor kernels (issue 35, item 3)
// against the per-parameter AdamW it replaced (written out below as the reference), over 10
// steps with per-group learning rates, decay rules and a parameter that starts training late;
// replicated and ZeRO-1 sharded over 2 ranks (Gloo on this CPU; the ranks are this binary run
// again on a hidden test case, as tests/dist does); fp32 master weights for a bf16 model
// (equal to fp32 AdamW, updates below bf16 resolution kept, sharded, state round trip).
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>

#include "runtime/dist/dist.h"
#include "runtime/io/safetensors.h"
#include "runtime/model/profile.h"
#include "runtime/model/tiny.h"
#include "runtime/train/data_parallel.h"
#include "runtime/train/optim.h"
#include "tests/dist/ranks.h"
#include "tests/test_util.h"
#include "tests/tiny_spec.h"

using namespace ltrun;
using namespace ltrun::train;

namespace {

constexpr int kSteps = 10;
constexpr double kLr = 3e-3, kDecay = 0.1;
const AdamWOptions kOpts{0.9, 0.95, 1e-8};

// The AdamW of commit 47b53d2 (runtime/train/optim.cpp), one parameter at a time.
struct ReferenceAdamW {
  std::vector<ParamGroup> groups;
  std::map<std::string, std::pair<at::Tensor, at::Tensor>> moments;
  std::map<std::string, int64_t> t;
  void step(double lr) {
    at::NoGradGuard no_grad;
    for (ParamGroup& g : groups) {
      const double glr = lr * g.lr_mult;
      for (model::Param& p : g.params) {
        if (!p.tensor.grad().defined()) continue;
        auto& [m, v] = moments[p.name];
        if (!m.defined()) {
          m = at::zeros_like(p.tensor, p.tensor.options().dtype(at::kFloat));
          v = m.clone();
        }
        const int64_t st = ++t[p.name];
        const double bc1 = 1 - std::pow(kOpts.beta1, double(st)), bc2 = 1 - std::pow(kOpts.beta2, double(st));
        const at::Tensor grad = p.tensor.grad().to(at::kFloat);
        at::Tensor w = p.tensor;
        if (g.weight_decay != 0) w.mul_(1 - glr * g.weight_decay);
        m.mul_(kOpts.beta1).add_(grad, 1 - kOpts.beta1);
        v.mul_(kOpts.beta2).addcmul_(grad, grad, 1 - kOpts.beta2);
        w.addcdiv_(m, (v / bc2).sqrt_().add_(kOpts.eps), -glr / bc1);
      }
    }
  }
};

model::Model opt_model() {
  model::Model m = model::make_tiny(ltrun_test::tiny_spec("qwen3", 3, 5));
  m.set_requires_grad(true);
  return m;
}

// per-layer multipliers, decay on weights only (param_groups' rules)
std::vector<ParamGroup> opt_groups(const model::Model& m) {
  return param_groups(m, kDecay, {{0, 0.5}, {2, 2.0}, {-1, 1.5}}, /*include_frozen=*/true);
}

// Step s's gradients, the same in every process: seeded normal, times 1e-2. Block 1's
// parameters have none in steps 0..3 (frozen then: they start later with fewer steps).
void set_grads(const model::Model& m, int s) {
  int i = 0;
  for (const model::Param& p : m.parameters()) {
    ++i;
    if (p.layer == 1 && s < 4) {
      p.tensor.mutable_grad() = at::Tensor();
      continue;
    }
    at::Generator g = at::detail::createCPUGenerator(uint64_t(1000 * s + i));
    p.tensor.mutable_grad() = at::normal(0.0, 1e-2, p.tensor.sizes(), g);
  }
}

double max_diff(const model::Model& a, const model::Model& b) {
  double d = 0;
  const auto pa = a.parameters(), pb = b.parameters();
  for (size_t i = 0; i < pa.size(); ++i)
    d = std::max(d, (pa[i].tensor - pb[i].tensor).abs().max().item<double>());
  return d;
}

}  // namespace

TEST_CASE("AdamW through foreach kernels equals the per-parameter AdamW over 10 steps") {
  model::Model a = opt_model(), b = opt_model();
  AdamW opt(opt_groups(a), kOpts);
  ReferenceAdamW ref{opt_groups(b)};
  for (int s = 0; s < kSteps; ++s) {
    set_grads(a, s);
    set_grads(b, s);
    const model::OpCount c = model::count_ops([&] { opt.step(kLr); });
    ref.step(kLr);
    // one list update per (group, step count): no per-parameter operators at the top level
    CHECK(c.calls.count("aten::_foreach_addcdiv_") == 1);
    CHECK(c.calls.count("aten::addcdiv_") == 0);
    int64_t lists = 0;
    for (const ParamGroup& g : opt.groups())
      for (const model::Param& p : g.params)
        if (p.tensor.grad().defined()) {
          ++lists;
          break;
        }
    CHECK(c.calls.at("aten::_foreach_addcdiv_") == lists);
  }
  CHECK(opt.param_steps(a.parameters(1)[0].name) == kSteps - 4);
  // The same ATen operations per tensor in the same order: equal to rounding (1e-6 is the
  // issue's bound; on the CPU the foreach fallback is the per-tensor loop, bit for bit)
  CHECK(max_diff(a, b) <= 1e-6);
  CHECK(max_diff(a, b) == 0);
}

// A rank: ZeRO-1 over the same gradients on every rank (as after the average), 10 steps,
// then writes its parameters to $LTRUN_OPT_OUT.RANK.
TEST_CASE("ZeRO-1 rank of the optimizer test", "[.optim_worker]") {
  const dist::Env e = dist::env_from_environment();
  REQUIRE(e.world_size == 2);
  auto g = dist::Group::create(e, "gloo", "cpu", std::chrono::seconds(60));
  model::Model m = opt_model();
  AdamW opt(opt_groups(m), kOpts);
  ShardedAdamW zero(*g, opt, m.parameters());
  for (int s = 0; s < kSteps; ++s) {
    set_grads(m, s);
    zero.step(kLr);
  }
  std::vector<std::pair<std::string, at::Tensor>> ps;
  for (const auto& p : m.parameters()) ps.emplace_back(p.name, p.tensor.detach());
  io::save_safetensors(std::string(std::getenv("LTRUN_OPT_OUT")) + "." + std::to_string(e.rank), ps);
}

TEST_CASE("AdamW sharded over 2 ranks (ZeRO-1) equals the per-parameter AdamW over 10 steps") {
  const std::string out = ltrun_test::scratch_dir("train", "optim_zero") + "/params";
  ltrun_test::run_two_ranks("[.optim_worker]", {"LTRUN_OPT_OUT=" + out});
  model::Model b = opt_model();
  ReferenceAdamW ref{opt_groups(b)};
  for (int s = 0; s < kSteps; ++s) {
    set_grads(b, s);
    ref.step(kLr);
  }
  for (int r = 0; r < 2; ++r) {
    const io::SafetensorsFile f = io::SafetensorsFile::open(out + "." + std::to_string(r));
    for (const auto& p : b.parameters()) {
      INFO("rank " << r << ", " << p.name);
      REQUIRE(f.has(p.name));
      CHECK((f.tensor(p.name) - p.tensor.detach()).abs().max().item<double>() <= 1e-6);
    }
  }
}

// ---- fp32 master weights for bf16 parameters (issue 35, item 3) ----

namespace {

const AdamWOptions kMasterOpts{0.9, 0.95, 1e-8, /*master_weights=*/true};

// The optimizer test's model in bf16 (its fp32 initialisation rounded).
model::Model bf16_model() {
  model::Model m = model::make_tiny(ltrun_test::tiny_spec("qwen3", 3, 5));
  m.to(c10::kCPU, c10::kBFloat16);
  m.set_requires_grad(true);
  return m;
}

// set_grads' gradients rounded to bf16 (the dtype a bf16 model's backward gives), stored
// in the parameter's dtype: the bf16 model gets them as bf16, an fp32 model upcast (exactly).
void set_bf16_grads(const model::Model& m, int s) {
  set_grads(m, s);
  for (const model::Param& p : m.parameters())
    if (p.tensor.grad().defined())
      p.tensor.mutable_grad() = p.tensor.grad().to(at::kBFloat16).to(p.tensor.scalar_type());
}

std::map<std::string, at::Tensor> masters(const AdamW& opt) {
  std::map<std::string, at::Tensor> out;
  for (const auto& [k, t] : opt.state())
    if (k.rfind("master.", 0) == 0) out[k.substr(7)] = t;
  return out;
}

}  // namespace

TEST_CASE("AdamW master weights: a bf16 model's fp32 master equals fp32 AdamW on the upcast model",
          "[master_weights]") {
  model::Model a = bf16_model(), b = opt_model();
  {
    at::NoGradGuard ng;  // b starts at a's bf16 values, upcast (exact)
    const auto pa = a.parameters(), pb = b.parameters();
    for (size_t i = 0; i < pa.size(); ++i) pb[i].tensor.copy_(pa[i].tensor);
  }
  AdamW opt(opt_groups(a), kMasterOpts), ref(opt_groups(b), kOpts);
  for (int s = 0; s < kSteps; ++s) {
    set_bf16_grads(a, s);
    set_bf16_grads(b, s);
    opt.step(kLr);
    ref.step(kLr);
  }
  const auto ms = masters(opt);
  const auto pa = a.parameters(), pb = b.parameters();
  REQUIRE(ms.size() == pa.size());  // every parameter trained, every one bf16
  for (size_t i = 0; i < pa.size(); ++i) {
    INFO(pa[i].name);
    const at::Tensor& w = ms.at(pa[i].name);
    CHECK(w.scalar_type() == at::kFloat);
    // Exact, not within a tolerance: the master starts as b's fp32 values, the gradients are
    // the same fp32 numbers, and both go through the same ATen operations in the same order
    // (on the CPU the foreach kernels are the per-tensor loop), so every rounding is the same.
    CHECK(at::equal(w, pb[i].tensor.detach()));
    // the parameter is its master rounded to bf16
    CHECK(at::equal(pa[i].tensor.detach(), w.to(at::kBFloat16)));
  }
  // the block that started late has its own step count with its master
  CHECK(opt.param_steps(a.parameters(1)[0].name) == kSteps - 4);
  // master copies count in the state's bytes: moments and master, 12 bytes an element
  int64_t n = 0;
  for (const auto& p : pa) n += p.tensor.numel();
  CHECK(opt.state_bytes() == 12 * n);
}

TEST_CASE("AdamW master weights: an update below bf16's resolution accumulates instead of being lost",
          "[master_weights]") {
  // By construction: w = 1 in bf16 and a constant gradient 1 make AdamW's step lr * m^/(sqrt(v^)
  // + eps) = lr (to fp32 rounding: m^ = v^ = 1 up to a few ulps, eps negligible). Below 1 bf16's
  // spacing is 2^-8, so 1 - 1e-3 rounds back to 1 (1e-3 < 2^-9 = 1.95e-3): without master weights
  // every step is lost. With them, after 10 steps the master is 1 - 1e-2 and the parameter its
  // bf16 rounding (0.98828125 = 253 * 2^-8, the grid point nearest 0.99; the midpoint to the
  // next, 0.990234375, is 2.3e-4 away).
  constexpr double lr = 1e-3;
  constexpr int steps = 10;
  auto run = [&](bool master) {
    model::Param p{"w", at::ones({8}, at::kBFloat16).requires_grad_(true), 0, model::ParamPart::Mixer, false};
    ParamGroup g{"layer.0.no_decay", 1.0, 0.0, {p}};
    AdamW opt({g}, {0.9, 0.95, 1e-8, master});
    for (int s = 0; s < steps; ++s) {
      p.tensor.mutable_grad() = at::ones({8}, at::kBFloat16);
      opt.step(lr);
    }
    return std::make_pair(p.tensor.detach().clone(), masters(opt));
  };
  const auto [lost, none] = run(false);
  CHECK(none.empty());
  CHECK(at::equal(lost, at::ones({8}, at::kBFloat16)));  // not moved
  const auto [kept, ms] = run(true);
  REQUIRE(ms.count("w") == 1);
  // 10 steps of lr * (1 + d), |d| a few fp32 ulps (m^, v^, the square root, the division): 1e-8
  // in all, plus 10 roundings of the master near 1 (half an ulp, 3e-8, each): within 1e-6 of 0.99
  CHECK((ms.at("w") - (1 - steps * lr)).abs().max().item<double>() < 1e-6);
  CHECK(at::equal(kept, at::full({8}, 0.98828125, at::kBFloat16)));
  CHECK(at::equal(kept, ms.at("w").to(at::kBFloat16)));
}

// A rank: ZeRO-1 with master weights on the bf16 model, 10 steps; writes its parameters to
// $LTRUN_OPT_OUT.RANK and, from rank 0, the gathered state (masters included) to
// $LTRUN_OPT_OUT.state.
TEST_CASE("ZeRO-1 rank of the master-weights test", "[.optim_master_worker]") {
  const dist::Env e = dist::env_from_environment();
  REQUIRE(e.world_size == 2);
  auto g = dist::Group::create(e, "gloo", "cpu", std::chrono::seconds(60));
  model::Model m = bf16_model();
  AdamW opt(opt_groups(m), kMasterOpts);
  ShardedAdamW zero(*g, opt, m.parameters());
  for (int s = 0; s < kSteps; ++s) {
    set_bf16_grads(m, s);
    zero.step(kLr);
  }
  // each rank holds the masters of its own shard only
  for (const auto& [name, t] : masters(opt)) CHECK(zero.owner(name) == e.rank);
  const auto full = zero.full_state();  // a collective
  const std::string out = std::getenv("LTRUN_OPT_OUT");
  std::vector<std::pair<std::string, at::Tensor>> ps;
  for (const auto& p : m.parameters()) ps.emplace_back(p.name, p.tensor.detach());
  io::save_safetensors(out + "." + std::to_string(e.rank), ps);
  if (e.rank == 0) io::save_safetensors(out + ".state", full);
}

TEST_CASE("AdamW master weights sharded over 2 ranks (ZeRO-1) equal the unsharded run",
          "[master_weights]") {
  const std::string out = ltrun_test::scratch_dir("train", "optim_master_zero") + "/params";
  ltrun_test::run_two_ranks("[.optim_master_worker]", {"LTRUN_OPT_OUT=" + out});
  model::Model b = bf16_model();
  AdamW ref(opt_groups(b), kMasterOpts);
  for (int s = 0; s < kSteps; ++s) {
    set_bf16_grads(b, s);
    ref.step(kLr);
  }
  // Exact: each parameter's update is the same per-tensor operations on the same values on its
  // owner as unsharded; the others receive the owner's bf16 values (broadcast as fp32, exact).
  for (int r = 0; r < 2; ++r) {
    const io::SafetensorsFile f = io::SafetensorsFile::open(out + "." + std::to_string(r));
    for (const auto& p : b.parameters()) {
      INFO("rank " << r << ", " << p.name);
      REQUIRE(f.has(p.name));
      CHECK(at::equal(f.tensor(p.name), p.tensor.detach()));
    }
  }
  // the gathered state (a checkpoint's) holds every master, equal to the unsharded ones
  const io::SafetensorsFile st = io::SafetensorsFile::open(out + ".state");
  const auto ms = masters(ref);
  REQUIRE(ms.size() == b.parameters().size());
  for (const auto& [name, w] : ms) {
    INFO(name);
    REQUIRE(st.has("master." + name));
    CHECK(at::equal(st.tensor("master." + name), w));
  }
}

TEST_CASE("AdamW master weights: state round trip and load rules", "[master_weights]") {
  model::Model a = bf16_model();
  AdamW opt(opt_groups(a), kMasterOpts);
  for (int s = 0; s < 5; ++s) {
    set_bf16_grads(a, s);
    opt.step(kLr);
  }
  const auto st = opt.state();
  // a fresh optimizer loaded from the state continues as the original: bit for bit
  model::Model b = bf16_model();
  {
    at::NoGradGuard ng;
    const auto pa = a.parameters(), pb = b.parameters();
    for (size_t i = 0; i < pa.size(); ++i) pb[i].tensor.copy_(pa[i].tensor);
  }
  AdamW resumed(opt_groups(b), kMasterOpts);
  resumed.load_state(st, opt.steps());
  for (int s = 5; s < kSteps; ++s) {
    set_bf16_grads(a, s);
    set_bf16_grads(b, s);
    opt.step(kLr);
    resumed.step(kLr);
  }
  CHECK(max_diff(a, b) == 0);
  const auto ma = masters(opt), mb = masters(resumed);
  REQUIRE(ma.size() == mb.size());
  for (const auto& [name, w] : ma) CHECK(at::equal(w, mb.at(name)));
  // masters in a state loaded by an optimizer without the option: an error naming the key
  model::Model c = bf16_model();
  AdamW plain(opt_groups(c), kOpts);
  ltrun_test::require_error([&] { plain.load_state(st, opt.steps()); },
                            {"master.", "master_weights = true"});
}

TEST_CASE("AdamW: the fused kernel's step counts are one allocation per update, not one per parameter",
          "[optim]") {
  // Before: a scalar_tensor per parameter per step (on CUDA an allocation and a fill each: 311
  // of them a step for Qwen3-0.6B). Now one tensor of n counts, handed out as views of it.
  const int64_t n = 37, t = 12;
  std::vector<at::Tensor> steps;
  const ltrun::model::OpCount c = ltrun::model::count_ops([&] { steps = step_counters(n, t, at::TensorOptions()); });
  int64_t allocations = 0;
  for (const auto& [name, k] : c.calls)
    if (name == "aten::scalar_tensor" || name == "aten::full" || name == "aten::empty" ||
        name == "aten::empty.memory_format" || name == "aten::zeros" || name == "aten::ones")
      allocations += k;
  CHECK(allocations == 1);
  REQUIRE(int64_t(steps.size()) == n);
  for (const at::Tensor& s : steps) {
    CHECK(s.dim() == 0);  // a scalar, as the kernel's state_steps
    CHECK(s.scalar_type() == at::kFloat);
    CHECK(s.item<float>() == float(t));
    CHECK(s.storage().is_alias_of(steps[0].storage()));
  }
}
