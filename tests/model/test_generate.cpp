// tests/model/test_generate.cpp: generation against a plain argmax loop over full forwards,
// batching against single prompts, sampling filters against their definitions.
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <limits>
#include <map>

#include "model_test_util.h"
#include "runtime/model/generate.h"

using namespace ltrun::model;

namespace {

// Greedy decoding checked the slow way: before each of `tokens`, a full forward pass over the
// sequence so far gives it the largest logit, up to rounding. The KV cache, a padded batch and
// a full pass sum in other orders; in fp32 through 3 blocks of width <= 48 that moves a logit
// by ~ 3 x 48 x 2^-24 = 9e-6 of the largest |logit| at most, so a near tie may go either way
// on another host's BLAS kernels and an exact argmax equality would fail for no fault. The
// tolerance, 1e-4 of the largest |logit| (ten times the bound), is far below the gaps between
// a sharp model's top logits, so a wrong pick still fails.
void check_greedy(const Model& m, std::vector<int64_t> seq, const std::vector<int64_t>& tokens) {
  for (size_t i = 0; i < tokens.size(); ++i) {
    const at::Tensor ids = at::tensor(seq, at::kLong).unsqueeze(0);
    const at::Tensor l = m.forward(ids).logits[0][-1].to(at::kDouble);
    const double best = l.max().item<double>(), got = l[tokens[i]].item<double>();
    INFO("new token " << i << " (id " << tokens[i] << "): logit " << got << ", largest " << best
                      << " (id " << l.argmax().item<int64_t>() << ")");
    CHECK(best - got <= 1e-4 * std::max(1.0, l.abs().max().item<double>()));
    seq.push_back(tokens[i]);
  }
}

const std::vector<std::vector<int64_t>> kPrompts = {{5, 17, 3, 44, 9, 30}, {12}, {7, 7, 21}};

}  // namespace

TEST_CASE("greedy generation equals argmax over full recomputation", "[model][generate]") {
  for (const char* arch : {"qwen3", "qwen2", "llama"}) {
    DYNAMIC_SECTION(arch) {
      const Model m = model_test::sharp_tiny(model_test::spec(arch));
      GenerateOptions o;
      o.max_new_tokens = 8;
      const auto batch = generate(m, kPrompts, o);
      REQUIRE(batch.size() == kPrompts.size());
      for (size_t b = 0; b < kPrompts.size(); ++b) {
        REQUIRE(batch[b].tokens.size() == 8);
        check_greedy(m, kPrompts[b], batch[b].tokens);
        CHECK(batch[b].finish == "length");
        check_greedy(m, kPrompts[b], generate(m, {kPrompts[b]}, o)[0].tokens);  // alone, as in a batch
      }
    }
  }
}

TEST_CASE("sampling is seeded and deterministic", "[model][generate]") {
  const Model m = model_test::sharp_tiny(model_test::spec("qwen3"));
  GenerateOptions o;
  o.max_new_tokens = 12;
  o.temperature = 1.5;
  o.seed = 42;
  const auto a = generate(m, kPrompts, o), b = generate(m, kPrompts, o);
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].tokens == b[i].tokens);
  o.seed = 43;
  const auto c = generate(m, kPrompts, o);
  bool differs = false;
  for (size_t i = 0; i < a.size(); ++i) differs |= a[i].tokens != c[i].tokens;
  CHECK(differs);

  // filters that leave one candidate are greedy whatever the seed
  GenerateOptions greedy;
  greedy.max_new_tokens = 12;
  const auto g = generate(m, kPrompts, greedy);
  o.top_k = 1;
  for (size_t i = 0; i < g.size(); ++i) CHECK(generate(m, kPrompts, o)[i].tokens == g[i].tokens);
  o.top_k = 0;
  o.top_p = 1e-6;
  for (size_t i = 0; i < g.size(); ++i) CHECK(generate(m, kPrompts, o)[i].tokens == g[i].tokens);
}

TEST_CASE("top-k and top-p keep exactly the tokens their definitions keep", "[model][generate]") {
  // probabilities .05 .5 .15 .3 over tokens 0..3
  const at::Tensor logits =
      at::log(at::tensor({0.05, 0.5, 0.15, 0.3}, at::kFloat)).repeat({400, 1});
  at::Generator gen = at::detail::createCPUGenerator(0);
  auto drawn = [&](const GenerateOptions& o) {
    const at::Tensor t = next_tokens(logits, o, gen);
    std::set<int64_t> s;
    for (int64_t i = 0; i < t.numel(); ++i) s.insert(t[i].item<int64_t>());
    return s;
  };
  GenerateOptions o;
  o.temperature = 1.0;
  CHECK(drawn(o) == std::set<int64_t>{0, 1, 2, 3});
  o.top_k = 2;
  CHECK(drawn(o) == std::set<int64_t>{1, 3});
  o.top_k = 0;
  // ascending cumulative mass .05 .2 .5 1: tokens within 1 - top_p = .3 of the tail go
  o.top_p = 0.7;
  CHECK(drawn(o) == std::set<int64_t>{1, 3});
  o.top_p = 0.85;
  CHECK(drawn(o) == std::set<int64_t>{1, 2, 3});
  o.top_p = 1.0;
  o.temperature = 1e-3;  // a cold temperature concentrates on the argmax
  CHECK(drawn(o) == std::set<int64_t>{1});
  o.temperature = 0;
  CHECK(next_tokens(logits, o, gen).eq(1).all().item<bool>());
  o.temperature = 1;
  o.top_p = 0;
  model_test::require_error([&] { next_tokens(logits, o, gen); }, {"top_p"});
}

TEST_CASE("sampling draws each token with its softmax probability, across blocks", "[model][generate]") {
  // 3000 tokens (the sampler's blocks are 1024 tokens): mass on tokens in three blocks and at
  // the blocks' edges; everything else at -inf. The draws come from the seeded CPU generator,
  // so they are the same on every host; the bound is statistical: a frequency over N = 40,000
  // draws has a standard deviation sqrt(p(1-p)/N) <= 0.0025, and 6 of those (0.015) fail
  // with probability ~2e-9 per token for a correct sampler
  const int64_t V = 3000, N = 40000;
  const std::vector<std::pair<int64_t, double>> mass = {
      {0, 0.10}, {1023, 0.25}, {1024, 0.05}, {2047, 0.20}, {2500, 0.30}, {2999, 0.10}};
  at::Tensor row = at::full({V}, -std::numeric_limits<float>::infinity(), at::kFloat);
  for (const auto& [tok, p] : mass) row[tok] = std::log(p);
  const at::Tensor logits = row.repeat({1000, 1});
  at::Generator gen = at::detail::createCPUGenerator(7);
  GenerateOptions o;
  o.temperature = 1.0;
  std::map<int64_t, int64_t> n;
  for (int64_t i = 0; i < N / 1000; ++i) {
    const at::Tensor t = next_tokens(logits, o, gen);
    for (int64_t j = 0; j < t.numel(); ++j) n[t[j].item<int64_t>()]++;
  }
  int64_t total = 0;
  for (const auto& [tok, p] : mass) {
    total += n[tok];
    CHECK(std::abs(double(n[tok]) / N - p) < 0.015);
  }
  CHECK(total == N);  // no token of zero probability was ever drawn
  // a row with NaN logits has no distribution: refused, naming the row
  at::Tensor bad = logits.narrow(0, 0, 3).clone();
  bad[2][5] = std::numeric_limits<float>::quiet_NaN();
  model_test::require_error([&] { next_tokens(bad, o, gen); }, {"row 2", "NaN"});
}

TEST_CASE("stop ids, the stop callback and length end rows separately", "[model][generate]") {
  const Model m = model_test::sharp_tiny(model_test::spec("llama"));
  GenerateOptions o;
  o.max_new_tokens = 6;
  const auto free = generate(m, kPrompts, o);
  REQUIRE(free[0].tokens.size() == 6);

  // stopping on a token of row 0 ends row 0 before it; a row that never samples it runs on.
  // The stop id is row 0's first token after the first that it had not produced before (so
  // row 0 meets it there first, whatever the model generates; a row of one repeated token
  // stops before its first)
  const auto& t0 = free[0].tokens;
  size_t j = 1;
  while (j < t0.size() && std::find(t0.begin(), t0.begin() + long(j), t0[j]) != t0.begin() + long(j)) ++j;
  if (j == t0.size()) j = 0;
  const int64_t stop = t0[j];
  o.stop_ids = std::vector<int64_t>{stop};
  const auto stopped = generate(m, kPrompts, o);
  CHECK(stopped[0].finish == "stop_id");
  CHECK(stopped[0].tokens == std::vector<int64_t>(t0.begin(), t0.begin() + long(j)));
  for (size_t b = 1; b < kPrompts.size(); ++b) {
    const auto& t = free[b].tokens;
    const auto hit = std::find(t.begin(), t.end(), stop);
    CHECK(stopped[b].tokens == std::vector<int64_t>(t.begin(), hit));
    CHECK(stopped[b].finish == (hit == t.end() ? "length" : "stop_id"));
  }

  o.stop_ids = std::vector<int64_t>{};
  o.stop = [](int row, const std::vector<int64_t>& tokens) {
    return row == 1 && tokens.size() == 2;
  };
  const auto cb = generate(m, kPrompts, o);
  CHECK(cb[1].finish == "stop");
  CHECK(cb[1].tokens == std::vector<int64_t>(free[1].tokens.begin(), free[1].tokens.begin() + 2));
  CHECK(cb[0].tokens == free[0].tokens);

  o.max_new_tokens = 0;
  CHECK(generate(m, kPrompts, o)[0].tokens.empty());
  model_test::require_error([&] { generate(m, {{1, 2}, {}}, o); }, {"prompt 1 is empty"});
}
