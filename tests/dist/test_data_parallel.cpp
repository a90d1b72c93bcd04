// tests/dist/test_data_parallel.cpp: data-parallel training on c10d/Gloo with 2 ranks on this
// CPU. The ranks are this test binary run again (a hidden test case, "[.dp_worker]", with a
// torchrun-style environment), so no fork happens after LibTorch's thread pools exist.
// Checks: 2 ranks at micro-batch 2 reproduce 1 process at micro-batch 4 (same global batch,
// same data order), for the full plan and a freeze plan; the gradient bytes all-reduced are
// 4 bytes x trainable elements x steps (frozen layers cost nothing); a rank killed with SIGKILL
// makes the other fail within 30 s; ZeRO-1 (shard_optimizer) and the all-reduce overlapped
// with backward (overlap_all_reduce) give replicated data parallel's parameters, and ZeRO-1
// holds each moment on one rank only.
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "runtime/dist/dist.h"
#include "runtime/io/safetensors.h"
#include "runtime/model/tiny.h"
#include "runtime/train/freeze.h"
#include "runtime/train/trainer.h"
#include "tests/dist/ranks.h"
#include "tests/test_util.h"
#include "tests/tiny_spec.h"

using namespace ltrun;
using namespace ltrun::train;
using ltrun_test::free_port;
using ltrun_test::spawn_rank;

namespace {

model::Model dp_model(const std::string& plan) {
  model::Model m = model::make_tiny(ltrun_test::tiny_spec("qwen3", 4, 9, 50));
  m.set_requires_grad(true);
  if (plan == "half") freeze(m, Spec::blocks({0, 1}).add(Spec::named("embeddings")));
  return m;
}

at::Tensor dp_rows() {
  at::Tensor start = at::arange(16, at::kLong).mul(7).remainder(50).unsqueeze(1);
  return (start + at::arange(9, at::kLong).unsqueeze(0)).remainder(50);
}

TrainOptions dp_options(int64_t micro, int64_t steps) {
  TrainOptions o;
  o.steps = steps;
  o.lr = 3e-3;
  o.warmup = 0.25;
  o.micro_batch = micro;
  o.grad_accum = 2;
  o.clip = 0.5;
  o.progress = false;
  return o;
}

std::vector<double> read_numbers(const std::string& path) {
  std::ifstream f(path);
  std::vector<double> out;
  for (double x; f >> x;) out.push_back(x);
  return out;
}

}  // namespace

// A rank: trains with the plan LTRUN_DP_PLAN and writes "bytes loss1 loss2 ..." to
// LTRUN_DP_OUT.RANK; with LTRUN_DP_SLOW it trains "forever" (the kill test).
TEST_CASE("data-parallel worker", "[.dp_worker]") {
  const dist::Env e = dist::env_from_environment();
  REQUIRE(e.world_size == 2);
  auto g = dist::Group::create(e, "gloo", "cpu", std::chrono::seconds(60));
  const char* plan = std::getenv("LTRUN_DP_PLAN");
  model::Model m = dp_model(plan ? plan : "full");
  DataSource d = tensor_source(dp_rows());
  const bool slow = std::getenv("LTRUN_DP_SLOW") != nullptr;
  TrainOptions o = dp_options(2, slow ? 1000000 : 4);
  o.group = g.get();
  const std::string out = std::string(std::getenv("LTRUN_DP_OUT")) + "." + std::to_string(e.rank);
  if (slow) {
    o.on_step = [&](int64_t step, double) {
      if (step == 2) std::ofstream(out + ".started") << "1\n";
    };
  }
  // LTRUN_DP_MODE: "zero" (shard_optimizer), "overlap" (overlap_all_reduce, 1 KiB buckets: many
  // per step), else plain; with a mode every rank also writes its parameters and its
  // optimizer-state bytes, and rank 0 a checkpoint
  const char* mode_env = std::getenv("LTRUN_DP_MODE");
  const std::string mode = mode_env ? mode_env : "";
  // "zero_resume": ZeRO-1 stopped after step 2 (its checkpoint gathers the moments), then a
  // fresh model resumed from it on the same ranks
  o.shard_optimizer = mode == "zero" || mode == "zero_resume";
  o.overlap_all_reduce = mode == "overlap";
  o.bucket_bytes = mode == "overlap" ? 1024 : o.bucket_bytes;
  if (!mode.empty()) o.checkpoint_dir = std::string(std::getenv("LTRUN_DP_OUT")) + ".0.ckpt";  // rank 0's
  if (mode == "zero_resume") {
    TrainOptions first = o;
    first.stop_after = 2;
    REQUIRE(train_causal_lm(m, d, first).stopped_early);
    g->barrier();  // rank 0's checkpoint is complete
    m = dp_model(plan ? plan : "full");
    d = tensor_source(dp_rows());
    o.resume = true;
  }
  const TrainResult r = train_causal_lm(m, d, o);
  if (!mode.empty()) {
    std::vector<std::pair<std::string, at::Tensor>> ps;
    for (const auto& p : m.parameters()) ps.emplace_back(p.name, p.tensor.detach());
    io::save_safetensors(out + ".params", ps);
    std::ofstream(out + ".state_bytes") << r.optimizer_state_bytes << "\n";
  }
  std::ofstream f(out);
  f << r.bytes_all_reduced;
  for (const auto& s : r.log) f << " " << fmt::format("{:.17g}", s.loss);
  f << "\n";
}

TEST_CASE("data parallel: 2 ranks reproduce 1 process at the same global batch; frozen layers cost no bytes") {
  const std::string dir = ltrun_test::scratch_dir("train", "dp");
  std::map<std::string, uint64_t> bytes;
  for (const std::string plan : {"full", "half"}) {
    INFO("plan " << plan);
    model::Model ref = dp_model(plan);
    DataSource d = tensor_source(dp_rows());
    const TrainResult r1 = train_causal_lm(ref, d, dp_options(4, 4));
    const std::string out = dir + "/" + plan;
    ltrun_test::run_two_ranks("[.dp_worker]", {"LTRUN_DP_PLAN=" + plan, "LTRUN_DP_OUT=" + out});
    const auto a = read_numbers(out + ".0"), b = read_numbers(out + ".1");
    REQUIRE(a.size() == 5);
    REQUIRE(b == a);  // every rank reports the same averaged loss
    for (size_t i = 0; i < 4; ++i) {
      INFO("step " << i + 1);
      // fp32: the two halves of the batch are summed in another order (rank means, then
      // their mean): a few ulps of the loss
      CHECK(a[i + 1] == Approx(r1.log[i].loss).epsilon(1e-5));
    }
    int64_t trainable = 0;
    for (const auto& p : ref.parameters())
      if (p.tensor.requires_grad()) trainable += p.tensor.numel();
    // fp32 gradients of every trainable element, once per step
    bytes[plan] = uint64_t(a[0]);
    CHECK(bytes[plan] == uint64_t(trainable) * 4 * 4);
  }
  const double ratio = double(bytes["half"]) / double(bytes["full"]);
  INFO("half-frozen / full bytes = " << ratio);
  CHECK(ratio > 0.4);
  CHECK(ratio < 0.6);
}

TEST_CASE("data parallel: a rank killed with SIGKILL makes the other fail within 30 s") {
  const std::string dir = ltrun_test::scratch_dir("train", "dp_kill");
  const int port = free_port();
  const std::string out = dir + "/kill";
  std::vector<std::string> env = {"LTRUN_DP_OUT=" + out, "LTRUN_DP_SLOW=1"};
  const pid_t p0 = spawn_rank("[.dp_worker]", 0, port, env), p1 = spawn_rank("[.dp_worker]", 1, port, env);
  const auto t0 = std::chrono::steady_clock::now();
  while (!std::filesystem::exists(out + ".1.started") &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(std::filesystem::exists(out + ".1.started"));
  kill(p1, SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  int s0 = 0, s1 = 0;
  waitpid(p1, &s1, 0);
  pid_t done = 0;
  while ((done = waitpid(p0, &s0, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() - killed < std::chrono::seconds(30))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (done == 0) {
    kill(p0, SIGKILL);
    waitpid(p0, &s0, 0);
    FAIL("rank 0 still ran 30 s after rank 1 was killed");
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  INFO("rank 0 ended " << secs << " s after the kill");
  CHECK(WIFEXITED(s0));
  CHECK(WEXITSTATUS(s0) != 0);  // the worker test case failed with the collective's error
  CHECK_FALSE(std::filesystem::exists(out + ".0"));
}

namespace {

// Runs 2 ranks of the worker in `mode` with `plan`; both must succeed.
void run_pair(const std::string& out, const std::string& mode, const std::string& plan = "full") {
  ltrun_test::run_two_ranks("[.dp_worker]", {"LTRUN_DP_PLAN=" + plan, "LTRUN_DP_OUT=" + out, "LTRUN_DP_MODE=" + mode});
}

std::map<std::string, at::Tensor> read_tensors(const std::string& path) {
  const io::SafetensorsFile f = io::SafetensorsFile::open(path);
  std::map<std::string, at::Tensor> out;
  for (const io::TensorInfo& t : f.tensors()) out[t.name] = f.tensor(t.name).clone();
  return out;
}

// Largest |a - b| over tensors of the same names (every name of `a` must be in `b`).
double max_diff(const std::map<std::string, at::Tensor>& a, const std::map<std::string, at::Tensor>& b) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (const auto& [k, t] : a) {
    INFO(k);
    REQUIRE(b.count(k));
    if (t.dim() == 0 && t.scalar_type() == at::kLong) {
      CHECK(t.item<int64_t>() == b.at(k).item<int64_t>());
      continue;
    }
    d = std::max(d, (t.to(at::kDouble) - b.at(k).to(at::kDouble)).abs().max().item<double>());
  }
  return d;
}

int64_t read_int(const std::string& path) {
  std::ifstream f(path);
  int64_t x = -1;
  f >> x;
  return x;
}

}  // namespace

TEST_CASE("data parallel: ZeRO-1 and the overlapped all-reduce give replicated data parallel's parameters") {
  const std::string dir = ltrun_test::scratch_dir("train", "dp_modes");
  run_pair(dir + "/plain", "plain");
  run_pair(dir + "/zero", "zero");
  run_pair(dir + "/overlap", "overlap");
  run_pair(dir + "/zero_resume", "zero_resume");
  run_pair(dir + "/plain_half", "plain", "half");
  run_pair(dir + "/overlap_half", "overlap", "half");
  const auto ref = read_tensors(dir + "/plain.0.params");
  // Tolerance: with ZeRO-1 the owner computes replicated AdamW's update from the same averaged
  // gradients, element by element, and the broadcast copies it; with 2 ranks each averaged
  // gradient element is one sum a + b whatever the bucket (order-free), and the overlapped
  // hook adds the micro-batches' gradients in AccumulateGrad's order. So both should match
  // to the bit; 1e-6 (a few fp32 ulps of weights of order 1) allows one rounding difference
  // per step without letting a wrong shard, a missed broadcast or a dropped bucket pass.
  const double tol = 1e-6;
  for (const std::string mode : {"zero", "overlap"}) {
    for (int rank : {0, 1}) {
      INFO(mode << " rank " << rank);
      CHECK(max_diff(ref, read_tensors(fmt::format("{}/{}.{}.params", dir, mode, rank))) <= tol);
    }
    INFO(mode);
    CHECK(read_numbers(dir + "/" + mode + ".0") == read_numbers(dir + "/plain.0"));  // bytes, losses
  }
  // resumed from ZeRO-1's checkpoint (the moments gathered, then sharded again): as uninterrupted
  for (int rank : {0, 1}) {
    INFO("zero_resume rank " << rank);
    CHECK(max_diff(ref, read_tensors(fmt::format("{}/zero_resume.{}.params", dir, rank))) <= tol);
  }
  // a half-frozen plan: only the trainable parameters' buckets, frozen ones untouched
  const auto ref_half = read_tensors(dir + "/plain_half.0.params");
  CHECK(max_diff(ref_half, read_tensors(dir + "/overlap_half.0.params")) <= tol);
  CHECK(max_diff(ref_half, read_tensors(dir + "/overlap_half.1.params")) <= tol);
  CHECK(read_numbers(dir + "/overlap_half.0") == read_numbers(dir + "/plain_half.0"));
  // ZeRO-1's checkpoint holds every moment, gathered from both ranks: replicated's state
  // (rng.cpu aside: the global CPU generator is not part of the comparison)
  auto ck_ref = read_tensors(dir + "/plain.0.ckpt/step-00000004/optimizer.safetensors");
  auto ck_zero = read_tensors(dir + "/zero.0.ckpt/step-00000004/optimizer.safetensors");
  REQUIRE(ck_ref.erase("rng.cpu") == 1);
  REQUIRE(ck_zero.erase("rng.cpu") == 1);
  CHECK(max_diff(ck_ref, ck_zero) <= tol);
  // each moment on one rank: the two shards add up to the replicated state, and the
  // size-balanced split leaves each rank well under the replicated bytes
  const int64_t full = read_int(dir + "/plain.0.state_bytes");
  const int64_t z0 = read_int(dir + "/zero.0.state_bytes"), z1 = read_int(dir + "/zero.1.state_bytes");
  INFO("replicated " << full << " B, ZeRO-1 ranks " << z0 << " B and " << z1 << " B");
  int64_t elems = 0;
  for (const auto& [k, t] : ref) elems += t.numel();
  CHECK(full == elems * 8);  // m and v in fp32 for every (trainable) element
  CHECK(z0 + z1 == full);
  CHECK(double(std::max(z0, z1)) / double(full) < 0.6);
}
