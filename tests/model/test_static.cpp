// tests/model/test_static.cpp: generate's static-cache path (model/static_decode.h) against the
// dynamic one: the same tokens for every layer kind, greedy and seeded, with rows finishing at
// different steps (dropped between stop checks) and more prompts than places (refill).
#include <cmath>
#include <cstdlib>

#include "model_test_util.h"
#include "runtime/model/generate.h"
#include "runtime/model/profile.h"
#include "runtime/model/static_decode.h"

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
