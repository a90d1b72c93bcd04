// tests/model/test_static.cpp: generate's static-cache path (model/static_decode.h) against the
// dynamic one: the same tokens for every layer kind, greedy and seeded, with rows finishing at
// different steps (dropped between stop checks) and more prompts than places (refill); the
// CUDA-graph logic (step_graph.h) through a stand-in capture: replays, a capture that throws.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>

#include "model_test_util.h"
#include "runtime/model/generate.h"
#include "runtime/model/profile.h"
#include "runtime/model/static_decode.h"
#include "runtime/model/step_graph.h"

using namespace ltrun::model;

namespace {

using model_test::KindModel;

// Every layer kind that keeps a decode state: attention (the decoder block of qwen3, qwen2 and
// llama; nemotron_h's attention; qwen3_5's gated attention), Mamba2 and Gated DeltaNet.
std::vector<KindModel> kinds() {
  std::vector<KindModel> out;
  for (const char* arch : {"qwen3", "qwen2", "llama"})
    out.push_back({std::string("attention (") + arch + ")", model_test::sharp_tiny(model_test::spec(arch))});
  for (auto& k : model_test::recurrent_kinds()) out.push_back(std::move(k));
  return out;
}

// Whether the token drawn at new position j of `row` (after `prefix`) lies within rounding of
// another choice: the two paths compute the same logits in other orders (batches of other
// sizes, a padded or a left-aligned cache of another width), which model_test::rel_err bounds
// by ~2e-6 of the largest |logit|. Greedy: the top two logits of a full pass closer than 1e-4
// of the largest (ten times the budget, doubled for two paths). Sampled: the draw's point
// u x total of the CDF of softmax(logits / T) (fp64) within 2e-4 x max|logit| / T of a token
// boundary (a logit moved by e moves a probability by at most 2e/T relative). Only there may
// the paths' tokens differ: a difference anywhere else is a fault.
bool near_tie(const Model& m, std::vector<int64_t> prefix, const GenerateOptions& o, int64_t row, int64_t j) {
  const at::Tensor l = m.forward(at::tensor(prefix, at::kLong).unsqueeze(0)).logits[0][-1].to(at::kDouble);
  const double scale = std::max(1.0, l.abs().max().item<double>());
  if (o.temperature <= 0) {
    const at::Tensor top = std::get<0>(l.topk(2));
    return (top[0] - top[1]).item<double>() < 1e-4 * scale;
  }
  const at::Tensor cdf = (l / o.temperature).softmax(-1).cumsum(-1);
  const double x = row_draw(o.seed, o.stream_offset + row, j) * cdf[-1].item<double>();
  return (cdf - x).abs().min().item<double>() < 2e-4 * scale / o.temperature;
}

// The static path's generations against the dynamic path's: per row, the same tokens up to
// a position where the draw is a near tie (see near_tie; the rows are then checked no
// further), and there the same finish and log-probs within model_test's budget (1e-4, as
// test_generate's check_same). Returns the rows that agree to the end.
int check_equal(const Model& m, const std::vector<std::vector<int64_t>>& prompts, const GenerateOptions& o,
                const std::vector<Generation>& stat, const std::vector<Generation>& dyn) {
  REQUIRE(stat.size() == dyn.size());
  int whole = 0;
  for (size_t r = 0; r < dyn.size(); ++r) {
    INFO("row " << r);
    const auto &a = stat[r].tokens, &b = dyn[r].tokens;
    size_t j = 0;
    while (j < a.size() && j < b.size() && a[j] == b[j]) ++j;
    if (j == a.size() && j == b.size()) {
      CHECK(stat[r].finish == dyn[r].finish);
      ++whole;
    } else {
      std::vector<int64_t> prefix = prompts[r];
      prefix.insert(prefix.end(), b.begin(), b.begin() + int64_t(j));
      INFO("first difference at new token " << j);
      CHECK(near_tie(m, prefix, o, int64_t(r), int64_t(j)));
    }
    REQUIRE(stat[r].logprobs.size() == a.size());
    REQUIRE(dyn[r].logprobs.size() == b.size());
    for (size_t k = 0; k < j && k < stat[r].logprobs.size() && k < dyn[r].logprobs.size(); ++k)
      CHECK(std::abs(stat[r].logprobs[k] - dyn[r].logprobs[k]) < 1e-4);
  }
  return whole;
}

}  // namespace

TEST_CASE("row_draws: the same bits as row_draw, as tensor ops", "[model][generate][static]") {
  std::vector<int64_t> rows, steps;
  for (int64_t r : {int64_t(0), int64_t(1), int64_t(7), int64_t(1) << 40, INT64_MAX})
    for (int64_t s : {int64_t(0), int64_t(3), int64_t(255), int64_t(1) << 33}) {
      rows.push_back(r);
      steps.push_back(s);
    }
  for (uint64_t seed : {uint64_t(0), uint64_t(42), ~uint64_t(0)}) {
    const at::Tensor u = row_draws(seed, at::tensor(rows, at::kLong), at::tensor(steps, at::kLong));
    REQUIRE(u.scalar_type() == at::kDouble);
    for (size_t i = 0; i < rows.size(); ++i) {
      INFO("seed " << seed << ", row " << rows[i] << ", step " << steps[i]);
      CHECK(u[int64_t(i)].item<double>() == row_draw(seed, rows[i], steps[i]));
    }
  }
}

TEST_CASE("static cache: the same tokens as the dynamic path, for every layer kind",
          "[model][generate][static]") {
  // 11 prompts of 1..9 tokens; row 0 runs to the length limit, the others end after 1..4
  // tokens (the stop callback), so rows finish inside a stop-check window (sync_every = 3)
  // and at its end; 3 places: the other 8 rows refill them.
  const std::vector<std::vector<int64_t>> shapes = {
      {12}, {7, 7, 21}, {3, 1, 4, 1, 5, 9, 2, 6, 5}, {5, 17, 3, 44, 9, 30}, {12}, {40, 2}};
  std::vector<std::vector<int64_t>> rows;
  for (int i = 0; i < 11; ++i) rows.push_back(shapes[size_t(i) % shapes.size()]);
  for (auto& [name, m] : kinds()) {
    DYNAMIC_SECTION(name) {
      GenerateOptions o;
      o.max_new_tokens = 14;
      o.logprobs = true;
      o.stop_ids = std::vector<int64_t>{};
      o.stop = [](int row, const std::vector<int64_t>& t) { return row > 0 && int(t.size()) == 1 + row % 4; };
      for (double temperature : {0.0, 1.3}) {
        o.temperature = temperature;
        o.seed = 21;
        for (int64_t max_rows : {int64_t(3), int64_t(0)}) {
          o.max_rows = max_rows;
          DYNAMIC_SECTION("temperature " << temperature << ", max_rows " << max_rows) {
            o.cache = "dynamic";
            const auto dyn = generate(m, rows, o);
            o.cache = "static";
            o.sync_every = 3;
            GenerateStats st;
            const auto stat = generate(m, rows, o, &st);
            const int whole = check_equal(m, rows, o, stat, dyn);
            INFO(whole << " of " << rows.size() << " rows equal to the end");
            CHECK(whole > 0);
            CHECK(st.peak_rows == (max_rows > 0 ? max_rows : int64_t(rows.size())));
            // with 3 places, waiting rows take finished rows' places at the stop checks
            if (max_rows > 0)
              CHECK(st.refilled_rows > 0);
            else
              CHECK(st.refilled_rows == 0);
            // the longest row's 14 tokens: 14 steps (the last one's forward unused), plus the
            // steps finished rows ran until their window's stop check
            CHECK(st.decode_steps >= 14);
            // stop ids too (greedy: the dynamic path's row 0 token 4 ends every row that
            // samples it), and a stop check every step
            o.cache = "dynamic";
            o.stop_ids = std::vector<int64_t>{dyn[0].tokens[4]};
            o.keep_stop_id = true;
            const auto dyn2 = generate(m, rows, o);
            o.cache = "static";
            o.sync_every = 1;
            check_equal(m, rows, o, generate(m, rows, o), dyn2);
            o.stop_ids = std::vector<int64_t>{};
            o.keep_stop_id = false;
          }
        }
      }
    }
  }
}

TEST_CASE("static cache: G samples per prompt, prefilled once, on streams after an offset",
          "[model][generate][static]") {
  // rollouts' shape: G = 4 copies of each prompt (share_prefill), stream_offset as a later
  // rank's rows, no cap on rows, keep_stop_id with a stop id that ends some rows early
  const Model m = model_test::sharp_tiny(model_test::spec("qwen3"));
  std::vector<std::vector<int64_t>> rows;
  for (const auto& p : std::vector<std::vector<int64_t>>{{5, 17, 3}, {12}, {7, 7, 21, 2, 9}})
    for (int g = 0; g < 4; ++g) rows.push_back(p);
  GenerateOptions o;
  o.max_new_tokens = 10;
  o.temperature = 1.1;
  o.seed = 7;
  o.stream_offset = 5;
  o.logprobs = true;
  o.keep_stop_id = true;
  o.stop_ids = std::vector<int64_t>{};
  const auto probe = generate(m, rows, o);
  o.stop_ids = std::vector<int64_t>{probe[0].tokens[2]};
  const auto dyn = generate(m, rows, o);
  o.cache = "static";
  GenerateStats st;
  const auto stat = generate(m, rows, o, &st);
  CHECK(check_equal(m, rows, o, stat, dyn) > 0);
  CHECK(st.prefills == 1);
  // the copies of a prompt draw from their own streams: not all alike
  bool differ = false;
  for (int g = 1; g < 4; ++g) differ |= stat[size_t(g)].tokens != stat[0].tokens;
  CHECK(differ);
}

TEST_CASE("static cache: options are checked", "[model][generate][static]") {
  const Model m = model_test::sharp_tiny(model_test::spec("qwen3"));
  GenerateOptions o;
  o.max_new_tokens = 3;
  o.cache = "paged";
  model_test::require_error([&] { generate(m, {{1, 2}}, o); }, {"option cache must be \"dynamic\" or \"static\"", "paged"});
  o.cache = "static";
  o.sync_every = 0;
  model_test::require_error([&] { generate(m, {{1, 2}}, o); }, {"sync_every must be >= 1"});
  o.sync_every = 4;
  o.drop_finished = false;
  model_test::require_error([&] { generate(m, {{1, 2}}, o); }, {"always drops finished rows"});
  o.drop_finished = true;
  ::setenv("LTRUN_STATIC_GRAPHS", "yes", 1);
  model_test::require_error([&] { generate(m, {{1, 2}}, o); }, {"LTRUN_STATIC_GRAPHS must be \"0\" or \"1\"", "yes"});
  ::setenv("LTRUN_STATIC_GRAPHS", "0", 1);  // a CPU model runs eagerly either way
  const auto eager = generate(m, {{1, 2}}, o);
  ::unsetenv("LTRUN_STATIC_GRAPHS");
  CHECK(generate(m, {{1, 2}}, o)[0].tokens == eager[0].tokens);
}

TEST_CASE("static cache: buckets of places", "[model][generate][static]") {
  CHECK(step_bucket(1, 64) == 1);
  CHECK(step_bucket(3, 64) == 4);
  CHECK(step_bucket(33, 64) == 64);
  CHECK(step_bucket(5, 6) == 6);
}

TEST_CASE("static cache: ATen operators per block per decode step (CPU proxy)", "[model][generate][static][profile]") {
  // The proxy for a GPU decode step's launches (model/profile.h). The static step masks the
  // whole cache; on the CPU the fused q/k pass writes each row's key and value at its own
  // position (qkv_heads' write_at), so no scatter is left: printed for docs/performance.md,
  // bounded by the dynamic path's count (it was the dynamic path's + 2 with the scatters).
  const Model m = model_test::sharp_tiny(model_test::spec("qwen3"));
  for (int64_t batch : {int64_t(1), int64_t(4)}) {
    const DecodeOps d = decode_ops(m, batch, 6, 4, "dynamic"), s = decode_ops(m, batch, 6, 4, "static");
    std::string names;
    for (const auto& [name, k] : s.by_name) names += " " + name + " " + std::to_string(k);
    WARN("qwen3 tiny, batch " << batch << ": kernels per block per decode step: dynamic " << d.kernels << ", static "
                              << s.kernels << " (" << names << " ); dispatched: dynamic " << d.dispatched
                              << ", static " << s.dispatched << "; outside blocks per step: dynamic " << d.outside
                              << ", static " << s.outside);
    CHECK(s.kernels <= d.kernels);
    CHECK(s.by_name.count("aten::scatter_") == 0);
  }
}

TEST_CASE("decode: bytes allocated per block per step, at most its weights and one read of its cache",
          "[model][generate][static][profile]") {
  // The CPU proxy of a decode step's memory traffic (DecodeOps::bytes), fp64 (off the fused CPU
  // passes: the path a GPU takes), grouped heads (qwen3 tiny: 2 query heads per kv head), 8 rows
  // of 120 positions: the cache dominates the block. Expanding K and V per query head (SDPA's
  // old decode path on LibTorch 2.x) allocated twice the cache per block per step.
  const Model m = model_test::sharp_tiny(model_test::spec("qwen3"), at::kDouble);
  const Config& c = m.config();
  REQUIRE(c.n_heads > c.n_kv_heads);
  int64_t weights = 0;
  for (const Param& p : m.parameters(0)) weights += int64_t(p.tensor.nbytes());
  const int64_t batch = 8, prompt = 116, new_tokens = 4;
  // one read of a block's keys and values at the last step's positions
  const int64_t cache = 2 * batch * c.n_kv_heads * (prompt + new_tokens) * c.head_dim * 8;
  for (const char* kind : {"dynamic", "static"}) {
    const DecodeOps d = decode_ops(m, batch, prompt, int(new_tokens), kind);
    WARN("qwen3 tiny fp64, batch 8, " << prompt << "-token prompt, " << kind << " cache: " << d.bytes
                                      << " bytes allocated per block per decode step; block weights " << weights
                                      << ", its cache " << cache);
    CHECK(d.bytes > 0);
    CHECK(d.bytes <= double(weights + cache));
  }
}

TEST_CASE("static cache: no host synchronisation per token", "[model][generate][static][profile]") {
  // On a GPU the host waits for the device when it reads a value: item() (_local_scalar_dense)
  // or nonzero(). The operators called over 12 new tokens minus those over 4, with one stop
  // check for both (sync_every 100): none of them in the static path's 8 extra steps, while
  // the dynamic path reads the new ids' range in every step (Model::forward's check).
  const Model m = model_test::sharp_tiny(model_test::spec("qwen3"));
  const std::vector<std::vector<int64_t>> rows = {{5, 17, 3}, {12}, {7, 7, 21, 2}};
  auto reads = [&](const std::string& cache, double temperature) {
    GenerateOptions o;
    o.cache = cache;
    o.temperature = temperature;
    o.seed = 3;
    o.logprobs = true;
    o.sync_every = 100;
    o.stop_ids = std::vector<int64_t>{};
    auto count = [&](int n) {
      o.max_new_tokens = n;
      const OpCount c = count_ops([&] { generate(m, rows, o); });
      int64_t k = 0;
      for (const char* name : {"aten::item", "aten::_local_scalar_dense", "aten::nonzero"})
        if (auto it = c.calls.find(name); it != c.calls.end()) k += it->second;
      return k;
    };
    return count(12) - count(4);
  };
  for (double t : {0.0, 1.3}) {
    INFO("temperature " << t);
    CHECK(reads("static", t) == 0);
    CHECK(reads("dynamic", t) > 0);
  }
}

namespace {

// A stand-in for CUDA's graph capture (step_graph.h's StepCapture): while it records, the
// test's step counts itself as recorded instead of running (a CUDA capture runs nothing), and
// a replay counts as one run of what was recorded. begin() throws when fail_begin is set.
struct CaptureLog {
  int begun = 0, ended = 0, aborted = 0, replayed = 0;
  bool recording = false, fail_begin = false;
};
struct FakeCapture : StepCapture {
  CaptureLog& log;
  explicit FakeCapture(CaptureLog& l) : log(l) {}
  void begin() override {
    ++log.begun;
    if (log.fail_begin) throw std::runtime_error("capture_begin failed\nframe #0: a backtrace line");
    log.recording = true;
  }
  void end() override {
    log.recording = false;
    ++log.ended;
  }
  void abort() noexcept override {
    log.recording = false;
    ++log.aborted;
  }
  void replay() override { ++log.replayed; }
};
StepCaptureFactory fake(CaptureLog& log) {
  return [&log] { return std::make_unique<FakeCapture>(log); };
}

// What fn writes to stderr (fmt::print(stderr) included).
std::string stderr_of(const std::function<void()>& fn) {
  std::fflush(stderr);
  FILE* tmp = std::tmpfile();
  REQUIRE(tmp);
  const int saved = ::dup(2);
  ::dup2(::fileno(tmp), 2);
  try {
    fn();
  } catch (...) {
    std::fflush(stderr);
    ::dup2(saved, 2);
    ::close(saved);
    throw;
  }
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::rewind(tmp);
  std::string out;
  for (int c; (c = std::fgetc(tmp)) != EOF;) out += char(c);
  std::fclose(tmp);
  return out;
}

int count_of(const std::string& s, const std::string& x) {
  int n = 0;
  for (size_t at = s.find(x); at != std::string::npos; at = s.find(x, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("step graphs: warm-up, one capture per bucket, then replays", "[model][generate][static]") {
  CaptureLog log;
  StepGraphs g(c10::Device(c10::kCPU), true, fake(log));
  REQUIRE(g.capturing());
  int ran = 0, recorded = 0;
  auto step = [&] { ++(log.recording ? recorded : ran); };
  for (int i = 0; i < 5; ++i) g.run(4, step);
  CHECK(ran == 1);       // the warm-up
  CHECK(recorded == 1);  // the capture ran nothing
  CHECK(log.replayed == 4);
  CHECK(g.graphs() == 1);
  CHECK(g.replays() == 4);
  g.run(2, step);
  g.run(2, step);
  CHECK(g.graphs() == 2);
  CHECK(g.replays() == 5);
  CHECK(g.fallbacks() == 0);
  CHECK(ran + log.replayed == 7);  // every run() ran the step once
  // graphs off (LTRUN_STATIC_GRAPHS=0): every step eager, nothing captured
  CaptureLog off_log;
  StepGraphs off(c10::Device(c10::kCPU), false, fake(off_log));
  for (int i = 0; i < 3; ++i) off.run(4, step);
  CHECK(off_log.begun == 0);
  CHECK(off.graphs() + off.replays() + off.fallbacks() == 0);
  // a CPU device without a test's capture: eager on every build
  StepGraphs cpu(c10::Device(c10::kCPU), true);
  CHECK_FALSE(cpu.capturing());
}

TEST_CASE("step graphs: a capture that throws is ended, and the steps run eagerly", "[model][generate][static]") {
  // Before: an exception between capture_begin and capture_end left the stream capturing
  // (every later CUDA call failed) and escaped generate. Now the capture is aborted, the step
  // runs eagerly, every later one too, and one warning per process says so. Every fallback of
  // this test binary happens inside this test case, so the warning is counted exactly.
  const std::string err = stderr_of([] {
    CaptureLog log;
    StepGraphs g(c10::Device(c10::kCPU), true, fake(log));
    int ran = 0;
    // a step that throws while recording (as a host synchronisation inside a CUDA capture)
    auto step = [&] {
      if (log.recording) throw std::runtime_error("operation not permitted when stream is capturing\nframe #0");
      ++ran;
    };
    for (int i = 0; i < 4; ++i) g.run(4, step);
    CHECK(log.begun == 1);  // captured once, never again
    CHECK(log.aborted == 1);
    CHECK(log.ended == 0);
    CHECK(ran == 4);  // every step ran, eagerly
    CHECK(g.fallbacks() == 1);
    CHECK(g.graphs() == 0);
    CHECK(g.replays() == 0);
    CHECK_FALSE(g.capturing());

    // generate's static path with captures that fail: the same tokens as without graphs,
    // the fallback in its stats; 7 prompts of mixed lengths, 4 places, stops every 2 steps
    const Model m = model_test::sharp_tiny(model_test::spec("qwen3"));
    const std::vector<std::vector<int64_t>> rows = {{5, 17, 3}, {12}, {7, 7, 21, 2, 9}, {3, 1, 4, 1, 5, 9, 2},
                                                    {40, 2}, {8}, {6, 6, 6}};
    GenerateOptions o;
    o.max_new_tokens = 9;
    o.cache = "static";
    o.max_rows = 4;
    o.sync_every = 2;
    o.stop = [](int row, const std::vector<int64_t>& t) { return int(t.size()) == 2 + row % 5; };
    GenerateStats eager_st, failed_st;
    const auto eager = generate(m, rows, o, &eager_st);
    CaptureLog gen_log;
    gen_log.fail_begin = true;
    const auto failed = generate_static(m, rows, o, pad_token(m.config()), m.config().eos_token_ids, 4, failed_st,
                                        fake(gen_log));
    REQUIRE(failed.size() == eager.size());
    for (size_t r = 0; r < eager.size(); ++r) {
      CHECK(failed[r].tokens == eager[r].tokens);
      CHECK(failed[r].finish == eager[r].finish);
    }
    CHECK(eager_st.graphs + eager_st.replays + eager_st.fallbacks == 0);  // a CPU model: eager
    CHECK(failed_st.fallbacks == 1);
    CHECK(failed_st.graphs == 0);
    CHECK(failed_st.replays == 0);
    CHECK(gen_log.begun == 1);
    CHECK(gen_log.aborted == 1);
  });
  INFO("stderr: " << err);
  CHECK(count_of(err, "ltrun: warning: generate: capturing the static-cache decode step") == 1);
  CHECK(count_of(err, "operation not permitted when stream is capturing") == 1);  // the reason, first line only
  CHECK(count_of(err, "frame #0") == 0);
}

TEST_CASE("static cache: what the graphs did, in the stats", "[model][generate][static]") {
  // graphs, replays and fallbacks through generate_static with captures that succeed: the
  // stand-in records nothing, so only the counts are checked (tokens: the CUDA smoke test)
  const Model m = model_test::sharp_tiny(model_test::spec("qwen3"));
  const std::vector<std::vector<int64_t>> rows = {{5, 17, 3}, {12}, {7, 7, 21, 2, 9}};
  GenerateOptions o;
  o.max_new_tokens = 6;
  o.cache = "static";
  o.sync_every = 3;
  o.stop_ids = std::vector<int64_t>{};
  CaptureLog log;
  GenerateStats st;
  generate_static(m, rows, o, pad_token(m.config()), {}, 3, st, fake(log));
  // bucket 4 (3 rows, 3 places: min(4, 3) = 3): 6 steps, the first eager, the second captured
  CHECK(st.decode_steps == 6);
  CHECK(st.graphs == 1);
  CHECK(st.replays == 5);
  CHECK(st.fallbacks == 0);
  CHECK(log.replayed == 5);
}
