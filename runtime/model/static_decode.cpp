// runtime/model/static_decode.cpp: the static cache and generate's static-cache loop (see
// static_decode.h).
#include "runtime/model/static_decode.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "runtime/core/error.h"
#include "runtime/model/arch/decoder.h"
#include "runtime/model/arch/gated_deltanet.h"
#include "runtime/model/arch/mamba2.h"
#include "runtime/model/step_graph.h"

namespace ltrun::model {

namespace {

// The tensors of a layer's decode state, with whether dimension 2 counts positions (keys and
// values) or the state has no positions (recurrent). A new state of the same kind goes to
// *fresh. Every kind a layer keeps (arch/) is listed here.
std::vector<std::pair<at::Tensor*, bool>> state_tensors(LayerState* s, std::unique_ptr<LayerState>* fresh, int layer) {
  if (auto* kv = dynamic_cast<KVState*>(s)) {
    if (fresh) *fresh = std::make_unique<KVState>();
    return {{&kv->k, true}, {&kv->v, true}};
  }
  if (auto* m = dynamic_cast<Mamba2State*>(s)) {
    if (fresh) *fresh = std::make_unique<Mamba2State>();
    return {{&m->conv, false}, {&m->ssm, false}};
  }
  if (auto* g = dynamic_cast<GatedDeltaNetState*>(s)) {
    if (fresh) *fresh = std::make_unique<GatedDeltaNetState>();
    return {{&g->conv, false}, {&g->recurrent, false}};
  }
  fail("static cache: block {} keeps a decode state of a kind the static cache does not know "
       "(keys and values, Mamba2, Gated DeltaNet); use cache = \"dynamic\"", layer);
}

// LTRUN_STATIC_GRAPHS=0 runs the static path's steps eagerly on a CUDA build too (to compare
// the graphs' tokens and speed against the same step without them); unset or 1: graphs.
bool graphs_enabled() {
  const char* e = std::getenv("LTRUN_STATIC_GRAPHS");
  const std::string v = e ? e : "";
  LT_CHECK(v.empty() || v == "0" || v == "1", "LTRUN_STATIC_GRAPHS must be \"0\" or \"1\", found \"{}\"", v);
  return v != "0";
}

}  // namespace

int64_t step_bucket(int64_t n, int64_t max_rows) {
  int64_t b = 1;
  while (b < n) b *= 2;
  return std::min(b, max_rows);
}

StaticCache::StaticCache(const Model& m, int64_t max_rows, int64_t width)
    : model_(m), rows_(max_rows), width_(width) {}

int64_t StaticCache::bytes() const {
  int64_t n = 0;
  for (const auto& layer : bufs_)
    for (const Buf& b : layer) n += int64_t(b.buf.nbytes());
  return n;
}

void StaticCache::put(const DecodeState& pre, int64_t T, const std::vector<int64_t>& lengths, int64_t at) {
  const int64_t k = int64_t(lengths.size());
  LT_CHECK(pre.from_layer_ == 0 && int(pre.layers_.size()) == model_.n_layers() && pre.batch_ == k,
           "static cache: a prefilled state of {} rows over all blocks expected", k);
  LT_CHECK(at >= 0 && at + k <= rows_, "static cache: rows {}..{} outside its {} places", at, at + k - 1, rows_);
  if (bufs_.empty()) {  // the first put: one buffer per state tensor, for good
    const int L = model_.n_layers();
    bufs_.resize(size_t(L));
    views_.layers_.resize(size_t(L));
    views_.from_layer_ = 0;
    for (int l = 0; l < L; ++l) {
      LayerState* s = pre.layers_[size_t(l)].get();
      if (!s) continue;
      auto src = state_tensors(s, &views_.layers_[size_t(l)], l);
      auto dst = state_tensors(views_.layers_[size_t(l)].get(), nullptr, l);
      for (size_t i = 0; i < src.size(); ++i) {
        const at::Tensor& t = *src[i].first;
        LT_CHECK(t.defined(), "static cache: block {}'s prefilled state is missing a tensor", l);
        std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
        shape[0] = rows_;
        if (src[i].second) shape[2] = width_;
        bufs_[size_t(l)].push_back({dst[i].first, at::zeros(shape, t.options()), src[i].second});
      }
    }
  }
  for (size_t l = 0; l < bufs_.size(); ++l) {
    if (bufs_[l].empty()) continue;
    auto src = state_tensors(pre.layers_[l].get(), nullptr, int(l));
    for (size_t i = 0; i < src.size(); ++i) {
      const at::Tensor& t = *src[i].first;
      const Buf& b = bufs_[l][i];
      if (!b.positions) {
        b.buf.narrow(0, at, k).copy_(t);
        continue;
      }
      // left-padded (row i's positions at columns T - len .. T - 1) to left-aligned
      for (int64_t r = 0; r < k; ++r) {
        const int64_t n = lengths[size_t(r)];
        LT_CHECK(n >= 1 && n <= T && n < width_, "static cache: a row of {} positions into {} columns", n, width_);
        b.buf[at + r].narrow(1, 0, n).copy_(t[r].narrow(1, T - n, n));
      }
    }
  }
}

void StaticCache::keep(const at::Tensor& idx) {
  const int64_t m = idx.size(0);
  for (auto& layer : bufs_)
    for (Buf& b : layer) {
      const at::Tensor i = idx.to(b.buf.device());
      b.buf.narrow(0, 0, m).copy_(b.buf.index_select(0, i));
    }
}

at::Tensor StaticCache::step(const at::Tensor& ids, const at::Tensor& lengths) {
  const int64_t n = ids.size(0);
  LT_CHECK(!bufs_.empty() && n <= rows_, "static cache: a step of {} rows, {} places{}", n, rows_,
           bufs_.empty() ? " (nothing put yet)" : "");
  for (auto& layer : bufs_)
    for (Buf& b : layer) *b.view = b.buf.narrow(0, 0, n);
  views_.batch_ = n;
  const at::Tensor logits = model_.decode_step(ids, lengths, width_, views_);
  // keys and values were written in place; a recurrent state is reassigned by its layer:
  // copied back, so the next step (or a graph's replay) reads it at the same address
  for (auto& layer : bufs_)
    for (Buf& b : layer) {
      const at::Tensor view = b.buf.narrow(0, 0, n);
      if (b.view->data_ptr() != view.data_ptr()) view.copy_(*b.view);
      *b.view = view;
    }
  return logits;
}

std::vector<Generation> generate_static(const Model& model, const std::vector<std::vector<int64_t>>& prompts,
                                        const GenerateOptions& o, int64_t pad,
                                        const std::vector<int64_t>& stop_ids, int64_t cap, GenerateStats& st,
                                        const StepCaptureFactory& capture) {
  at::NoGradGuard no_grad;
  const int64_t B = int64_t(prompts.size()), R = cap, V = model.config().vocab_size;
  const int64_t max_new = o.max_new_tokens;
  size_t longest = 0;
  for (const auto& p : prompts) longest = std::max(longest, p.size());
  // a row holds its prompt and every token fed back: at most max_new - 1 of them, and the
  // step after its last token writes one more position (unused)
  const int64_t W = int64_t(longest) + max_new;
  const c10::Device dev = model.device();
  const auto on = [&](at::ScalarType t) { return at::TensorOptions(dev).dtype(t); };
  StaticCache cache(model, R, W);
  // Per place, where the rows run: the logits to sample from next, the positions held, the
  // tokens drawn so far, the row's stream, whether it runs (not padding of a bucket), whether
  // its distribution was NaN; the step's sampled tokens and their log-probs.
  at::Tensor logits = at::zeros({R, V}, on(model.dtype()));
  at::Tensor lengths = at::zeros({R}, on(at::kLong)), counts = at::zeros({R}, on(at::kLong));
  at::Tensor streams = at::zeros({R}, on(at::kLong));
  at::Tensor live = at::zeros({R}, on(at::kBool)), bad = at::zeros({R}, on(at::kBool));
  at::Tensor tok = at::zeros({R}, on(at::kLong)), lp = at::zeros({R}, on(at::kFloat));
  // the host's view: the prompt row at each place and its tokens drawn (as `counts`)
  std::vector<int64_t> row_at, count_at;
  int64_t n = 0, next = 0;

  auto admit = [&](int64_t k) {
    const std::vector<std::vector<int64_t>> part(prompts.begin() + next, prompts.begin() + next + k);
    const Prefill pre = prefill_rows(model, part, o, pad);
    std::vector<int64_t> lens, rows;
    for (int64_t i = 0; i < k; ++i) {
      lens.push_back(int64_t(part[size_t(i)].size()));
      rows.push_back(o.stream_offset + next + i);
    }
    cache.put(pre.state, pre.mask.size(1), lens, n);
    logits.narrow(0, n, k).copy_(pre.logits);
    lengths.narrow(0, n, k).copy_(at::tensor(lens, at::kLong));
    counts.narrow(0, n, k).zero_();
    streams.narrow(0, n, k).copy_(at::tensor(rows, at::kLong));
    live.narrow(0, n, k).fill_(true);
    bad.narrow(0, n, k).fill_(false);
    ++st.prefills;
    if (n > 0) st.refilled_rows += k;
    for (int64_t i = 0; i < k; ++i) {
      row_at.push_back(next + i);
      count_at.push_back(0);
    }
    n += k;
    next += k;
    st.peak_rows = std::max(st.peak_rows, n);
  };

  // The step (what a CUDA graph holds for `nb` places): sample from the logits with each
  // row's own draw, feed the tokens through all blocks and the head, advance the positions.
  // Places n..nb-1 (a bucket's padding) run too; their output is never read.
  auto step = [&](int64_t nb) {
    const at::Tensor lg = logits.narrow(0, 0, nb);
    at::Tensor draws, total;
    if (o.temperature > 0) draws = row_draws(o.seed, streams.narrow(0, 0, nb), counts.narrow(0, 0, nb));
    // a row's token is < V (the sampler picks only tokens with mass); a padding place with
    // NaN logits could pick past it, so the bound holds for every place's embedding lookup
    const at::Tensor t = sample_tokens(lg, o, draws, &total).clamp_max(V - 1);
    if (total.defined()) bad.narrow(0, 0, nb).logical_or_(total.squeeze(1).isnan().logical_and(live.narrow(0, 0, nb)));
    tok.narrow(0, 0, nb).copy_(t);
    if (o.logprobs) {
      const at::Tensor z = o.temperature > 0 ? lg.to(at::kFloat) / o.temperature : lg.to(at::kFloat);
      lp.narrow(0, 0, nb).copy_(z.log_softmax(-1).gather(1, t.view({nb, 1})).view({nb}));
    }
    logits.narrow(0, 0, nb).copy_(cache.step(t, lengths.narrow(0, 0, nb)));
    // padding places keep advancing: held inside the buffer
    lengths.narrow(0, 0, nb).add_(1).clamp_max_(W - 1);
    counts.narrow(0, 0, nb).add_(1);
  };

  StepGraphs graphs(dev, graphs_enabled(), capture);
  // what the graphs did, also when a later step throws
  struct Tally {
    const StepGraphs& g;
    GenerateStats& st;
    ~Tally() {
      st.graphs = g.graphs();
      st.replays = g.replays();
      st.fallbacks = g.fallbacks();
    }
  } tally{graphs, st};
  std::vector<Generation> out(static_cast<size_t>(B));
  admit(R);
  while (n > 0) {
    // sync every sync_every steps, and when the first running row reaches max_new tokens (a
    // row never runs past its length: the cache holds W positions)
    int64_t window = o.sync_every;
    for (int64_t i = 0; i < n; ++i) window = std::min(window, max_new - count_at[size_t(i)]);
    const int64_t nb = step_bucket(n, R);
    const at::Tensor hist = at::empty({window, nb}, on(at::kLong));
    const at::Tensor hist_lp = o.logprobs ? at::empty({window, nb}, on(at::kFloat)) : at::Tensor();
    for (int64_t j = 0; j < window; ++j) {
      graphs.run(nb, [&] { step(nb); });
      hist[j].copy_(tok.narrow(0, 0, nb));
      if (o.logprobs) hist_lp[j].copy_(lp.narrow(0, 0, nb));
      ++st.decode_steps;
    }
    // the one synchronisation of the window
    const at::Tensor toks = hist.narrow(1, 0, n).to(at::kCPU).contiguous();
    const at::Tensor lps = o.logprobs ? hist_lp.narrow(1, 0, n).to(at::kCPU).contiguous() : at::Tensor();
    if (o.temperature > 0) {
      const at::Tensor b = bad.narrow(0, 0, n).to(at::kCPU);
      for (int64_t i = 0; i < n; ++i)
        if (b[i].item<bool>()) fail_no_distribution(logits[i], o, row_at[size_t(i)]);
    }
    const int64_t* tv = toks.data_ptr<int64_t>();
    const float* lv = o.logprobs ? lps.data_ptr<float>() : nullptr;
    std::vector<int64_t> keep;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t b = row_at[size_t(i)];
      Generation& g = out[size_t(b)];
      // as the dynamic path, token by token; the steps after a row's end are discarded
      for (int64_t j = 0; j < window && g.finish.empty(); ++j) {
        const int64_t x = tv[j * n + i];
        const float l = lv ? lv[j * n + i] : 0.f;
        if (std::find(stop_ids.begin(), stop_ids.end(), x) != stop_ids.end()) {
          g.finish = "stop_id";
          if (o.keep_stop_id) {
            g.tokens.push_back(x);
            if (lv) g.logprobs.push_back(l);
          }
        } else {
          g.tokens.push_back(x);
          if (lv) g.logprobs.push_back(l);
          if (o.stop && o.stop(int(b), g.tokens))
            g.finish = "stop";
          else if (int64_t(g.tokens.size()) >= max_new)
            g.finish = "length";
        }
      }
      count_at[size_t(i)] += window;
      if (g.finish.empty()) keep.push_back(i);
    }
    const int64_t m = int64_t(keep.size());
    if (m < n) {  // finished rows leave: the running ones move to places 0..m-1
      if (m > 0) {
        const at::Tensor idx = at::tensor(keep, at::kLong).to(dev);
        cache.keep(idx);
        for (at::Tensor* t : {&logits, &lengths, &counts, &streams, &bad})
          t->narrow(0, 0, m).copy_(t->index_select(0, idx));
      }
      std::vector<int64_t> rows2, counts2;
      for (int64_t i : keep) {
        rows2.push_back(row_at[size_t(i)]);
        counts2.push_back(count_at[size_t(i)]);
      }
      row_at = std::move(rows2);
      count_at = std::move(counts2);
      lengths.narrow(0, m, n - m).zero_();
      live.narrow(0, m, n - m).fill_(false);
      n = m;
    }
    // waiting rows take the free places: at once with refill, else once the batch has ended
    const int64_t free = R - n;
    if (next < B && free > 0 && (n == 0 || o.refill)) admit(std::min(free, B - next));
  }
  return out;
}

}  // namespace ltrun::model
