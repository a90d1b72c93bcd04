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
using model_test::rel_err;

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

namespace {

// One tiny model per layer kind that keeps a decode state: attention (qwen3), Mamba2 with
// attention and an MLP layer (nemotron_h "M*-M"), Gated DeltaNet with attention
// (qwen3_5_text "LLA", chunks of 4 tokens so that a prompt spans several).
using model_test::KindModel;
std::vector<KindModel> state_kinds() {
  std::vector<KindModel> out;
  out.push_back({"attention (qwen3)", model_test::sharp_tiny(model_test::spec("qwen3"))});
  for (auto& k : model_test::recurrent_kinds()) out.push_back(std::move(k));
  return out;
}

// Same tokens: exact. Same log-probs: the paths run the same operations on the same rows, only
// in batches of other sizes (the prefill over distinct prompts, the decode over running rows);
// a BLAS kernel may sum a row in another order at another batch size, which moves a log-prob
// by the fp32 budget of model_test::rel_err (~2e-6 of its magnitude, |log-prob| < 30 here):
// 1e-4 absolute is ten times that. A token could flip only if a draw fell within that much of
// a boundary of the sampling CDF (~1e-5 per token over ~200 tokens: ~2e-3 per host kernel).
void check_same(const std::vector<Generation>& a, const std::vector<Generation>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("row " << i);
    CHECK(a[i].tokens == b[i].tokens);
    CHECK(a[i].finish == b[i].finish);
    REQUIRE(a[i].logprobs.size() == b[i].logprobs.size());
    for (size_t j = 0; j < a[i].logprobs.size(); ++j) CHECK(std::abs(a[i].logprobs[j] - b[i].logprobs[j]) < 1e-4);
  }
}

}  // namespace

TEST_CASE("a decode state's rows can be repeated and dropped, for every layer kind", "[model][generate]") {
  // prefill 2 distinct prompts, expand to rows {0, 1, 1, 0} and decode a token: the same as
  // prefilling the 4 rows; then drop to rows {3, 1} and decode again: the same as those rows
  // of the full batch
  const std::vector<std::vector<int64_t>> distinct = {{5, 17, 3, 44, 9, 30, 2}, {12, 8, 1}};
  const std::vector<int64_t> expand = {0, 1, 1, 0};
  std::vector<std::vector<int64_t>> full;
  for (int64_t i : expand) full.push_back(distinct[size_t(i)]);
  for (auto& [name, m] : state_kinds()) {
    DYNAMIC_SECTION(name) {
      at::NoGradGuard no_grad;
      auto run = [&](const std::vector<std::vector<int64_t>>& rows, DecodeState& st) {
        const Padded p = left_pad(rows, 0);
        ForwardOptions f;
        f.state = &st;
        f.attention_mask = p.mask;
        f.logits = Logits::Last;
        return std::make_pair(m.forward(p.ids, f).logits.select(1, 0), p.mask);
      };
      DecodeState a, b;
      auto [la, ma] = run(distinct, a);
      auto [lb, mb] = run(full, b);
      const at::Tensor idx = at::tensor(expand, at::kLong);
      a.select_rows(idx);
      CHECK(a.batch() == 4);
      CHECK(rel_err(la.index_select(0, idx), lb) < 1e-5);
      const at::Tensor next = at::tensor(std::vector<int64_t>{3, 9, 27, 40}, at::kLong).view({4, 1});
      auto step = [&](DecodeState& st, at::Tensor& mask, const at::Tensor& ids) {
        mask = at::cat({mask, at::ones({ids.size(0), 1}, at::kLong)}, 1);
        ForwardOptions f;
        f.state = &st;
        f.attention_mask = mask;
        f.logits = Logits::Last;
        return m.forward(ids, f).logits.select(1, 0);
      };
      at::Tensor mae = ma.index_select(0, idx);
      const at::Tensor sa = step(a, mae, next), sb = step(b, mb, next);
      CHECK(rel_err(sa, sb) < 1e-5);
      CHECK(rel_err(sa.narrow(0, 0, 1), sb.narrow(0, 1, 1)) > 1e-3);  // the rows do differ
      const at::Tensor keep = at::tensor(std::vector<int64_t>{3, 1}, at::kLong);
      a.select_rows(keep);
      at::Tensor mk = mae.index_select(0, keep);
      const at::Tensor next2 = at::tensor(std::vector<int64_t>{11, 6}, at::kLong).view({2, 1});
      const at::Tensor da = step(a, mk, next2);
      const at::Tensor db = step(b, mb, at::tensor(std::vector<int64_t>{0, 6, 0, 11}, at::kLong).view({4, 1}));
      CHECK(rel_err(da, db.index_select(0, keep)) < 1e-5);
      model_test::require_error([&] { a.select_rows(at::tensor(std::vector<int64_t>{2}, at::kLong)); },
                                {"row 2 outside 0..1"});
      model_test::require_error([&] { a.select_rows(at::zeros({0}, at::kLong)); }, {"non-empty int64"});
      model_test::require_error([&] { a.select_rows(at::zeros({1}, at::kFloat)); }, {"non-empty int64"});
      model_test::require_error([&] { a.select_rows(at::zeros({1, 1}, at::kLong)); }, {"non-empty int64"});
      model_test::require_error([&] { a.select_rows(at::tensor(std::vector<int64_t>{-1}, at::kLong)); },
                                {"row -1 outside"});
      CHECK(a.batch() == 2);  // refused selections changed nothing
      DecodeState empty;
      model_test::require_error([&] { empty.select_rows(idx); }, {"has not run"});
    }
  }
}

TEST_CASE("group-shared prefill: the same tokens as prefilling every copy, for every layer kind",
          "[model][generate]") {
  // G = 3 copies of each prompt (prompts of different lengths), plus a repeat out of order
  std::vector<std::vector<int64_t>> rows;
  for (const auto& p : kPrompts)
    for (int g = 0; g < 3; ++g) rows.push_back(p);
  rows.push_back(kPrompts[0]);
  for (auto& [name, m] : state_kinds()) {
    DYNAMIC_SECTION(name) {
      GenerateOptions o;
      o.max_new_tokens = 10;
      o.temperature = 1.3;
      o.seed = 5;
      o.logprobs = true;
      o.stop_ids = std::vector<int64_t>{};
      for (bool drop : {false, true}) {
        o.drop_finished = drop;
        o.share_prefill = true;
        const auto on = generate(m, rows, o);
        o.share_prefill = false;
        const auto off = generate(m, rows, o);
        check_same(on, off);
        // the copies of a prompt draw from their own streams: not all alike
        bool differ = false;
        for (int g = 1; g < 3; ++g) differ |= on[size_t(g)].tokens != on[0].tokens;
        CHECK(differ);
      }
    }
  }
}

TEST_CASE("finished rows leave the batch: the same tokens as keeping them, for every layer kind",
          "[model][generate]") {
  // one long response (row 0 runs to the length limit) and many short ones that end at
  // different steps through the stop callback and a stop id
  std::vector<std::vector<int64_t>> rows;
  for (int i = 0; i < 9; ++i) rows.push_back(kPrompts[size_t(i) % 3]);
  for (auto& [name, m] : state_kinds()) {
    DYNAMIC_SECTION(name) {
      GenerateOptions o;
      o.max_new_tokens = 16;
      o.temperature = 1.3;
      o.seed = 11;
      o.logprobs = true;
      o.keep_stop_id = true;
      o.stop_ids = std::vector<int64_t>{};
      o.stop = [](int row, const std::vector<int64_t>& t) { return row > 0 && int(t.size()) == 1 + row % 4; };
      o.drop_finished = false;
      const auto kept = generate(m, rows, o);
      o.drop_finished = true;
      const auto dropped = generate(m, rows, o);
      check_same(dropped, kept);
      CHECK(kept[0].tokens.size() == 16);
      for (size_t r = 1; r < rows.size(); ++r) CHECK(kept[r].tokens.size() == 1 + r % 4);
      // with a stop id too: row 0's 5th token ends every row that samples it
      o.stop_ids = std::vector<int64_t>{kept[0].tokens[4]};
      o.drop_finished = false;
      const auto kept2 = generate(m, rows, o);
      o.drop_finished = true;
      check_same(generate(m, rows, o), kept2);
      CHECK(kept2[0].finish == "stop_id");
    }
  }
}

TEST_CASE("per-row streams: a row's tokens do not depend on the other rows", "[model][generate]") {
  const Model m = model_test::sharp_tiny(model_test::spec("qwen3"));
  const std::vector<std::vector<int64_t>> rows = {{5, 17, 3}, {12, 4, 4}, {7, 7, 21}};
  GenerateOptions o;
  o.max_new_tokens = 12;
  o.temperature = 1.3;
  o.seed = 8;
  o.stop_ids = std::vector<int64_t>{};
  const auto all = generate(m, rows, o);
  o.stream_offset = 1;  // row 1 alone, on its own stream
  CHECK(generate(m, {rows[1]}, o)[0].tokens == all[1].tokens);
  // draws: in [0, 1), distinct across rows and steps, a function of (seed, row, step) only
  std::set<double> seen;
  for (int64_t r = 0; r < 50; ++r)
    for (int64_t s = 0; s < 50; ++s) {
      const double u = row_draw(3, r, s);
      CHECK((u >= 0 && u < 1));
      seen.insert(u);
      CHECK(row_draw(3, r, s) == u);
    }
  CHECK(seen.size() == 2500);
  // uniform: the mean of 2500 draws has standard deviation sqrt(1/12/2500) = 0.0058; 6 of them
  double sum = 0;
  for (double u : seen) sum += u;
  CHECK(std::abs(sum / 2500 - 0.5) < 0.035);
  CHECK(row_draw(4, 0, 0) != row_draw(3, 0, 0));
}

TEST_CASE("a decode state takes new rows, right-aligned, for every layer kind", "[model][generate][refill]") {
  // batch a: a 7-token prompt and a 1-token one, decoded one step, then the 7-token row leaves
  // (6 columns of padding in every row remain); batch b: prompts of 3 and 9 tokens. b's rows
  // join a at width 9 (a's 8 positions padded to 9); the 10-token row leaves, and a's first 6
  // columns (padding in both rows left) are dropped when c's 2 rows join at width 4. Each step's logits must be those of a full pass over each
  // row's own tokens. The full pass sums in other orders (one sequence, no padding, no cache):
  // model_test::rel_err's fp32 budget through a few blocks is ~1e-6; 1e-5 is ten times that,
  // and a wrong row (another row's state) is off by > 1e-3 (checked below).
  const std::vector<std::vector<int64_t>> pa = {{5, 17, 3, 44, 9, 30, 2}, {12}};
  const std::vector<std::vector<int64_t>> pb = {{7, 7, 21}, {3, 1, 4, 1, 5, 9, 2, 6, 5}};
  const std::vector<std::vector<int64_t>> pc = {{8, 2}, {40}};
  for (auto& [name, m] : state_kinds()) {
    DYNAMIC_SECTION(name) {
      at::NoGradGuard no_grad;
      auto prefill = [&](const std::vector<std::vector<int64_t>>& rows, DecodeState& st) {
        const Padded p = left_pad(rows, 0);
        ForwardOptions f;
        f.state = &st;
        f.attention_mask = p.mask;
        f.logits = Logits::Last;
        m.forward(p.ids, f);
        return p.mask;
      };
      auto step = [&](DecodeState& st, at::Tensor& mask, const std::vector<int64_t>& ids) {
        const int64_t n = int64_t(ids.size());
        mask = at::cat({mask, at::ones({n, 1}, at::kLong)}, 1);
        ForwardOptions f;
        f.state = &st;
        f.attention_mask = mask;
        f.logits = Logits::Last;
        return m.forward(at::tensor(ids, at::kLong).view({n, 1}), f).logits.select(1, 0);
      };
      auto full = [&](const std::vector<int64_t>& seq) {
        return m.forward(at::tensor(seq, at::kLong).unsqueeze(0)).logits[0][-1];
      };
      auto pad_left = [](const at::Tensor& mask, int64_t width) {
        const int64_t w = mask.size(1);
        if (w >= width) return mask.narrow(1, w - width, width);
        return at::cat({at::zeros({mask.size(0), width - w}, at::kLong), mask}, 1);
      };
      DecodeState a, b, c;
      at::Tensor ma = prefill(pa, a);
      step(a, ma, {11, 6});
      a.select_rows(at::tensor(std::vector<int64_t>{1}, at::kLong));
      ma = ma.narrow(0, 1, 1);  // row {12, 6}: 2 positions of 8
      at::Tensor mb = prefill(pb, b);
      model_test::require_error([&] { a.append_rows(b, 8); }, {"width 8 is shorter than the new rows' 9"});
      DecodeState unrun;
      model_test::require_error([&] { a.append_rows(unrun, 9); }, {"both states must have run"});
      CHECK(a.batch() == 1);  // refused appends changed nothing
      a.append_rows(b, 9);
      CHECK(a.batch() == 3);
      CHECK(a.length() == 9);
      ma = at::cat({pad_left(ma, 9), mb});
      const at::Tensor s1 = step(a, ma, {3, 27, 40});
      const std::vector<std::vector<int64_t>> seqs = {{12, 6, 3}, {7, 7, 21, 27}, {3, 1, 4, 1, 5, 9, 2, 6, 5, 40}};
      for (int64_t i = 0; i < 3; ++i) {
        INFO("row " << i);
        CHECK(rel_err(s1[i], full(seqs[size_t(i)])) < 1e-5);
      }
      CHECK(rel_err(s1[0], full(seqs[1])) > 1e-3);
      // the 10-token row leaves: the first 6 of 10 columns are padding in both rows left
      a.select_rows(at::tensor(std::vector<int64_t>{0, 1}, at::kLong));
      ma = ma.narrow(0, 0, 2);
      CHECK(ma.narrow(1, 0, 6).sum().item<int64_t>() == 0);
      at::Tensor mc = prefill(pc, c);
      a.append_rows(c, 4);  // drops 6 columns of a, pads c by 2
      CHECK(a.length() == 4);
      ma = at::cat({pad_left(ma, 4), pad_left(mc, 4)});
      const at::Tensor s2 = step(a, ma, {1, 2, 3, 4});
      const std::vector<std::vector<int64_t>> seqs2 = {{12, 6, 3, 1}, {7, 7, 21, 27, 2}, {8, 2, 3}, {40, 4}};
      for (int64_t i = 0; i < 4; ++i) {
        INFO("row " << i << " after the second refill");
        CHECK(rel_err(s2[i], full(seqs2[size_t(i)])) < 1e-5);
      }
    }
  }
}

TEST_CASE("refill: waiting rows take the places of finished ones, the same tokens, for every layer kind",
          "[model][generate][refill]") {
  // row 0 runs to the length limit, the others end after 1..4 tokens (stop callback), with
  // prompts of 1..9 tokens: a 9-token prompt joins a batch narrower than itself, shorter
  // ones join wider batches. At most 3 rows at once: with refill, rows join the running batch
  // (counted); without, the next 3 start when a batch has ended; no cap: all at once.
  const std::vector<std::vector<int64_t>> shapes = {
      {12}, {7, 7, 21}, {3, 1, 4, 1, 5, 9, 2, 6, 5}, {5, 17, 3, 44, 9, 30}, {12}, {40, 2}};
  std::vector<std::vector<int64_t>> rows;
  for (int i = 0; i < 11; ++i) rows.push_back(shapes[size_t(i) % shapes.size()]);
  for (auto& [name, m] : state_kinds()) {
    DYNAMIC_SECTION(name) {
      GenerateOptions o;
      o.max_new_tokens = 14;
      o.temperature = 1.3;
      o.seed = 21;
      o.logprobs = true;
      o.stop_ids = std::vector<int64_t>{};
      o.stop = [](int row, const std::vector<int64_t>& t) { return row > 0 && int(t.size()) == 1 + row % 4; };
      GenerateStats all_stats, on_stats, off_stats;
      const auto all = generate(m, rows, o, &all_stats);
      o.max_rows = 3;
      o.refill = true;
      const auto on = generate(m, rows, o, &on_stats);
      o.refill = false;
      const auto off = generate(m, rows, o, &off_stats);
      check_same(on, all);
      check_same(off, all);
      CHECK(all[0].tokens.size() == 14);
      for (size_t r = 1; r < rows.size(); ++r) CHECK(all[r].tokens.size() == 1 + r % 4);
      CHECK(all_stats.refilled_rows == 0);
      CHECK(all_stats.peak_rows == 11);
      CHECK(off_stats.refilled_rows == 0);
      CHECK(off_stats.peak_rows == 3);
      CHECK(on_stats.peak_rows == 3);
      // every row after the first 3 joined a running batch: row 0 runs for 14 steps while
      // the other 10 take at most 4 each through the 2 other places
      CHECK(on_stats.refilled_rows == 8);
      CHECK(on_stats.prefills > 1);
      CHECK(on_stats.decode_steps == 13);  // row 0's 14 tokens: 13 decode forwards after the prefill
      CHECK(off_stats.decode_steps == 21);  // batches of rows 0-2, 3-5, 6-8, 9-10: 13 + 3 + 3 + 2
      CHECK(all_stats.decode_steps == 13);
      // finished rows kept in the batch hold their places: nothing refills, as without refill
      o.refill = true;
      o.drop_finished = false;
      GenerateStats kept_stats;
      check_same(generate(m, rows, o, &kept_stats), all);
      CHECK(kept_stats.refilled_rows == 0);
      // greedy and without shared prefill, too
      o.drop_finished = true;
      o.share_prefill = false;
      o.temperature = 0;
      o.max_rows = 0;
      const auto greedy_all = generate(m, rows, o);
      o.max_rows = 2;
      GenerateStats greedy_stats;
      check_same(generate(m, rows, o, &greedy_stats), greedy_all);
      CHECK(greedy_stats.refilled_rows > 0);
      o.max_rows = -1;
      model_test::require_error([&] { generate(m, rows, o); }, {"max_rows must be >= 0"});
    }
  }
}

TEST_CASE("generate: a temperature too small for the logits is named, not blamed on the model",
          "[model][generate]") {
  // The sampler divides the fp32 logits by the temperature: 1e-45 (fp32's smallest
  // subnormal) overflows any logit above ~5e-7, and the row has no distribution. Before, that
  // read "NaN or infinite logits ... did training diverge?"; now the option is named with the
  // least temperature these logits take. NaN logits still blame the model.
  const Model m = model_test::sharp_tiny(model_test::spec("qwen3"));
  GenerateOptions o;
  o.max_new_tokens = 3;
  o.temperature = 1e-45;
  for (const char* cache : {"dynamic", "static"}) {
    INFO("cache " << cache);
    o.cache = cache;
    try {
      generate(m, {{5, 17, 3}, {12}}, o);
      FAIL("no error");
    } catch (const std::exception& e) {
      const std::string msg = e.what();
      INFO(msg);
      CHECK(msg.find("option temperature 1e-45 is too small") != std::string::npos);
      CHECK(msg.find("use a temperature of at least") != std::string::npos);
      CHECK(msg.find("diverge") == std::string::npos);
    }
  }
  // the bound it names is enough: logits of |x| <= 2 at the least temperature for 2 stay finite
  const at::Tensor logits = at::tensor({2.0f, -1.0f, 0.5f}).unsqueeze(0);
  GenerateOptions at_least;
  at_least.temperature = 2.0 / double(std::numeric_limits<float>::max()) * 1.0001;
  at::Generator gen = at::detail::createCPUGenerator(1);
  CHECK(next_tokens(logits, at_least, gen).item<int64_t>() == 0);
  at_least.temperature = 1e-45;
  model_test::require_error([&] { next_tokens(logits, at_least, gen); },
                            {"option temperature 1e-45 is too small", "largest |logit| 2"});
  // NaN logits: the model's fault, as before
  const at::Tensor nan = at::tensor({2.0f, std::nanf(""), 0.5f}).unsqueeze(0);
  at_least.temperature = 1.0;
  model_test::require_error([&] { next_tokens(nan, at_least, gen); }, {"NaN or infinite logits", "diverge"});
}
