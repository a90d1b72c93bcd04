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
  // blocks run N(N+1)/2 times per sample instead of N(N+1). The resumptions are batched
  // across residuals: block l runs once on the rows of every resumption that has reached it
  // (r = 0..l, (l+1)·B rows), so a batch of B samples takes N block calls, not N(N+1)/2.
  at::Tensor rows_h;  // [(l+1)·B, T, H]: resumption r in rows r·B .. r·B+B-1
  const int64_t B = zero.size(0);
  for (int l = 0; l < N; ++l) {
    check_interrupt();
    const at::Tensor fresh = zeroed(l);
    rows_h = l == 0 ? fresh : at::cat({rows_h, fresh}, 0);
    model::ForwardOptions o;
    o.from_layer = l;
    o.to_layer = l;
    o.hidden = rows_h;
    if (attention_mask.defined()) o.attention_mask = attention_mask.repeat({l + 1, 1});
    o.logits = model::Logits::None;
    rows_h = m.forward({}, o).residual;
  }
  // residual N (after the last block): nothing left to run, only the lens; one lens call for
  // all N + 1 resumptions' last positions
  const at::Tensor last = at::cat({rows_h.narrow(1, T - 1, 1), zeroed(N).narrow(1, T - 1, 1)}, 0);
  return m.lens(last).select(1, 0).view({N + 1, B, -1});
}

std::vector<SampleTrace> trace(const model::Model& m, const std::vector<Sample>& samples_in,
                               const TraceOptions& o) {
  LT_CHECK(!samples_in.empty(), "trace: no samples");
  LT_CHECK(o.batch >= 1, "trace: batch {} must be at least 1", o.batch);
  LT_CHECK(o.candidates >= 0, "trace: candidates {} must not be negative", o.candidates);
  at::NoGradGuard no_grad;
  const int N = m.n_layers();
  const int64_t V = m.config().vocab_size, K = std::min(o.candidates, V);
  // Batches of similar lengths waste less on padding: the samples run sorted by length
  // (stably) and their traces go back to the given order. Checked first in the given order,
  // so that an error names the sample as given.
  for (size_t i = 0; i < samples_in.size(); ++i) pack(samples_in, i, i + 1, V);
  std::vector<size_t> order(samples_in.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return samples_in[a].ids.size() < samples_in[b].ids.size();
  });
  std::vector<Sample> samples;
  samples.reserve(order.size());
  for (size_t i : order) samples.push_back(samples_in[i]);
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
    const at::Tensor P = clean.logits.select(1, 0);  // [B, V] logits of the model's prediction
    std::vector<int64_t> target(B);
    const at::Tensor argmax = P.argmax(-1).cpu();
    for (int64_t i = 0; i < B; ++i)
      target[i] = samples[from + i].target.value_or(argmax[i].item<int64_t>());
    const at::Tensor tgt = at::tensor(target, at::kLong).to(m.device());

    for (int64_t i = 0; i < B; ++i) {
      SampleTrace& s = out[from + i];
      s.target = target[i];
      s.group = samples[from + i].group;
      s.p_target.resize(N + 1);
      s.js.resize(N + 1);
      s.top_ids.resize(N + 1);
      s.top_probs.resize(N + 1);
    }
    // Task Particle: the lens of every residual at the last token only, in one call; P_t and
    // the candidates from the logits and their log-sum-exp (float32: no probability vector)
    {
      std::vector<at::Tensor> lasts;
      for (int r = 0; r <= N; ++r) lasts.push_back(clean.hidden[r].narrow(1, T - 1, 1).select(1, 0));
      const at::Tensor L = m.lens(at::stack(lasts)).to(at::kFloat);  // [N+1, B, V]
      const at::Tensor lse = L.logsumexp(-1, true);                   // [N+1, B, 1]
      const at::Tensor pt = (L.gather(2, tgt.view({1, B, 1}).expand({N + 1, B, 1})) - lse)
                                .exp().squeeze(2).to(at::kDouble).cpu();  // [N+1, B]
      auto [vals, idx] = L.topk(K, -1);
      vals = (vals - lse).exp().to(at::kDouble).cpu().contiguous();
      idx = idx.cpu().contiguous();
      auto pa = pt.accessor<double, 2>();
      for (int r = 0; r <= N; ++r)
        for (int64_t i = 0; i < B; ++i) {
          SampleTrace& s = out[from + i];
          s.p_target[r] = pa[r][i];
          s.top_ids[r].assign(idx[r][i].data_ptr<int64_t>(), idx[r][i].data_ptr<int64_t>() + K);
          s.top_probs[r].assign(vals[r][i].data_ptr<double>(), vals[r][i].data_ptr<double>() + K);
        }
    }
    // Layer-wise Sensitivity: Q with the context zeroed in each residual; JS on the gathered
    // top-k support of the logits
    {
      const at::Tensor Q = perturbed_logits(m, clean.hidden, b.zero, b.mask, o.method);  // [N+1, B, V]
      const at::Tensor js =
          js_divergence_logits(P.unsqueeze(0).expand_as(Q), Q, o.topk).to(at::kDouble).cpu();
      auto ja = js.accessor<double, 2>();
      for (int r = 0; r <= N; ++r)
        for (int64_t i = 0; i < B; ++i) out[from + i].js[r] = ja[r][i];
    }
    for (int64_t i = 0; i < B; ++i) {
      SampleTrace& s = out[from + i];
      s.tp_ratio = tp_ratio(s.p_target);
      s.ls_djs = delta_js(s.js, o.include_final_djs);
      for (int l = 0; l < N; ++l)
        if (s.tp_ratio[l] > o.tau) s.tp_interval.push_back(l);
    }
  }
  std::vector<SampleTrace> given(out.size());
  for (size_t k = 0; k < order.size(); ++k) given[order[k]] = std::move(out[k]);
  return given;
}

Summary summarize(const std::vector<SampleTrace>& traces, const std::vector<double>& ratios,
                  double tau) {
  LT_CHECK(!traces.empty(), "summarize: no sample traces");
  const size_t N = traces[0].tp_ratio.size(), NL = traces[0].ls_djs.size();
  LT_CHECK(NL == N || NL + 1 == N, "summarize: sample 1 has ΔJS for {} blocks and Ratio for {}", NL, N);
  std::map<int, GroupMeans> groups;
  auto add = [](std::vector<double>& acc, const std::vector<double>& v) {
    if (acc.empty()) acc.assign(v.size(), 0.0);
    for (size_t i = 0; i < v.size(); ++i) acc[i] += v[i];
  };
  for (size_t i = 0; i < traces.size(); ++i) {
    const SampleTrace& t = traces[i];
    LT_CHECK(t.tp_ratio.size() == N && t.ls_djs.size() == NL && t.p_target.size() == N + 1 &&
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
  std::vector<double> tp(N, 0.0), ls(NL, 0.0);
  for (auto& [label, g] : groups) {
    for (auto* v : {&g.p_target, &g.js, &g.tp_ratio, &g.ls_djs})
      for (double& x : *v) x /= g.samples;
    for (size_t l = 0; l < N; ++l) tp[l] += g.tp_ratio[l] / double(groups.size());
    for (size_t l = 0; l < NL; ++l) ls[l] += g.ls_djs[l] / double(groups.size());
    s.groups.push_back(g);
  }
  for (size_t l = 0; l < N; ++l)
    if (tp[l] > tau) s.tp_interval.push_back(int(l));
  s.tp = normalise(tp);
  s.ls = normalise(ls);
  if (NL >= 2) {
    s.splits = split_scores(s.tp, s.ls, ratios);
    s.best = best_split(s.splits);
    s.recommendation = recommend(s.splits, int(N));
  }
  return s;
}

}  // namespace ltrun::diag
