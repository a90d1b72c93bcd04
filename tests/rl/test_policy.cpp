// tests/rl/test_policy.cpp: chunked log-probs against the full log_softmax (values and
// gradients), the policy loss gradient against central finite differences on a tiny fp64
// model, rollouts (seeded reproducibility, masks, stop ids, sampling log-probs against a
// recomputation), and the shared-prefix reference against a fully copied one.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "runtime/model/tiny.h"
#include "runtime/rl/logprob.h"
#include "runtime/rl/loss.h"
#include "runtime/rl/reference.h"
#include "runtime/rl/rollout.h"
#include "runtime/train/freeze.h"
#include "tests/test_util.h"
#include "tests/tiny_spec.h"

using namespace ltrun;
using namespace ltrun::rl;

namespace {

// Larger weights than HF's init, so that logits are far from uniform and every block matters.
model::Model sharp(c10::ScalarType dtype = c10::kFloat, uint64_t seed = 3, int64_t eos = -1) {
  model::TinySpec s = ltrun_test::tiny_spec("qwen3", 3, seed);
  if (eos >= 0) s.eos_token_id = eos;
  model::Model m = model::make_tiny(s, c10::kCPU, dtype);
  at::NoGradGuard g;
  for (auto& p : m.parameters())
    if (p.name.find("norm") == std::string::npos) p.tensor.mul_(8);
  return m;
}

at::Tensor rand_ids(int64_t B, int64_t T, int64_t V, uint64_t seed) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  return at::randint(V, {B, T}, g, at::kLong);
}

double max_abs(const at::Tensor& a) { return a.abs().max().item<double>(); }

// A batch of 3 sequences: prompts of 4, 2, 3 tokens left-padded to 4, responses of 5, 3, 1
// tokens right-padded to 5.
SequenceBatch seq_batch(int64_t V) {
  SequenceBatch b;
  b.prompt_len = 4;
  b.resp_len = 5;
  b.ids = rand_ids(3, 9, V, 11);
  b.attention_mask = at::ones({3, 9}, at::kLong);
  b.attention_mask[1].narrow(0, 0, 2).fill_(0);
  b.attention_mask[2].narrow(0, 0, 1).fill_(0);
  b.attention_mask[1].narrow(0, 7, 2).fill_(0);
  b.attention_mask[2].narrow(0, 5, 4).fill_(0);
  return b;
}
at::Tensor resp_mask(const SequenceBatch& b) {
  return b.attention_mask.narrow(1, b.prompt_len, b.resp_len).to(at::kFloat);
}

}  // namespace

TEST_CASE("chunked token log-probs equal the full log_softmax, with gradients", "[rl][logprob]") {
  model::Model m = sharp(c10::kDouble);
  train::train_only(m, train::Spec::named("lm_head").add(train::Spec::named("final_norm")));
  const int64_t V = m.config().vocab_size;
  at::Generator gen = at::detail::createCPUGenerator(5);
  const at::Tensor h0 = at::randn({3, 7, m.config().hidden_size}, gen, at::kDouble);
  const at::Tensor tg = rand_ids(3, 7, V, 6);
  const at::Tensor w = at::randn({3, 7}, gen, at::kDouble);  // an arbitrary upstream gradient
  for (double temp : {1.0, 0.7}) {
    // the reference: whole logits at once
    at::Tensor hf = h0.clone().requires_grad_(true);
    const at::Tensor full = (m.lens(hf) / temp).log_softmax(-1).gather(2, tg.unsqueeze(2)).squeeze(2);
    (full * w).sum().backward();
    std::vector<at::Tensor> want_head;
    for (auto& p : m.parameters())
      if (p.tensor.requires_grad()) {
        want_head.push_back(p.tensor.grad().clone());
        p.tensor.mutable_grad().zero_();
      }
    for (int64_t chunk : {1, 4, 21, 1000}) {
      at::Tensor hc = h0.clone().requires_grad_(true);
      const TokenLogprobs t = token_logprobs(m, hc, tg, temp, chunk, true);
      REQUIRE(t.logp.sizes() == full.sizes());
      CHECK(max_abs(t.logp - full.detach()) < 1e-12);  // fp64 model: fp64 log-probs
      (t.logp * w).sum().backward();
      CHECK(max_abs(hc.grad() - hf.grad()) <= 1e-12 * max_abs(hf.grad()));
      size_t i = 0;
      for (auto& p : m.parameters())
        if (p.tensor.requires_grad()) {
          CHECK(max_abs(p.tensor.grad() - want_head[i]) <= 1e-12 * max_abs(want_head[i]));
          p.tensor.mutable_grad().zero_();
          ++i;
        }
      // entropy of softmax(z / temp) against its definition
      at::NoGradGuard g;
      const at::Tensor ls = (m.lens(h0) / temp).log_softmax(-1);
      CHECK(max_abs(t.entropy - (-(ls.exp() * ls).sum(-1))) < 1e-12);
    }
  }
}

TEST_CASE("policy loss gradient against finite differences on a tiny model", "[rl][logprob][loss]") {
  model::Model m = sharp(c10::kDouble);
  // blocks 1 and 2 plus the head train: backward starts at block 1, the head's gradient goes
  // through the chunked function
  train::train_only(m, train::Spec::blocks({1, 2}).add(train::Spec::named("lm_head")));
  REQUIRE(train::lowest_trainable_layer(m) == 1);
  const int64_t V = m.config().vocab_size;
  const SequenceBatch b = seq_batch(V);
  const at::Tensor mask = resp_mask(b);
  at::Tensor old, ref;
  {
    at::NoGradGuard g;
    const at::Tensor lp = policy_logprobs(m, b, 1, 1.0, 4).logp;
    at::Generator gen = at::detail::createCPUGenerator(9);
    old = lp + 0.3 * at::randn(lp.sizes(), gen, at::kDouble);  // ratios away from 1: some clip
    ref = lp + 0.2 * at::randn(lp.sizes(), gen, at::kDouble);
  }
  const at::Tensor adv = at::tensor({0.9, -1.3, 0.4}, at::kDouble);
  for (Agg agg : {Agg::TokenMean, Agg::SeqMeanTokenMean, Agg::SeqMeanTokenSumNorm}) {
    DYNAMIC_SECTION(agg_name(agg)) {
      LossOptions o;
      o.agg = agg;
      o.kl = 0.5;
      o.max_len = 8;
      o.clip_low = 0.2;
      o.clip_high = 0.28;
      auto loss_at = [&]() {
        at::NoGradGuard g;
        const PolicyPass p = policy_logprobs(m, b, 1, 1.0, 4);
        return policy_loss(p.logp, old, ref, adv, mask, o).loss.item<double>();
      };
      for (auto& p : m.parameters()) if (p.tensor.grad().defined()) p.tensor.mutable_grad().zero_();
      const PolicyPass pass = policy_logprobs(m, b, 1, 1.0, 4);
      policy_loss(pass.logp, old, ref, adv, mask, o).loss.backward();
      int checked = 0;
      for (auto& p : m.parameters()) {
        if (!p.tensor.requires_grad()) {
          CHECK(!p.tensor.grad().defined());
          continue;
        }
        if (p.name.find("layers.1.mlp.down_proj") == std::string::npos &&
            p.name.find("layers.2.self_attn.q_proj") == std::string::npos && p.name != "lm_head.weight")
          continue;
        REQUIRE(p.tensor.grad().defined());
        const at::Tensor flat = p.tensor.view({-1});
        const at::Tensor gflat = p.tensor.grad().reshape({-1});
        for (int64_t k : {int64_t(0), flat.numel() / 3, flat.numel() - 1}) {
          const double h = 1e-6, x = flat[k].item<double>();
          {
            at::NoGradGuard g;
            flat[k].fill_(x + h);
          }
          const double up = loss_at();
          {
            at::NoGradGuard g;
            flat[k].fill_(x - h);
          }
          const double down = loss_at();
          {
            at::NoGradGuard g;
            flat[k].fill_(x);
          }
          const double fd = (up - down) / (2 * h);
          INFO(p.name << "[" << k << "] analytic " << gflat[k].item<double>() << " fd " << fd);
          // fp64 throughout: central differences with h = 1e-6 are good to ~1e-8 (truncation
          // h^2 f''' and rounding 1e-16 / h); a kink of the clip or max within h is unlikely
          CHECK(gflat[k].item<double>() == Approx(fd).margin(1e-7).epsilon(1e-5));
          ++checked;
        }
      }
      CHECK(checked == 9);
    }
  }
}

namespace {

// The rows that join a running batch when at most `cap` rows decode at once and waiting rows
// take free places at once (refill), from the response lengths: a row samples once a step
// (its stop id kept) and leaves after its last token.
int64_t refilled_rows(const std::vector<std::vector<int64_t>>& responses, size_t cap) {
  int64_t joined = 0;
  std::vector<int64_t> left;  // tokens still to sample, per running row
  size_t next = 0;
  for (; next < std::min(cap, responses.size()); ++next) left.push_back(int64_t(responses[next].size()));
  while (!left.empty()) {
    std::vector<int64_t> keep;
    for (int64_t k : left)
      if (k > 1) keep.push_back(k - 1);
    left = keep;
    const bool running = !left.empty();
    for (; left.size() < cap && next < responses.size(); ++next) {
      joined += running ? 1 : 0;
      left.push_back(int64_t(responses[next].size()));
    }
  }
  return joined;
}

}  // namespace

TEST_CASE("rollouts: G samples per prompt, seeded, masks and sampling log-probs", "[rl][rollout]") {
  const int64_t eos = 7;
  const model::Model m = sharp(c10::kFloat, 3, eos);
  const std::vector<std::vector<int64_t>> prompts = {{5, 17, 3, 44, 9}, {12, 2}, {7 + 1, 30, 21}};
  RolloutOptions o;
  o.group_size = 4;
  o.max_response = 10;
  o.temperature = 1.3;
  o.top_k = 20;
  o.seed = 99;
  o.batch = 5;  // three generate calls (5 + 5 + 2 rows); row r draws from stream r of seed 99
  const Rollouts a = rollout(m, prompts, o), b = rollout(m, prompts, o);
  {
    // the same rollouts however the rows are split into calls, with the prompt prefilled once
    // per call or per row, finished rows dropped or kept (tokens exact; log-probs up to the
    // fp32 sums of other batch sizes: ~2e-6 of |log-prob| < 30, so 1e-4)
    // or at most 2 rows decoding at once, waiting rows taking finished ones' places (refill)
    // or starting once the batch has ended
    // or the static cache (model/static_decode.h), stop checks every 3 steps, 2 places
    for (int variant = 0; variant < 6; ++variant) {
      RolloutOptions v = o;
      if (variant == 0) v.batch = 0;
      if (variant == 1) v.share_prefill = false;
      if (variant == 2) v.drop_finished = false;
      if (variant >= 3) {
        v.batch = 0;
        v.max_rows = 2;
        v.refill = variant == 3;
      }
      if (variant == 5) {
        v.batch = 0;
        v.max_rows = 2;
        v.cache = "static";
        v.sync_every = 3;
      }
      const Rollouts c = rollout(m, prompts, v);
      INFO("variant " << variant);
      CHECK(c.responses == a.responses);
      CHECK(max_abs(c.logprobs - a.logprobs) < 1e-4);
      // (the static cache refills at its stop checks, not at each step: its own count)
      if (variant != 5) CHECK(c.refilled_rows == (variant == 3 ? refilled_rows(a.responses, 2) : 0));
    }
  }
  {
    // responses of different lengths (row 0's 4th token is a stop id), at most 2 rows at once:
    // rows join running batches (refill) or wait for the batch to end, the same rollouts
    RolloutOptions v = o;
    v.batch = 0;
    v.stop_ids = std::vector<int64_t>{a.responses[0][3]};
    const Rollouts base = rollout(m, prompts, v);
    v.max_rows = 2;
    const Rollouts on = rollout(m, prompts, v);
    v.refill = false;
    const Rollouts off = rollout(m, prompts, v);
    CHECK(on.responses == base.responses);
    CHECK(off.responses == base.responses);
    CHECK(max_abs(on.logprobs - base.logprobs) < 1e-4);
    CHECK(base.responses[0].size() <= 4);
    CHECK(on.refilled_rows == refilled_rows(base.responses, 2));
    CHECK(on.refilled_rows > 0);
    CHECK(off.refilled_rows == 0);
  }
  const int64_t N = 12;
  REQUIRE(a.seq.ids.size(0) == N);
  CHECK(at::equal(a.seq.ids, b.seq.ids));  // bit for bit
  CHECK(at::equal(a.logprobs, b.logprobs));
  CHECK(a.seq.prompt_len == 5);
  CHECK(a.prompt_index == std::vector<int64_t>{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2});
  RolloutOptions o2 = o;
  o2.seed = 100;
  CHECK(!at::equal(rollout(m, prompts, o2).seq.ids, a.seq.ids));
  // the G samples of a prompt differ (a temperature of 1.3 over sharp logits)
  bool differ = false;
  for (int64_t g = 1; g < 4; ++g) differ |= a.responses[size_t(g)] != a.responses[0];
  CHECK(differ);

  const int64_t P = a.seq.prompt_len, R = a.seq.resp_len;
  int64_t tokens = 0, stopped = 0;
  for (int64_t r = 0; r < N; ++r) {
    const auto& resp = a.responses[size_t(r)];
    const auto& prompt = prompts[size_t(a.prompt_index[size_t(r)])];
    const int64_t k = int64_t(resp.size()), n = int64_t(prompt.size());
    tokens += k;
    // the prompt sits left-padded before column P, the response right after it
    for (int64_t j = 0; j < n; ++j) CHECK(a.seq.ids[r][P - n + j].item<int64_t>() == prompt[size_t(j)]);
    CHECK(a.seq.attention_mask[r].sum().item<int64_t>() == n + k);
    for (int64_t j = 0; j < R; ++j) {
      CHECK(a.response_mask[r][j].item<float>() == (j < k ? 1.f : 0.f));
      if (j < k) CHECK(a.seq.ids[r][P + j].item<int64_t>() == resp[size_t(j)]);
      else CHECK(a.logprobs[r][j].item<float>() == 0.f);
    }
    CHECK(k <= 10);
    if (a.finish[size_t(r)] == "stop_id") {  // the eos id is kept as the last token, only there
      ++stopped;
      CHECK(resp.back() == eos);
      CHECK(std::count(resp.begin(), resp.end(), eos) == 1);
    } else {
      CHECK(a.finish[size_t(r)] == "length");
      CHECK(k == 10);
      CHECK(std::count(resp.begin(), resp.end(), eos) == 0);
    }
  }
  CHECK(tokens == a.tokens);
  INFO("rows ended by eos: " << stopped);
  // sampling log-probs = log_softmax(logits / T) of a full recomputation over the packed
  // batch (top-k not folded in); KV-cache decoding and one full pass differ by fp32 rounding
  const at::Tensor re = policy_logprobs(m, a.seq, 0, 1.3, 7).logp;
  CHECK(max_abs((re - a.logprobs) * a.response_mask) < 1e-4);
  CHECK(max_abs(a.logprobs) > 0.1);
}

TEST_CASE("rollouts: stop strings end a response and cut its text", "[rl][rollout]") {
  const model::Model m = sharp();
  RolloutOptions o;
  o.group_size = 3;
  o.max_response = 12;
  o.seed = 4;
  o.stop_ids = std::vector<int64_t>{};
  // a "tokenizer": token t is the letter 'a' + t % 26
  o.decode = [](const std::vector<int64_t>& t) {
    std::string s;
    for (int64_t x : t) s += char('a' + x % 26);
    return s;
  };
  const Rollouts free_run = rollout(m, {{3, 4, 5}}, o);
  // stop at the first letter the first free sample produced after its third token
  const std::string first = free_run.texts[0];
  REQUIRE(first.size() == 12);
  o.stop = {first.substr(3, 1)};
  const Rollouts r = rollout(m, {{3, 4, 5}}, o);
  CHECK(r.finish[0] == "stop");
  CHECK(r.texts[0] == first.substr(0, first.find(o.stop[0])));
  CHECK(int64_t(r.responses[0].size()) == int64_t(first.find(o.stop[0])) + 1);  // keeps the token
  for (size_t i = 0; i < 3; ++i)
    if (r.finish[i] == "stop") CHECK(r.texts[i].find(o.stop[0]) == std::string::npos);
}

TEST_CASE("shared-prefix reference equals a fully copied reference", "[rl][reference]") {
  model::Model m = sharp();
  const SequenceBatch b = seq_batch(m.config().vocab_size);
  for (const char* plan : {"block 2", "blocks 1-2 + final norm", "embeddings"}) {
    DYNAMIC_SECTION(plan) {
      const std::string p = plan;
      train::Spec spec = p == "block 2" ? train::Spec::blocks({2})
                        : p == "embeddings" ? train::Spec::named("embeddings")
                                            : train::Spec::blocks({1, 2}).add(train::Spec::named("final_norm"));
      train::train_only(m, spec);
      const Reference shared = Reference::shared_prefix(m), copied = Reference::copy(m);
      CHECK(shared.from_layer() == (p == "block 2" ? 2 : p == "embeddings" ? 0 : 1));
      CHECK(shared.bytes() < copied.bytes());
      // the policy moves away: its trainable parameters change (as an optimizer step would)
      {
        at::NoGradGuard g;
        at::Generator gen = at::detail::createCPUGenerator(21);
        for (auto& q : m.parameters())
          if (q.tensor.requires_grad()) q.tensor.add_(at::randn(q.tensor.sizes(), gen) * 0.3);
      }
      const PolicyPass pol = policy_logprobs(m, b, shared.from_layer(), 1.0, 5);
      const at::Tensor mask = resp_mask(b);
      const at::Tensor want = copied.logprobs(m, b, 1.0, 5);
      const at::Tensor got = shared.logprobs(m, b, 1.0, 5);
      const at::Tensor got_entry = shared.logprobs(m, b, 1.0, 5, pol.entry);
      // same blocks, same inputs: equal up to the batch-order of fp32 sums
      CHECK(max_abs((got - want) * mask) < 1e-5);
      CHECK(max_abs((got_entry - want) * mask) < 1e-5);
      CHECK(max_abs((pol.logp.detach() - want) * mask) > 1e-2);  // the policy did move
      // the swap restored the policy's own parameters
      const PolicyPass again = policy_logprobs(m, b, shared.from_layer(), 1.0, 5);
      CHECK(at::equal(again.logp, pol.logp));
      // a block that starts training after the snapshot has no saved original: refused
      train::train_only(m, train::Spec::blocks({0, 1, 2}));
      ltrun_test::require_error([&] { shared.logprobs(m, b, 1.0, 5); },
                                {"model.layers.0.", "frozen when the reference was made"});
    }
  }
}
