// runtime/diag/tracer.cpp: the LayerTracer scan (clean pass, lens, batched resumed
// perturbations) and its summary (group means, profiles, splits).
#include "runtime/diag/tracer.h"

#include <ATen/ATen.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <tuple>
#include <map>
#include <memory>
#include <optional>
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

SharedPrefix::SharedPrefix(const model::Model& m, int64_t length)
    : m_(m), length_(length), states_(size_t(m.n_layers())) {
  LT_CHECK(length >= 1, "SharedPrefix: length {} must be at least 1", length);
}
SharedPrefix::~SharedPrefix() = default;

const model::DecodeState& SharedPrefix::at(int r) {
  LT_CHECK(r >= 0 && r < m_.n_layers(), "SharedPrefix: block {} outside 0..{}", r, m_.n_layers() - 1);
  auto& st = states_[size_t(r)];
  if (!st) {
    st = std::make_unique<model::DecodeState>();
    model::ForwardOptions o;
    o.from_layer = r;
    o.hidden = at::zeros({1, length_, m_.config().hidden_size},
                         at::TensorOptions(m_.device()).dtype(m_.dtype()));
    o.logits = model::Logits::None;
    o.state = st.get();
    m_.forward({}, o);
  }
  return *st;
}

namespace {

// Method::Resume: the resumptions batched across residuals. Block l runs once on the rows of
// every resumption that has reached it (r = 0..l, (l+1)·B rows), so a batch of B samples takes
// N block calls, not N(N+1)/2. Returns the last positions' residuals after the last block,
// [N·B, 1, H] (resumption r in rows r·B .. r·B+B-1).
at::Tensor resume_last(const model::Model& m, const std::vector<at::Tensor>& hidden,
                       const at::Tensor& z, const at::Tensor& attention_mask) {
  const int N = m.n_layers();
  const int64_t T = z.size(1);
  at::Tensor rows_h;
  for (int l = 0; l < N; ++l) {
    check_interrupt();
    const at::Tensor fresh = zero_context(hidden[l], z);
    rows_h = l == 0 ? fresh : at::cat({rows_h, fresh}, 0);
    model::ForwardOptions o;
    o.from_layer = l;
    o.to_layer = l;
    o.hidden = rows_h;
    if (attention_mask.defined()) o.attention_mask = attention_mask.repeat({l + 1, 1});
    o.logits = model::Logits::None;
    rows_h = m.forward({}, o).residual;
  }
  return rows_h.narrow(1, T - 1, 1);
}

// Method::Prefix: each row's leading zeroed run (its context when the context comes first)
// from the shared prefix's state, then only the row's later tokens through blocks r..N-1.
// Batched across residuals as resume_last is: block l runs once, on the rows of every
// resumption r <= l, each with its own shared prefix's state at block l (prefix_rows_at).
// Same layout as resume_last; undefined when the model cannot share (see Method::Prefix).
at::Tensor prefix_last(const model::Model& m, const std::vector<at::Tensor>& hidden,
                       const at::Tensor& z, const at::Tensor& attention_mask,
                       SharedPrefix* shared) {
  const int N = m.n_layers();
  const int64_t B = z.size(0), T = z.size(1);
  // per row: padding (left), the leading zeroed run, and the tokens after it
  const at::Tensor zc = z.cpu();
  const at::Tensor mc = attention_mask.defined() ? attention_mask.cpu().ne(0)
                                                 : at::ones({B, T}, at::kBool);
  auto za = zc.accessor<bool, 2>();
  auto ma = mc.accessor<bool, 2>();
  std::vector<int64_t> lead(size_t(B), 0), rest(size_t(B), 0);
  int64_t Q = 0;
  for (int64_t i = 0; i < B; ++i) {
    int64_t t = 0;
    while (t < T && !ma[i][t]) ++t;
    while (t < T && za[i][t]) ++t, ++lead[size_t(i)];
    rest[size_t(i)] = T - t;
    if (rest[size_t(i)] == 0) return {};  // all context: the last token itself is zeroed
    Q = std::max(Q, rest[size_t(i)]);
  }
  const int64_t W = *std::max_element(lead.begin(), lead.end());
  if (W == 0) return {};  // no row leads with context: nothing to share
  std::optional<SharedPrefix> own;
  if (!shared || shared->length() < W) shared = &own.emplace(m, W);
  // the mask over [prefix W | tokens Q]: row i's prefix right-aligned in the W columns, its
  // own tokens right-aligned in the Q columns (the Q - rest[i] columns before them are padding)
  at::Tensor mask = at::zeros({B, W + Q}, at::kLong);
  auto mk = mask.accessor<int64_t, 2>();
  for (int64_t i = 0; i < B; ++i) {
    for (int64_t j = W - lead[size_t(i)]; j < W; ++j) mk[i][j] = 1;
    for (int64_t j = W + Q - rest[size_t(i)]; j < W + Q; ++j) mk[i][j] = 1;
  }
  mask = mask.to(m.device());
  std::vector<const model::DecodeState*> sources;  // resumption r's shared prefix
  at::Tensor rows_h;
  for (int l = 0; l < N; ++l) {
    check_interrupt();
    sources.push_back(&shared->at(l));
    std::optional<model::DecodeState> st = m.prefix_rows_at(l, sources, lead);
    if (!st) return {};
    // only the rows' own tokens
    const at::Tensor fresh = zero_context(hidden[l].narrow(1, T - Q, Q), z.narrow(1, T - Q, Q));
    rows_h = l == 0 ? fresh : at::cat({rows_h, fresh}, 0);
    model::ForwardOptions o;
    o.from_layer = l;
    o.to_layer = l;
    o.hidden = rows_h;
    o.attention_mask = mask.repeat({l + 1, 1});
    o.state = &*st;
    o.logits = model::Logits::None;
    rows_h = m.forward({}, o).residual;
  }
  return rows_h.narrow(1, Q - 1, 1);
}

}  // namespace

at::Tensor perturbed_last(const model::Model& m, const std::vector<at::Tensor>& hidden,
                          const at::Tensor& zero, const at::Tensor& attention_mask,
                          Method method, SharedPrefix* shared) {
  const int N = m.n_layers();
  LT_CHECK(hidden.size() == size_t(N + 1),
           "perturbed_logits: expected the {} residuals hidden[0..{}], got {}", N + 1, N, hidden.size());
  LT_CHECK(zero.dim() == 2 && zero.scalar_type() == at::kBool && hidden[0].dim() == 3 &&
               zero.size(0) == hidden[0].size(0) && zero.size(1) == hidden[0].size(1),
           "perturbed_logits: `zero` must be bool [batch, tokens] matching the residuals");
  const int64_t T = zero.size(1), B = zero.size(0);
  const at::Tensor z = zero.to(m.device());
  at::Tensor last;  // [N·B, 1, H]
  if (method == Method::Naive) {
    std::vector<at::Tensor> rows;  // [B, 1, H] per residual
    for (int r = 0; r < N; ++r) {
      check_interrupt();
      model::ForwardOptions o;
      o.hidden = hidden[0];  // the embeddings: the whole stack runs
      o.attention_mask = attention_mask;
      o.intervene[r - 1] = model::Intervention::zero(z);
      o.logits = model::Logits::None;
      rows.push_back(m.forward({}, o).residual.narrow(1, T - 1, 1));
    }
    last = at::cat(rows, 0);
  } else {
    if (method == Method::Prefix) last = prefix_last(m, hidden, z, attention_mask, shared);
    if (!last.defined()) last = resume_last(m, hidden, z, attention_mask);
  }
  // residual N (after the last block): nothing left to run
  last = at::cat({last, zero_context(hidden[N], z).narrow(1, T - 1, 1)}, 0);
  return last.select(1, 0).view({N + 1, B, -1});
}

at::Tensor perturbed_logits(const model::Model& m, const std::vector<at::Tensor>& hidden,
                            const at::Tensor& zero, const at::Tensor& attention_mask,
                            Method method, SharedPrefix* shared) {
  return m.lens(perturbed_last(m, hidden, zero, attention_mask, method, shared));
}

LensTop lens_top(const model::Model& m, const at::Tensor& h, int64_t k) {
  LT_CHECK(h.dim() == 2, "lens_top: expected rows [R, hidden], found {} dimensions", h.dim());
  LensTop out;
  out.normed = m.lens_norm(h);
  const at::Tensor& W = m.head();
  const int64_t R = out.normed.size(0), V = W.size(0);
  k = std::min(k, V);
  // pieces of about 4 MB of float32 logits: they stay in cache between the product and the
  // reductions, and one buffer serves every piece
  const int64_t piece = std::min(V, std::max<int64_t>(2048, (int64_t(1) << 20) / std::max<int64_t>(R, 1)));
  const at::Tensor buf = at::empty({R, piece}, out.normed.options());
  out.lse = at::full({R}, -std::numeric_limits<float>::infinity(),
                     at::TensorOptions(out.normed.device()).dtype(at::kFloat));
  for (int64_t from = 0; from < V; from += piece) {
    const int64_t n = std::min(piece, V - from);
    at::Tensor logits = n == piece ? buf : at::empty({R, n}, out.normed.options());
    at::mm_out(logits, out.normed, W.narrow(0, from, n).t());
    logits = logits.to(at::kFloat);
    out.lse = at::logaddexp(out.lse, logits.logsumexp(-1));
    if (k == 0) continue;
    auto [v, i] = logits.topk(std::min(k, n), -1, true, false);
    i = i + from;
    if (out.values.defined()) {
      v = at::cat({out.values, v}, -1);
      i = at::cat({out.ids, i}, -1);
      at::Tensor sel;
      std::tie(v, sel) = v.topk(std::min(k, v.size(-1)), -1, true, false);
      i = i.gather(-1, sel);
    }
    out.values = v;
    out.ids = i;
  }
  if (k > 0) {
    at::Tensor order;
    std::tie(out.values, order) = out.values.sort(-1, true);
    out.ids = out.ids.gather(-1, order);
  }
  return out;
}

at::Tensor lens_at(const model::Model& m, const at::Tensor& normed, const at::Tensor& ids) {
  LT_CHECK(normed.dim() == 2 && ids.dim() == 2 && ids.size(0) == normed.size(0),
           "lens_at: expected rows [R, hidden] and ids [R, n], found [{}] and [{}]",
           fmt::join(normed.sizes(), ", "), fmt::join(ids.sizes(), ", "));
  const at::Tensor w = m.head().index_select(0, ids.reshape({-1})).view({ids.size(0), ids.size(1), -1});
  return at::bmm(w, normed.unsqueeze(-1)).squeeze(-1).to(at::kFloat);
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
  // Method::Prefix: one shared prefix as long as the longest leading context
  std::unique_ptr<SharedPrefix> shared;
  if (o.method == Method::Prefix) {
    int64_t longest = 0;
    for (const Sample& s : samples) {
      std::vector<int64_t> c = s.context;
      std::sort(c.begin(), c.end());
      int64_t n = 0;
      while (size_t(n) < c.size() && c[size_t(n)] == n) ++n;
      longest = std::max(longest, n);
    }
    if (longest > 0) shared = std::make_unique<SharedPrefix>(m, longest);
  }
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
    // The perturbed passes: the context zeroed in each residual, last positions [(N+1)·B, H]
    const at::Tensor last =
        perturbed_last(m, clean.hidden, b.zero, b.mask, o.method, shared.get()).reshape({(N + 1) * B, -1});
    const bool gathered = o.topk > 0 && o.topk < V;  // JS on the top-k support (else the whole vocabulary)
    // One read of the vocabulary for both: the clean residuals' lens (rows r·B + i: P_t and the
    // candidates) and, for the gathered JS, the perturbed ones' (rows (N+1)·B + r·B + i: Q's
    // top-k and log-sum-exp). The unembedding is the big matrix; reading it once per batch
    // instead of twice is most of the lens's cost at a large vocabulary.
    std::vector<at::Tensor> lasts;
    for (int r = 0; r <= N; ++r) lasts.push_back(clean.hidden[r].narrow(1, T - 1, 1).select(1, 0));
    if (gathered) lasts.push_back(last);
    const int64_t R = (N + 1) * B;
    const LensTop L = lens_top(m, at::cat(lasts, 0), gathered ? std::max(K, o.topk) : K);
    // Task Particle: P_t and the candidates from the logits and their log-sum-exp (float32)
    {
      const at::Tensor tgt_rows = tgt.repeat({N + 1}).unsqueeze(1);
      const at::Tensor normed = L.normed.narrow(0, 0, R), lse = L.lse.narrow(0, 0, R);
      const at::Tensor pt = (lens_at(m, normed, tgt_rows).squeeze(1) - lse)
                                .exp().to(at::kDouble).cpu().view({N + 1, B});
      auto pa = pt.accessor<double, 2>();
      at::Tensor vals, idx;
      if (K > 0) {
        vals = (L.values.narrow(0, 0, R).narrow(1, 0, K) - lse.unsqueeze(1))
                   .exp().to(at::kDouble).cpu().contiguous().view({N + 1, B, K});
        idx = L.ids.narrow(0, 0, R).narrow(1, 0, K).cpu().contiguous().view({N + 1, B, K});
      }
      for (int r = 0; r <= N; ++r)
        for (int64_t i = 0; i < B; ++i) {
          SampleTrace& s = out[from + i];
          s.p_target[r] = pa[r][i];
          if (K == 0) continue;
          s.top_ids[r].assign(idx[r][i].data_ptr<int64_t>(), idx[r][i].data_ptr<int64_t>() + K);
          s.top_probs[r].assign(vals[r][i].data_ptr<double>(), vals[r][i].data_ptr<double>() + K);
        }
    }
    // Layer-wise Sensitivity: JS(P, Q_r) on the union of the top-k supports of P and Q_r
    {
      const at::Tensor Pr = P.unsqueeze(0).expand({N + 1, B, V});  // Pr[r][i]: sample i's P
      at::Tensor js;
      if (gathered) {
        const at::Tensor q_ids = L.ids.narrow(0, R, R).narrow(1, 0, o.topk);
        const TopkUnion u = topk_union(std::get<1>(P.topk(o.topk, -1, true, false)).repeat({N + 1, 1}), q_ids);
        const at::Tensor lp = Pr.gather(-1, u.ids.view({N + 1, B, -1})).reshape({(N + 1) * B, -1});
        js = js_divergence_gathered(lp, lens_at(m, L.normed.narrow(0, R, R), u.ids), u.valid);
      } else {
        js = js_divergence_logits(Pr, m.lens(last).view({N + 1, B, V}), o.topk);
      }
      const at::Tensor jsd = js.to(at::kDouble).cpu().view({N + 1, B});
      auto ja = jsd.accessor<double, 2>();
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

const Fields<TraceOptions>& trace_option_fields() {
  static const Fields<TraceOptions> f = {{"topk", &TraceOptions::topk},
                                         {"candidates", &TraceOptions::candidates},
                                         {"batch", &TraceOptions::batch},
                                         {"tau", &TraceOptions::tau},
                                         {"final_djs", &TraceOptions::include_final_djs}};
  return f;
}

Method parse_method(const std::string& name, const std::string& fn) {
  if (name == "naive") return Method::Naive;
  if (name == "resume") return Method::Resume;
  if (name == "prefix") return Method::Prefix;
  fail("{}: method '{}': expected \"prefix\", \"resume\" or \"naive\"", fn, name);
}

}  // namespace ltrun::diag
