// runtime/diag/tracer.cpp: the LayerTracer scan (clean pass, lens, batched resumed
// perturbations) and its summary (group means, profiles, splits).
#include "runtime/diag/tracer.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <map>
#include <ATen/core/grad_mode.h>

#include "runtime/core/error.h"
#include "runtime/core/interrupt.h"
#include "runtime/model/model.h"

namespace ltrun::diag {

namespace {

at::Tensor last_probs(const at::Tensor& logits) {  // [B, 1, V] → float64 [B, V]
  return at::softmax(logits.select(1, 0).to(at::kDouble), -1);
}

}  // namespace

Packed pack(const std::vector<Sample>& samples, size_t from, size_t to, int64_t vocab,
            c10::Device device) {
  LT_CHECK(from < to && to <= samples.size(), "pack: samples {}..{} of {}", from + 1, to,
           samples.size());
  size_t T = 0;
  for (size_t i = from; i < to; ++i) T = std::max(T, samples[i].ids.size());
  const int64_t B = int64_t(to - from);
  Packed b;
  b.ids = at::zeros({B, int64_t(T)}, at::kLong);  // padding id 0: masked, any valid id does
  at::Tensor mask = at::zeros({B, int64_t(T)}, at::kLong);
  b.zero = at::zeros({B, int64_t(T)}, at::kBool);
  auto ids = b.ids.accessor<int64_t, 2>();
  auto msk = mask.accessor<int64_t, 2>();
  auto zero = b.zero.accessor<bool, 2>();
  bool padded = false;
  for (size_t i = from; i < to; ++i) {
    const Sample& s = samples[i];
    const int64_t n = int64_t(s.ids.size()), off = int64_t(T) - n, row = int64_t(i - from);
    LT_CHECK(n > 0, "trace: sample {} has no tokens", i + 1);
    padded |= off > 0;
    for (int64_t t = 0; t < n; ++t) {
      LT_CHECK(s.ids[t] >= 0 && s.ids[t] < vocab,
               "trace: sample {}: token {} at position {} is outside the vocabulary 0..{}", i + 1,
               s.ids[t], t, vocab - 1);
      ids[row][off + t] = s.ids[t];
      msk[row][off + t] = 1;
    }
    for (int64_t c : s.context) {
      LT_CHECK(c >= 0 && c < n, "trace: sample {}: context position {} out of range 0..{}", i + 1,
               c, n - 1);
      zero[row][off + c] = true;
    }
    if (s.target)
      LT_CHECK(*s.target >= 0 && *s.target < vocab,
               "trace: sample {}: target {} is outside the vocabulary 0..{}", i + 1, *s.target,
               vocab - 1);
  }
  b.ids = b.ids.to(device);
  b.zero = b.zero.to(device);
  if (padded) b.mask = mask.to(device);
  return b;
}

at::Tensor zero_context(const at::Tensor& h, const at::Tensor& zero) {
  return h.masked_fill(zero.to(h.device()).unsqueeze(-1), 0);
}

at::Tensor perturbed_logits(const model::Model& m, const std::vector<at::Tensor>& hidden,
                            const at::Tensor& zero, const at::Tensor& attention_mask,
                            Method method) {
  const int N = m.n_layers();
  LT_CHECK(hidden.size() == size_t(N + 1),
           "perturbed_logits: expected the {} residuals hidden[0..{}], got {}", N + 1, N, hidden.size());
  LT_CHECK(zero.dim() == 2 && zero.scalar_type() == at::kBool && hidden[0].dim() == 3 &&
               zero.size(0) == hidden[0].size(0) && zero.size(1) == hidden[0].size(1),
           "perturbed_logits: `zero` must be bool [batch, tokens] matching the residuals");
  const int64_t T = zero.size(1);
  const at::Tensor z = zero.to(m.device());
  auto zeroed = [&](int r) { return zero_context(hidden[r], z); };
  std::vector<at::Tensor> rows;  // [B, V] per residual
  if (method == Method::Naive) {
    for (int r = 0; r <= N; ++r) {
      check_interrupt();
      model::ForwardOptions o;
      o.hidden = hidden[0];  // the embeddings: the whole stack runs
      o.attention_mask = attention_mask;
      o.intervene[r - 1] = model::Intervention::zero(z);
      o.logits = model::Logits::Last;
      rows.push_back(m.forward({}, o).logits.select(1, 0));
    }
    return at::stack(rows);
  }
  // Resume: the perturbation of residual r starts from the clean hidden[r] at block r, so
  // blocks run N(N+1)/2 times per sample instead of N(N+1). Each pass keeps the clean pass's
  // batch shape, which makes a resume with nothing zeroed the clean pass bit for bit.
  for (int r = 0; r < N; ++r) {
    check_interrupt();
    model::ForwardOptions o;
    o.from_layer = r;
    o.hidden = zeroed(r);
    o.attention_mask = attention_mask;
    o.logits = model::Logits::Last;
    rows.push_back(m.forward({}, o).logits.select(1, 0));
  }
  // residual N (after the last block): nothing left to run, only the lens
  rows.push_back(m.lens(zeroed(N).narrow(1, T - 1, 1)).select(1, 0));
  return at::stack(rows);
}

std::vector<SampleTrace> trace(const model::Model& m, const std::vector<Sample>& samples,
                               const TraceOptions& o) {
  LT_CHECK(!samples.empty(), "trace: no samples");
  LT_CHECK(o.batch >= 1, "trace: batch {} must be at least 1", o.batch);
  LT_CHECK(o.candidates >= 0, "trace: candidates {} must not be negative", o.candidates);
  at::NoGradGuard no_grad;
  const int N = m.n_layers();
  const int64_t V = m.config().vocab_size, K = std::min(o.candidates, V);
  std::vector<SampleTrace> out(samples.size());
  for (size_t from = 0; from < samples.size(); from += size_t(o.batch)) {
    check_interrupt();
    const size_t to = std::min(samples.size(), from + size_t(o.batch));
    const Packed b = pack(samples, from, to, V, m.device());
    const int64_t B = b.ids.size(0), T = b.ids.size(1);

    model::ForwardOptions c;
    c.capture = true;
    c.attention_mask = b.mask;
    c.logits = model::Logits::Last;
    const model::ForwardResult clean = m.forward(b.ids, c);
    const at::Tensor P = last_probs(clean.logits);  // [B, V]
    std::vector<int64_t> target(B);
    const at::Tensor argmax = P.argmax(-1).cpu();
    for (int64_t i = 0; i < B; ++i)
      target[i] = samples[from + i].target.value_or(argmax[i].item<int64_t>());
    const at::Tensor tgt = at::tensor(target, at::kLong).to(m.device()).unsqueeze(1);

    for (int64_t i = 0; i < B; ++i) {
      SampleTrace& s = out[from + i];
      s.target = target[i];
      s.group = samples[from + i].group;
      s.p_target.resize(N + 1);
      s.js.resize(N + 1);
      s.top_ids.resize(N + 1);
      s.top_probs.resize(N + 1);
    }
    // Task Particle: the lens of every residual at the last token
    for (int r = 0; r <= N; ++r) {
      const at::Tensor pr = last_probs(m.lens(clean.hidden[r].narrow(1, T - 1, 1)));
      const at::Tensor pt = pr.gather(1, tgt).squeeze(1).cpu();
      auto [vals, idx] = pr.topk(K, -1);
      vals = vals.cpu();
      idx = idx.cpu();
      for (int64_t i = 0; i < B; ++i) {
        SampleTrace& s = out[from + i];
        s.p_target[r] = pt[i].item<double>();
        s.top_ids[r].assign(idx[i].data_ptr<int64_t>(), idx[i].data_ptr<int64_t>() + K);
        const at::Tensor v = vals[i].contiguous();
        s.top_probs[r].assign(v.data_ptr<double>(), v.data_ptr<double>() + K);
      }
    }
    // Layer-wise Sensitivity: Q with the context zeroed in each residual
    const at::Tensor Q = perturbed_logits(m, clean.hidden, b.zero, b.mask, o.method);
    for (int r = 0; r <= N; ++r) {
      const at::Tensor js = js_divergence(P, at::softmax(Q[r].to(at::kDouble), -1), o.topk).cpu();
      for (int64_t i = 0; i < B; ++i) out[from + i].js[r] = js[i].item<double>();
    }
    for (int64_t i = 0; i < B; ++i) {
      SampleTrace& s = out[from + i];
      s.tp_ratio = tp_ratio(s.p_target);
      s.ls_djs = delta_js(s.js);
      for (int l = 0; l < N; ++l)
        if (s.tp_ratio[l] > o.tau) s.tp_interval.push_back(l);
    }
  }
  return out;
}

Summary summarize(const std::vector<SampleTrace>& traces, const std::vector<double>& ratios,
                  double tau) {
  LT_CHECK(!traces.empty(), "summarize: no sample traces");
  const size_t N = traces[0].tp_ratio.size();
  std::map<int, GroupMeans> groups;
  auto add = [](std::vector<double>& acc, const std::vector<double>& v) {
    if (acc.empty()) acc.assign(v.size(), 0.0);
    for (size_t i = 0; i < v.size(); ++i) acc[i] += v[i];
  };
  for (size_t i = 0; i < traces.size(); ++i) {
    const SampleTrace& t = traces[i];
    LT_CHECK(t.tp_ratio.size() == N && t.ls_djs.size() == N && t.p_target.size() == N + 1 &&
                 t.js.size() == N + 1,
             "summarize: sample {} has series for {} blocks, sample 1 for {}", i + 1,
             t.tp_ratio.size(), N);
    GroupMeans& g = groups[t.group];
    g.group = t.group;
    g.samples++;
    add(g.p_target, t.p_target);
    add(g.js, t.js);
    add(g.tp_ratio, t.tp_ratio);
    add(g.ls_djs, t.ls_djs);
  }
  Summary s;
  std::vector<double> tp(N, 0.0), ls(N, 0.0);
  for (auto& [label, g] : groups) {
    for (auto* v : {&g.p_target, &g.js, &g.tp_ratio, &g.ls_djs})
      for (double& x : *v) x /= g.samples;
    for (size_t l = 0; l < N; ++l) {
      tp[l] += g.tp_ratio[l] / double(groups.size());
      ls[l] += g.ls_djs[l] / double(groups.size());
    }
    s.groups.push_back(g);
  }
  for (size_t l = 0; l < N; ++l)
    if (tp[l] > tau) s.tp_interval.push_back(int(l));
  s.tp = normalise(tp);
  s.ls = normalise(ls);
  if (N >= 2) {
    s.splits = split_scores(s.tp, s.ls, ratios);
    s.best = best_split(s.splits);
  }
  return s;
}

}  // namespace ltrun::diag
