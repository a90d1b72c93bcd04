// tests/diag/test_tracer.cpp: the LayerTracer scan on small random models: the batched
// resume against one full forward per perturbation (the model's own zero intervention),
// the clean pass reproduced when nothing is zeroed, padding, the lens series against the
// model's logits, and the summary's group means and split on hand-made traces.
#include <algorithm>
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <optional>
#include <ATen/core/grad_mode.h>

#include "diag_test_util.h"
#include "runtime/diag/tracer.h"
#include "runtime/model/model.h"

using namespace ltrun;
using namespace ltrun::diag;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {

// max |a - b| / max |b|
double rel_err(const at::Tensor& a, const at::Tensor& b) {
  const double scale = b.abs().max().item<double>();
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>() / (scale > 0 ? scale : 1);
}

Sample sample(std::vector<int64_t> ids, std::vector<int64_t> context, int group = 0) {
  Sample s;
  s.ids = std::move(ids);
  s.context = std::move(context);
  s.group = group;
  return s;
}

model::ForwardResult clean_pass(const model::Model& m, const Packed& b) {
  model::ForwardOptions o;
  o.capture = true;
  o.attention_mask = b.mask;
  o.logits = model::Logits::Last;
  return m.forward(b.ids, o);
}

}  // namespace

TEST_CASE("pack: left padding, mask, and context positions shifted with the padding") {
  const std::vector<Sample> s = {sample({5, 6, 7, 8, 9}, {0, 1}), sample({3, 4, 2}, {0})};
  const Packed b = pack(s, 0, 2, 61);
  CHECK(b.ids.equal(at::tensor({5, 6, 7, 8, 9, 0, 0, 3, 4, 2}, at::kLong).view({2, 5})));
  CHECK(b.mask.equal(at::tensor({1, 1, 1, 1, 1, 0, 0, 1, 1, 1}, at::kLong).view({2, 5})));
  CHECK(b.zero.equal(at::tensor({1, 1, 0, 0, 0, 0, 0, 1, 0, 0}, at::kLong).ne(0).view({2, 5})));
  CHECK(!pack(s, 0, 1, 61).mask.defined());  // one row: nothing padded, no mask
  diag_test::require_error([&] { pack({sample({1, 2}, {2})}, 0, 1, 61); },
                           {"sample 1", "context position 2", "0..1"});
  diag_test::require_error([&] { pack({s[0], sample({1, 99}, {})}, 0, 2, 61); },
                           {"sample 2", "token 99", "position 1"});
  diag_test::require_error([&] { pack({sample({}, {})}, 0, 1, 61); }, {"sample 1", "no tokens"});
}

TEST_CASE("zero_context changes only the context positions") {
  const at::Tensor h = at::randn({2, 5, 4}) + 3;
  const at::Tensor z = at::tensor({0, 1, 0, 0, 1, 1, 0, 0, 0, 0}, at::kLong).ne(0).view({2, 5});
  const at::Tensor out = zero_context(h, z);
  CHECK(out.masked_select(z.unsqueeze(-1)).abs().sum().item<double>() == 0);
  CHECK(out.masked_select(z.logical_not().unsqueeze(-1)).equal(h.masked_select(z.logical_not().unsqueeze(-1))));
}

TEST_CASE("perturbed passes: resuming with nothing zeroed reproduces the clean pass") {
  at::NoGradGuard no_grad;
  for (const char* arch : {"qwen3", "llama", "qwen2"}) {
    INFO(arch);
    const model::Model m = diag_test::sharp_tiny(arch);
    const std::vector<Sample> s = {sample({1, 7, 9, 3, 22, 40, 5}, {}), sample({8, 2, 11, 4}, {})};
    const Packed b = pack(s, 0, 2, 61);
    const auto clean = clean_pass(m, b);
    const at::Tensor q = perturbed_logits(m, clean.hidden, b.zero, b.mask);
    REQUIRE(q.sizes() == at::IntArrayRef({m.n_layers() + 1, 2, 61}));
    // the resumptions run batched across residuals ((l+1)·B rows at block l), so BLAS may
    // block the sums differently from the clean pass: equal to float32 rounding (a few ulps
    // of 1.2e-7 over the blocks), not bit for bit
    for (int r = 0; r <= m.n_layers(); ++r) {
      INFO("residual " << r);
      CHECK(rel_err(q[r], clean.logits.select(1, 0)) < 1e-6);
    }
    // and the naive passes, which run the whole stack again, agree to rounding
    const at::Tensor naive = perturbed_logits(m, clean.hidden, b.zero, b.mask, Method::Naive);
    CHECK(rel_err(naive, q) < 1e-6);
  }
}

TEST_CASE("perturbed passes: resume = one full forward per zeroed residual") {
  at::NoGradGuard no_grad;
  for (const char* arch : {"qwen3", "llama"}) {
    INFO(arch);
    const model::Model m = diag_test::sharp_tiny(arch, 5);
    const std::vector<Sample> s = {sample({1, 7, 9, 3, 22, 40, 5, 17}, {0, 1, 2, 3}),
                                   sample({8, 2, 11, 4, 30}, {1, 2})};
    const Packed b = pack(s, 0, 2, 61);
    const auto clean = clean_pass(m, b);
    const at::Tensor resume = perturbed_logits(m, clean.hidden, b.zero, b.mask, Method::Resume);
    const at::Tensor naive = perturbed_logits(m, clean.hidden, b.zero, b.mask, Method::Naive);
    // fp32 logits of 5 sharp blocks in another summation order: ~sqrt(61) x 2^-24 per dot
    // product over 5 blocks, ~3e-6 of the largest |logit|; 1e-5 is three times that
    CHECK(rel_err(resume, naive) < 1e-5);
    // and the naive rows are the model's own forward from token ids with {zero = positions}
    for (int r = 0; r <= m.n_layers(); ++r) {
      model::ForwardOptions o;
      o.intervene[r - 1] = model::Intervention::zero(at::tensor({0, 1, 2, 3}, at::kLong));
      o.logits = model::Logits::Last;
      const at::Tensor direct = m.forward(at::tensor(s[0].ids, at::kLong).unsqueeze(0), o).logits;
      INFO("residual " << r);
      // as above: another summation order, ~3e-6 of the largest |logit|
      CHECK(rel_err(resume[r][0], direct[0][0]) < 1e-5);
    }
    // zeroing changes the outcome except after the last block (the last token is a query token)
    CHECK(rel_err(resume[0], clean.logits.select(1, 0)) > 1e-3);
    CHECK(rel_err(resume[m.n_layers()], clean.logits.select(1, 0)) < 1e-6);
  }
}

TEST_CASE("Model::prefix_rows: a shared prefix's state continued per row = the whole row's forward") {
  at::NoGradGuard no_grad;
  const model::Model m = diag_test::sharp_tiny("qwen3", 3);
  const int64_t H = m.config().hidden_size;
  // a prefix residual entering block 1, shared by two rows that keep 4 and 2 of its positions
  const at::Tensor prefix = at::randn({1, 4, H});
  const at::Tensor rest = at::randn({2, 3, H});
  model::DecodeState shared;
  model::ForwardOptions p;
  p.from_layer = 1;
  p.hidden = prefix;
  p.logits = model::Logits::None;
  p.state = &shared;
  m.forward({}, p);
  std::optional<model::DecodeState> st = m.prefix_rows(shared, {4, 2});
  REQUIRE(st);
  CHECK(st->length() == 4);
  model::ForwardOptions o;
  o.from_layer = 1;
  o.hidden = rest;
  o.attention_mask = at::tensor({1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1}, at::kLong).view({2, 7});
  o.state = &*st;
  o.logits = model::Logits::All;
  const at::Tensor got = m.forward({}, o).logits;
  for (int64_t i = 0; i < 2; ++i) {
    INFO("row " << i);
    const int64_t n = i == 0 ? 4 : 2;
    model::ForwardOptions f;
    f.from_layer = 1;
    f.hidden = at::cat({prefix.narrow(1, 0, n), rest.narrow(0, i, 1)}, 1);
    f.logits = model::Logits::All;
    const at::Tensor want = m.forward({}, f).logits.narrow(1, n, 3);
    // the same sums in other blockings (one row vs two, cached keys vs one pass)
    CHECK(rel_err(got.narrow(0, i, 1), want) < 1e-5);
  }
  // prefix_rows_at: block 1 alone, for two shared prefixes at once = each one's rows on their own
  {
    const at::Tensor prefix2 = at::randn({1, 4, H});
    model::DecodeState shared2;
    model::ForwardOptions p2 = p;
    p2.hidden = prefix2;
    p2.state = &shared2;
    m.forward({}, p2);
    std::optional<model::DecodeState> both = m.prefix_rows_at(1, {&shared, &shared2}, {4, 2});
    REQUIRE(both);
    CHECK(both->batch() == 4);
    model::ForwardOptions ob;
    ob.from_layer = ob.to_layer = 1;
    ob.hidden = at::cat({rest, rest * 0.5}, 0);
    ob.attention_mask = o.attention_mask.repeat({2, 1});
    ob.state = &*both;
    ob.logits = model::Logits::None;
    const at::Tensor got_both = m.forward({}, ob).residual;
    for (int k = 0; k < 2; ++k) {
      INFO("shared prefix " << k);
      std::optional<model::DecodeState> one = m.prefix_rows(k == 0 ? shared : shared2, {4, 2});
      model::ForwardOptions oo = ob;
      oo.to_layer = 2;  // one's state holds blocks 1 and 2: it runs to the last block
      oo.hidden = ob.hidden.narrow(0, 2 * k, 2);
      oo.attention_mask = o.attention_mask;
      oo.state = &*one;
      oo.capture = true;
      const at::Tensor want = m.forward({}, oo).hidden[2];  // after block 1
      CHECK(rel_err(got_both.narrow(0, 2 * k, 2), want) < 1e-5);
    }
    // a state holding a block after to_layer would leave that block's state behind
    std::optional<model::DecodeState> full = m.prefix_rows(shared, {4, 2});
    model::ForwardOptions bad = o;
    bad.to_layer = 1;
    bad.state = &*full;
    diag_test::require_error([&] { m.forward({}, bad); }, {"holds block 2", "after to_layer 1"});
    diag_test::require_error([&] { m.prefix_rows_at(1, {&shared, &*full}, {4, 2}); }, {"one row"});
  }
  // a state that started at block 1 cannot run from block 0, nor from a state of two rows
  o.from_layer = 0;
  diag_test::require_error([&] { m.forward({}, o); }, {"blocks 1..", "from block 0"});
  diag_test::require_error([&] { m.prefix_rows(*st, {1}); }, {"one row"});
  diag_test::require_error([&] { m.prefix_rows(shared, {5}); }, {"length 5", "0..4"});
  // a Mamba2 state holds only its last position: no prefix rows
  ltrun::model::TinySpec ns = ltrun_test::tiny_spec("nemotron_h", 3);
  ns.pattern = "M*-";
  const model::Model nm = model::make_tiny(ns);
  model::DecodeState nshared;
  p.from_layer = 0;
  p.state = &nshared;
  nm.forward({}, p);
  CHECK(!nm.prefix_rows(nshared, {4, 2}));
}

TEST_CASE("perturbed passes: the shared zeroed prefix = resume = naive, whatever the context's place") {
  at::NoGradGuard no_grad;
  ltrun::model::TinySpec ns = ltrun_test::tiny_spec("nemotron_h", 3);
  ns.pattern = "M*-";
  ltrun::model::TinySpec attn_mlp = ns;  // blocks without state (MLP) between attention blocks
  attn_mlp.pattern = "*-*-";
  for (const char* arch : {"qwen3", "qwen2", "nemotron_h", "attention_mlp"}) {
    INFO(arch);
    const std::string a = arch;
    const model::Model m = a == "nemotron_h"      ? model::make_tiny(ns)
                           : a == "attention_mlp" ? model::make_tiny(attn_mlp)
                                                  : diag_test::sharp_tiny(arch, 5);
    // leading contexts of several lengths, one that does not lead, one with a second run
    // later, one with none, rows of several lengths (left padding)
    const std::vector<Sample> s = {
        sample({1, 7, 9, 3, 22, 40, 5, 17}, {0, 1, 2, 3}), sample({8, 2, 11, 4, 30}, {0, 1}),
        sample({6, 6, 12, 19, 33, 2}, {1, 2}), sample({5, 9, 14, 2, 7, 3, 8}, {0, 1, 4}),
        sample({4, 4, 21, 9}, {})};
    const Packed b = pack(s, 0, s.size(), 61);
    const auto clean = clean_pass(m, b);
    const at::Tensor prefix = perturbed_logits(m, clean.hidden, b.zero, b.mask, Method::Prefix);
    const at::Tensor resume = perturbed_logits(m, clean.hidden, b.zero, b.mask, Method::Resume);
    const at::Tensor naive = perturbed_logits(m, clean.hidden, b.zero, b.mask, Method::Naive);
    // float32 sums blocked differently (cached keys, fewer rows): a few ulps per block, as above
    CHECK(rel_err(prefix, naive) < 1e-5);
    CHECK(rel_err(prefix, resume) < 1e-5);
    // a shared prefix longer than the batch needs gives the same
    SharedPrefix shared(m, 9);
    CHECK(rel_err(perturbed_logits(m, clean.hidden, b.zero, b.mask, Method::Prefix, &shared), prefix) < 1e-6);
    // the zeroing matters (the test would pass if it were ignored otherwise)
    CHECK(rel_err(prefix[0], clean.logits.select(1, 0)) > 1e-3);
  }
}

TEST_CASE("lens_top / lens_at: the lens read in pieces = the full logits' log-sum-exp, top-k, values") {
  at::NoGradGuard no_grad;
  // a vocabulary of 5000: lens_top reads it in pieces of >= 2048 ids (three here, the last short)
  ltrun::model::TinySpec spec = ltrun_test::tiny_spec("qwen3", 2, 3, 5000);
  const model::Model m = model::make_tiny(spec);
  const at::Tensor h = at::randn({6, m.config().hidden_size}) * 4;
  const at::Tensor full = m.lens(h).to(at::kDouble);  // [6, 5000]
  const LensTop t = lens_top(m, h, 7);
  REQUIRE(t.ids.sizes() == at::IntArrayRef({6, 7}));
  // float32 sums over 5000 terms in another order: a few ulps of the largest logit
  const double tol = 8 * 1.2e-7 * (1 + full.abs().max().item<double>());
  CHECK((t.lse.to(at::kDouble) - full.logsumexp(-1)).abs().max().item<double>() < tol);
  auto [want_v, want_i] = full.topk(7, -1);
  // the ids are the top 7 up to a tie within tol (which another summation order may break the
  // other way): the full logits at them are the 7 largest, in order
  CHECK((full.gather(1, t.ids) - want_v).abs().max().item<double>() < tol);
  CHECK((t.values.to(at::kDouble) - want_v).abs().max().item<double>() < tol);
  const at::Tensor ids = at::tensor({0, 4999, 2048, 17, 4095, 3}, at::kLong).view({6, 1}).repeat({1, 3});
  CHECK((lens_at(m, t.normed, ids).to(at::kDouble) - full.gather(1, ids)).abs().max().item<double>() < tol);
  // k = 0: only the log-sum-exp
  CHECK(!lens_top(m, h, 0).ids.defined());
}

TEST_CASE("trace: lens series, JS series, targets, padding") {
  at::NoGradGuard no_grad;
  const model::Model m = diag_test::sharp_tiny("qwen3", 4);
  const int N = m.n_layers();
  std::vector<Sample> s = {sample({1, 7, 9, 3, 22, 40, 5, 17}, {0, 1, 2, 3}, 1),
                           sample({8, 2, 11, 4, 30}, {1, 2}, 1), sample({6, 6, 12, 19, 33, 2}, {0, 1, 2}, 2)};
  TraceOptions o;
  o.batch = 3;
  const auto t = trace(m, s, o);
  REQUIRE(t.size() == 3);
  for (size_t i = 0; i < s.size(); ++i) {
    INFO("sample " << i + 1);
    REQUIRE(t[i].p_target.size() == size_t(N + 1));
    REQUIRE(t[i].js.size() == size_t(N + 1));
    REQUIRE(t[i].tp_ratio.size() == size_t(N));
    REQUIRE(t[i].ls_djs.size() == size_t(N - 1));  // the final block's ΔJS is undefined
    REQUIRE(t[i].top_ids[0].size() == 10);
    // the model's own prediction, and P_t(N) = P[t*]: the last residual normed once
    model::ForwardOptions f;
    f.capture = true;
    const auto out = m.forward(at::tensor(s[i].ids, at::kLong).unsqueeze(0), f);
    const at::Tensor P = at::softmax(out.logits[0][-1].to(at::kDouble), -1);
    // the target is this pass's argmax up to a tie: the two paths' logits differ by ~1e-5
    // (the estimate below, logits of order 10), so a logit within 1e-4 x (1 + the largest
    // |logit|), ~1e-3, of the largest may win on another host's kernels
    const at::Tensor z = out.logits[0][-1].to(at::kDouble);
    CHECK(z.max().item<double>() - z[t[i].target].item<double>() <= 1e-4 * (1 + z.abs().max().item<double>()));
    // Not bit-identical paths: the trace runs the 3 samples as one left-padded batch, this is
    // a forward of one sample, so BLAS sums each fp32 dot product (length K = 32..61 here) in
    // another blocking and order. Each output of a matmul then differs by about
    // sqrt(K) * eps32 * sum|a_i b_i| (eps32 = 6e-8: ~3e-7 of the terms' scale), compounded over
    // 4 blocks of x15-sharpened weights; P_t = softmax(z)_t moves by |dz_t - E_P[dz]|, i.e. by
    // the absolute logit error, with logits of order 10 here: ~1e-5 relative. 1e-6 held on one
    // machine only (0.6129025851 vs 0.612903 with OpenBLAS's Haswell kernels on an AMD EPYC).
    // The trace's own float32 P_t = exp(logit_t - logsumexp) adds up to ~4 ulps of the largest
    // |logit| on top.
    const double tol =
        std::max(1e-5, 4 * 1.2e-7 * (1 + out.logits[0][-1].abs().max().item<double>()));
    CHECK_THAT(t[i].p_target[N], WithinRel(P[t[i].target].item<double>(), tol));
    for (int r = 0; r <= N; ++r) {
      const at::Tensor lr = m.lens(out.hidden[r][0][-1]);
      const at::Tensor pr = at::softmax(lr.to(at::kDouble), -1);
      CHECK_THAT(t[i].p_target[r], WithinRel(pr[t[i].target].item<double>(),
                                             std::max(1e-5, 4 * 1.2e-7 * (1 + lr.abs().max().item<double>()))));
      // the lens's top id is this pass's argmax up to a tie (as the target above)
      const at::Tensor zr = lr.to(at::kDouble);
      CHECK(zr.max().item<double>() - zr[t[i].top_ids[r][0]].item<double>() <= 1e-4 * (1 + zr.abs().max().item<double>()));
    }
    CHECK(t[i].js[N] < 1e-9);  // nothing runs after the last block
    CHECK(t[i].js[0] > 1e-4);
    for (int l = 0; l < N; ++l)
      CHECK(t[i].tp_ratio[l] == std::fabs(t[i].p_target[l + 1] - t[i].p_target[l]) / (t[i].p_target[l + 1] + 1e-6));
    for (int l = 0; l < N - 1; ++l)
      CHECK(t[i].ls_djs[l] == std::fabs(t[i].js[l + 1] - t[i].js[l]) / (t[i].js[l] + 1e-6));
  }
  // one sample per pass (no padding) and the naive method agree with the padded batch
  o.batch = 1;
  const auto t1 = trace(m, s, o);
  o.method = Method::Naive;
  o.batch = 2;
  const auto tn = trace(m, s, o);
  o.method = Method::Resume;
  const auto tr = trace(m, s, o);
  // JS in float32 on a support of at most 2k = 20 tokens: each term p·log(2p/(p+q)) is off by
  // a few ulps (1.2e-7) of its O(1) log, so the sum by at most ~2.4e-6
  for (size_t i = 0; i < s.size(); ++i)
    for (int r = 0; r <= N; ++r) {
      // P_t moves by the absolute logit error, ~1e-5 (see the estimate in the case above)
      CHECK_THAT(t1[i].p_target[r], WithinRel(t[i].p_target[r], 1e-5));
      CHECK_THAT(t1[i].js[r], WithinAbs(t[i].js[r], 2.4e-6));
      CHECK_THAT(tn[i].js[r], WithinAbs(t[i].js[r], 2.4e-6));
      CHECK_THAT(tr[i].js[r], WithinAbs(t[i].js[r], 2.4e-6));
    }
  // the final block's ΔJS on request: JS[N-1] / (JS[N-1] + eps), about 1
  o.include_final_djs = true;
  const auto tf = trace(m, s, o);
  REQUIRE(tf[0].ls_djs.size() == size_t(N));
  // the same double formula on the same values: a rounding of a number < 1
  CHECK_THAT(tf[0].ls_djs[N - 1], WithinAbs(tf[0].js[N - 1] / (tf[0].js[N - 1] + 1e-6), 1e-9));
  // a given target replaces the prediction
  s[0].target = 13;
  CHECK(trace(m, {s[0]})[0].target == 13);
  diag_test::require_error([&] { s[1].target = 61; trace(m, s); }, {"sample 2", "target 61"});
}

TEST_CASE("summarize: group means, profiles, TP interval, split") {
  auto tr = [](int group, std::vector<double> p, std::vector<double> js) {
    SampleTrace t;
    t.group = group;
    t.p_target = p;
    t.js = js;
    t.tp_ratio = tp_ratio(p);
    t.ls_djs = delta_js(js, true);
    return t;
  };
  // the target rises in blocks 2 and 3; the context matters until block 1 (ΔJS is ~1 there)
  const std::vector<SampleTrace> ts = {
      tr(1, {0.1, 0.1, 0.1, 0.5, 0.9}, {0.6, 0.6, 0.0, 0.0, 0.0}),
      tr(1, {0.1, 0.1, 0.1, 0.5, 0.7}, {0.6, 0.6, 0.0, 0.0, 0.0}),
      tr(2, {0.2, 0.2, 0.2, 0.5, 0.8}, {0.5, 0.5, 0.0, 0.0, 0.0}),
  };
  const Summary s = summarize(ts, {0.25, 0.5, 0.75}, 0.0);
  REQUIRE(s.groups.size() == 2);
  CHECK(s.groups[0].group == 1);
  CHECK(s.groups[0].samples == 2);
  // double means of two numbers < 1: a rounding of 1.1e-16 or two
  CHECK_THAT(s.groups[0].p_target[4], WithinAbs(0.8, 1e-15));
  CHECK_THAT(s.groups[0].tp_ratio[3], WithinAbs((0.4 / (0.9 + 1e-6) + 0.2 / (0.7 + 1e-6)) / 2, 1e-15));
  CHECK(s.groups[1].samples == 1);
  // profiles: the mean over groups, min-max normalised
  REQUIRE(s.tp.size() == 4);
  const double tp2 = (0.4 / (0.5 + 1e-6) + 0.3 / (0.5 + 1e-6)) / 2;
  const double tp3 = ((0.4 / (0.9 + 1e-6) + 0.2 / (0.7 + 1e-6)) / 2 + 0.3 / (0.8 + 1e-6)) / 2;
  CHECK(s.tp[0] == 0);
  CHECK(s.tp[2] == 1);
  CHECK_THAT(s.tp[3], WithinAbs(tp3 / tp2, 1e-12));  // double: a few roundings of 1e-16
  CHECK(s.ls[1] == 1);
  CHECK(s.tp_interval == std::vector<int>{2, 3});
  // sensitivity in blocks 0..1, the particle in blocks 2..3: b = 2
  REQUIRE(s.splits.size() == 3);
  CHECK_THAT(s.splits[1].score, WithinAbs(0.5 + (1 + tp3 / tp2) / 2, 1e-6));
  CHECK(s.best.b == 2);
  CHECK(s.best.ratio == 0.5);
}

TEST_CASE("summarize: the final block's ΔJS stays out of the LS profile and S(b)") {
  auto tr = [](int group, std::vector<double> p, std::vector<double> js) {
    SampleTrace t;
    t.group = group;
    t.p_target = p;
    t.js = js;
    t.tp_ratio = tp_ratio(p);
    t.ls_djs = delta_js(js);
    return t;
  };
  // 4 blocks. JS = (0.4, 0.2, 0.2, 0.1, 0): ΔJS = (0.5, 0, 0.5) (eps aside) and the final
  // block's 1 left out; P_t = (0.1, 0.1, 0.1, 0.5, 1): Ratio = (0, 0, 0.8, 0.5)
  const std::vector<SampleTrace> ts = {tr(1, {0.1, 0.1, 0.1, 0.5, 1.0}, {0.4, 0.2, 0.2, 0.1, 0.0})};
  const Summary s = summarize(ts, kDefaultRatios);
  REQUIRE(s.ls.size() == 3);
  // min-max over blocks 0..2 only: (1, 0, ~1); with the final block (~1) it would be the same
  // here, so check the raw group mean and the normalised values
  CHECK_THAT(s.groups[0].ls_djs[0], WithinAbs(0.2 / (0.4 + 1e-6), 1e-15));
  CHECK(s.ls[0] == 1);
  CHECK(s.ls[1] == 0);
  // double: a few roundings of 1e-16
  CHECK_THAT(s.ls[2], WithinAbs((0.1 / (0.2 + 1e-6)) / (0.2 / (0.4 + 1e-6)), 1e-12));
  // TP normalised: (0, 0, 1, 0.5 / 0.8) with eps
  const double r2 = 0.4 / (0.5 + 1e-6), r3 = 0.5 / (1 + 1e-6);
  CHECK(s.tp[2] == 1);
  CHECK_THAT(s.tp[3], WithinAbs(r3 / r2, 1e-12));
  // splits: 1/3 -> b = 1, 1/2 -> 2, 2/3 -> 3 lowered to 2 (block 3 alone has no ΔJS)
  REQUIRE(s.splits.size() == 2);
  CHECK(s.splits[0].b == 1);
  CHECK(s.splits[1].b == 2);
  // S(2) = mean(ls0, ls1) + mean(tp2, tp3) - mean(tp0, tp1) - ls2
  const double ls2 = (0.1 / (0.2 + 1e-6)) / (0.2 / (0.4 + 1e-6));
  CHECK_THAT(s.splits[1].score, WithinAbs(0.5 + (1 + r3 / r2) / 2 - 0 - ls2, 1e-12));
  // S(1) = ls0 + mean(tp1..3) - tp0 - mean(ls1, ls2)
  CHECK_THAT(s.splits[0].score, WithinAbs(1 + (0 + 1 + r3 / r2) / 3 - 0 - ls2 / 2, 1e-12));
  CHECK(s.recommendation.allocation == Allocation::TrainShallow);
  CHECK(s.recommendation.split.b == 1);
}

TEST_CASE("parse_method: the three names; another is an error naming the function and the name") {
  using namespace ltrun::diag;
  CHECK(parse_method("prefix", "f") == Method::Prefix);
  CHECK(parse_method("resume", "f") == Method::Resume);
  CHECK(parse_method("naive", "f") == Method::Naive);
  try {
    parse_method("Prefix", "lt.diag.trace");
    FAIL("no error");
  } catch (const std::exception& e) {
    CHECK(std::string(e.what()) == "lt.diag.trace: method 'Prefix': expected \"prefix\", \"resume\" or \"naive\"");
  }
  CHECK(ltrun::duplicate_key(ltrun::field_keys(trace_option_fields(), {"method", "ratios"})) == "");
}
