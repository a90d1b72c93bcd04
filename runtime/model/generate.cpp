// runtime/model/generate.cpp: batched decoding with a decode state and HF-style sampling.
#include "runtime/model/generate.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <limits>
#include <map>
#include <ATen/core/grad_mode.h>

#include "runtime/core/error.h"
#include "runtime/core/run_context.h"
#include "runtime/model/generate_check.h"
#include "runtime/model/static_decode.h"
#include "runtime/text/tokenizer.h"

namespace ltrun::model {

double row_draw(uint64_t seed, int64_t row, int64_t step) {
  const uint64_t h = splitmix64(splitmix64(splitmix64(seed) ^ uint64_t(row)) ^ uint64_t(step));
  return double(h >> 11) * 0x1p-53;  // 53 random bits: [0, 1)
}

at::Tensor next_tokens(const at::Tensor& logits, const GenerateOptions& o, at::Generator& gen) {
  LT_CHECK(logits.dim() == 2, "next_tokens: logits must be [batch, vocab]");
  if (o.temperature <= 0) return logits.argmax(-1).to(at::kCPU);
  return next_tokens(logits, o, at::rand({logits.size(0)}, gen, at::kDouble));
}

at::Tensor row_draws(uint64_t seed, const at::Tensor& rows, const at::Tensor& steps) {
  // uint64 arithmetic in int64 tensors: + and * wrap alike in two's complement; ATen's >> is
  // arithmetic, so a logical shift masks off the copies of the sign bit
  auto lsr = [](const at::Tensor& x, int s) { return x.__rshift__(s).bitwise_and(int64_t(~0ULL >> s)); };
  auto mix = [&](at::Tensor x) {  // splitmix64
    x = x + int64_t(0x9e3779b97f4a7c15ULL);
    x = at::bitwise_xor(x, lsr(x, 30)) * int64_t(0xbf58476d1ce4e5b9ULL);
    x = at::bitwise_xor(x, lsr(x, 27)) * int64_t(0x94d049bb133111ebULL);
    return at::bitwise_xor(x, lsr(x, 31));
  };
  const at::Tensor h = mix(at::bitwise_xor(mix(at::bitwise_xor(rows.to(at::kLong), int64_t(splitmix64(seed)))),
                                           steps.to(at::kLong)));
  return lsr(h, 11).to(at::kDouble) * 0x1p-53;  // < 2^53: exact in fp64, as row_draw
}

at::Tensor next_tokens(const at::Tensor& logits, const GenerateOptions& o, const at::Tensor& draws) {
  LT_CHECK(logits.dim() == 2, "next_tokens: logits must be [batch, vocab]");
  if (o.temperature <= 0) return logits.argmax(-1).to(at::kCPU);
  at::Tensor total;
  const at::Tensor tok = sample_tokens(logits, o, draws, &total);
  const at::Tensor bad = total.squeeze(1).isnan().nonzero();
  if (bad.numel() > 0) {
    const int64_t row = bad[0].item<int64_t>();
    fail_no_distribution(logits[row], o, row);
  }
  return tok.to(at::kCPU);
}

void fail_no_distribution(const at::Tensor& logits, const GenerateOptions& o, int64_t row) {
  // sample_tokens divides the fp32 logits by the temperature: finite logits leave no
  // distribution only when that overflows (or the temperature rounds to 0 in fp32)
  const at::Tensor l = logits.to(at::kCPU).to(at::kDouble);
  if (l.isfinite().all().item<bool>()) {
    const double largest = l.abs().max().item<double>();
    const double least = std::max(largest / double(std::numeric_limits<float>::max()),
                                  double(std::numeric_limits<float>::denorm_min()));
    fail("generate: option temperature {} is too small: row {}'s logits divided by it overflow fp32 (largest |logit| "
         "{:.4g}); use a temperature of at least {:.3g}, or 0 for greedy",
         o.temperature, row, largest, least);
  }
  // a NaN or infinite logit (a diverged model) leaves no distribution to sample from
  fail("generate: row {} has NaN or infinite logits: nothing to sample from (did training diverge?)", row);
}

at::Tensor sample_tokens(const at::Tensor& logits, const GenerateOptions& o, const at::Tensor& draws,
                         at::Tensor* total) {
  LT_CHECK(logits.dim() == 2, "next_tokens: logits must be [batch, vocab]");
  if (o.temperature <= 0) return logits.argmax(-1);
  LT_CHECK(draws.dim() == 1 && draws.size(0) == logits.size(0),
           "next_tokens: {} draws for {} rows", draws.numel(), logits.size(0));
  LT_CHECK(o.top_k >= 0, "generate: top_k must be >= 0, found {}", o.top_k);
  LT_CHECK(o.top_p > 0 && o.top_p <= 1, "generate: top_p must be in (0, 1], found {}", o.top_p);
  const double inf = std::numeric_limits<double>::infinity();
  const int64_t V = logits.size(-1);
  at::Tensor s = logits.to(at::kFloat) / o.temperature;
  if (o.top_k > 0 && o.top_k < V) {
    const at::Tensor kth = std::get<0>(s.topk(o.top_k, -1)).narrow(-1, o.top_k - 1, 1);
    s = s.masked_fill(s < kth, -inf);
  }
  if (o.top_p < 1) {
    // drop the least likely tokens whose total mass stays within 1 - top_p; keep at least one
    const auto [sorted, order] = s.sort(-1, /*descending=*/false);
    const at::Tensor drop = sorted.softmax(-1).cumsum(-1) <= (1 - o.top_p);
    drop.narrow(-1, V - 1, 1).fill_(false);
    s = s.masked_fill(drop.scatter(1, order, drop), -inf);
  }
  // Inverse-CDF sampling on the logits' device, in two levels: one uniform draw per row
  // from the CPU generator (so a seed gives the same draws on every device) picks a block of
  // kBlock tokens by the blocks' cumulative mass, then the token inside that block. Two passes
  // over [B, V] (softmax, block sums) instead of at::multinomial on the CPU, which cost 0.33 s
  // per step at batch 64 over the Qwen3 vocabulary (151,669) and needed the whole
  // distribution copied to the CPU on a GPU node. Cumulative sums are fp64 (no drift).
  constexpr int64_t kBlock = 1024;
  const int64_t B = logits.size(0), nb = (V + kBlock - 1) / kBlock;
  if (nb * kBlock != V) s = at::constant_pad_nd(s, {0, nb * kBlock - V}, -inf);
  const at::Tensor p = s.softmax(-1).view({B, nb, kBlock});
  const at::Tensor bcdf = p.sum(-1).to(at::kDouble).cumsum(-1);  // [B, nb]
  if (total) *total = bcdf.narrow(1, nb - 1, 1);
  const at::Tensor u = draws.to(at::kDouble).view({B, 1}).to(bcdf.device()) * bcdf.narrow(1, nb - 1, 1);
  // right = true: the first i with cdf[i] > u, so p[i] > 0 (a flat stretch of a CDF, masked
  // tokens or padding, is never chosen); u can round up to the total: then the last i with mass
  auto first_above = [](const at::Tensor& cdf, const at::Tensor& x) {
    const int64_t n = cdf.size(1);
    const at::Tensor i = at::searchsorted(cdf, x, /*out_int32=*/false, /*right=*/true);
    const at::Tensor last = (cdf < cdf.narrow(1, n - 1, 1)).sum(-1, /*keepdim=*/true).clamp_max(n - 1);
    return at::minimum(i, last);  // [B, 1]
  };
  const at::Tensor blk = first_above(bcdf, u);
  const at::Tensor below = at::where(blk > 0, bcdf.gather(1, (blk - 1).clamp_min(0)), at::zeros_like(u));
  const at::Tensor inner = p.gather(1, blk.unsqueeze(-1).expand({B, 1, kBlock})).squeeze(1)
                               .to(at::kDouble).cumsum(-1);  // [B, kBlock]
  const at::Tensor tok = blk * kBlock + first_above(inner, u - below);
  return tok.squeeze(-1);
}

Padded left_pad(const std::vector<std::vector<int64_t>>& rows, int64_t pad) {
  size_t T = 0;
  for (const auto& r : rows) T = std::max(T, r.size());
  const int64_t B = int64_t(rows.size());
  Padded p{at::full({B, int64_t(T)}, pad, at::kLong), at::zeros({B, int64_t(T)}, at::kLong)};
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = int64_t(rows[size_t(b)].size()), off = int64_t(T) - n;
    p.ids[b].narrow(0, off, n).copy_(at::tensor(rows[size_t(b)], at::kLong));
    p.mask[b].narrow(0, off, n).fill_(1);
  }
  return p;
}

int64_t pad_token(const Config& c) {
  if (c.pad_token_id) return *c.pad_token_id;
  return c.eos_token_ids.empty() ? 0 : c.eos_token_ids.front();
}

Prefill prefill_rows(const Model& model, const std::vector<std::vector<int64_t>>& part,
                     const GenerateOptions& o, int64_t pad) {
  const int64_t k = int64_t(part.size());
  // share_prefill: the distinct prompts (in order of first appearance) run as the prefill
  // batch; source[b] is row b's prompt among them. Their longest is the longest of all, so
  // the padding is the same as for all of them.
  std::vector<std::vector<int64_t>> distinct;
  std::vector<int64_t> source(static_cast<size_t>(k));
  if (o.share_prefill) {
    std::map<std::vector<int64_t>, int64_t> seen;
    for (int64_t b = 0; b < k; ++b) {
      const auto [it, fresh] = seen.emplace(part[size_t(b)], int64_t(distinct.size()));
      if (fresh) distinct.push_back(part[size_t(b)]);
      source[size_t(b)] = it->second;
    }
  }
  const bool shared = o.share_prefill && int64_t(distinct.size()) < k;
  const Padded batch = left_pad(shared ? distinct : part, pad);
  const int64_t T = batch.ids.size(1);
  Prefill out{DecodeState(T + o.max_new_tokens), {}, batch.mask};
  ForwardOptions f;
  f.logits = Logits::Last;
  f.state = &out.state;
  f.attention_mask = batch.mask;
  out.logits = model.forward(batch.ids, f).logits.select(1, 0);
  if (shared) {
    const at::Tensor idx = at::tensor(source, at::kLong);
    out.state.select_rows(idx);
    out.logits = out.logits.index_select(0, idx.to(out.logits.device()));
    out.mask = out.mask.index_select(0, idx);
  }
  return out;
}

std::vector<Generation> generate(const Model& model,
                                 const std::vector<std::vector<int64_t>>& prompts,
                                 const GenerateOptions& o, GenerateStats* stats) {
  check_generate_options(model.config(), prompts, o);  // every caller's numbers, before any allocation
  const Config& c = model.config();
  const int64_t B = int64_t(prompts.size());
  LT_CHECK(B > 0, "generate: no prompts");
  LT_CHECK(o.max_new_tokens >= 0, "generate: max_new_tokens must be >= 0, found {}",
           o.max_new_tokens);
  LT_CHECK(o.max_rows >= 0, "generate: max_rows must be >= 0 (0: all rows at once), found {}", o.max_rows);
  for (size_t b = 0; b < prompts.size(); ++b) LT_CHECK(!prompts[b].empty(), "generate: prompt {} is empty", b);
  const std::vector<int64_t> stop_ids = o.stop_ids.value_or(c.eos_token_ids);
  const int64_t pad = o.pad_id >= 0 ? o.pad_id : pad_token(c);
  GenerateStats local;
  GenerateStats& st = stats ? *stats : local;
  st = {};
  std::vector<Generation> out(B);
  if (o.max_new_tokens == 0) {
    for (Generation& g : out) g.finish = "length";
    return out;
  }
  const int64_t cap = o.max_rows > 0 ? std::min(o.max_rows, B) : B;
  if (o.cache == "static") return generate_static(model, prompts, o, pad, stop_ids, cap, st);

  at::NoGradGuard no_grad;
  // The decode batch: its state, mask [n, width] (grows by one column per decoded token), the
  // row of `prompts` at each batch position, and the logits [n, vocab] to sample from next.
  DecodeState state;
  at::Tensor mask, logits;
  std::vector<int64_t> rows;
  int64_t next = 0;  // rows next.. wait for a place

  // Prefills rows next .. next + k - 1 and puts them into the batch: a new batch, or (refill)
  // appended to the running one, both right-aligned to a common width.
  auto admit = [&](int64_t k) {
    std::vector<std::vector<int64_t>> part(prompts.begin() + next, prompts.begin() + next + k);
    Prefill pre = prefill_rows(model, part, o, pad);
    DecodeState& fresh = pre.state;
    const at::Tensor& lg = pre.logits;
    const at::Tensor& m = pre.mask;
    const int64_t T = m.size(1);
    ++st.prefills;
    if (rows.empty()) {
      state = std::move(fresh);
      mask = m;
      logits = lg;
    } else {
      // columns that are padding in every running row (the rows that needed them have left)
      // are dropped; the narrower side gets left padding
      const int64_t lead = mask.ne(0).any(0).to(at::kLong).argmax().item<int64_t>();
      const int64_t width = std::max(mask.size(1) - lead, T);
      state.append_rows(fresh, width);
      auto align = [width](const at::Tensor& x, int64_t from) {
        const at::Tensor kept = x.narrow(1, from, x.size(1) - from);
        return at::cat({at::zeros({x.size(0), width - kept.size(1)}, at::kLong), kept}, 1);
      };
      mask = at::cat({align(mask, lead), align(m, 0)});
      logits = at::cat({logits, lg});
      st.refilled_rows += k;
    }
    for (int64_t b = next; b < next + k; ++b) rows.push_back(b);
    next += k;
    st.peak_rows = std::max(st.peak_rows, int64_t(rows.size()));
  };

  std::vector<bool> done(B, false);
  admit(cap);
  while (!rows.empty()) {
    const int64_t n = int64_t(rows.size());
    at::Tensor draws;
    if (o.temperature > 0) {
      // a running row's k-th draw: it has k tokens so far (each step before added one)
      draws = at::empty({n}, at::kDouble);
      double* d = draws.data_ptr<double>();
      for (int64_t i = 0; i < n; ++i) {
        const int64_t b = rows[size_t(i)];
        d[i] = row_draw(o.seed, o.stream_offset + b, int64_t(out[size_t(b)].tokens.size()));
      }
    }
    const at::Tensor next_tok = next_tokens(logits, o, draws).contiguous();
    const int64_t* tok = next_tok.data_ptr<int64_t>();
    at::Tensor lp;  // [n] fp32 on the CPU
    if (o.logprobs) {
      const at::Tensor z = o.temperature > 0 ? logits.to(at::kFloat) / o.temperature
                                             : logits.to(at::kFloat);
      lp = z.log_softmax(-1).gather(1, next_tok.to(z.device()).view({n, 1})).view({n}).to(at::kCPU).contiguous();
    }
    const float* lpv = o.logprobs ? lp.data_ptr<float>() : nullptr;
    std::vector<int64_t> feed(size_t(n), pad);  // finished rows decode padding, their output unused
    std::vector<int64_t> keep;                  // batch positions still running
    for (int64_t i = 0; i < n; ++i) {
      const int64_t b = rows[size_t(i)];
      if (done[size_t(b)]) continue;
      Generation& g = out[size_t(b)];
      if (std::find(stop_ids.begin(), stop_ids.end(), tok[i]) != stop_ids.end()) {
        g.finish = "stop_id";
        if (o.keep_stop_id) {
          g.tokens.push_back(tok[i]);
          if (lpv) g.logprobs.push_back(lpv[i]);
        }
      } else {
        g.tokens.push_back(tok[i]);
        if (lpv) g.logprobs.push_back(lpv[i]);
        feed[size_t(i)] = tok[i];
        if (o.stop && o.stop(int(b), g.tokens))
          g.finish = "stop";
        else if (int64_t(g.tokens.size()) >= o.max_new_tokens)
          g.finish = "length";
      }
      if (!g.finish.empty())
        done[size_t(b)] = true;
      else
        keep.push_back(i);
    }
    if (keep.empty()) {
      rows.clear();  // the batch has ended; a new one starts below if rows wait
    } else {
      if (o.drop_finished && int64_t(keep.size()) < n) {
        const at::Tensor idx = at::tensor(keep, at::kLong);
        state.select_rows(idx);
        mask = mask.index_select(0, idx);
        std::vector<int64_t> kept_rows, kept_feed;
        for (int64_t i : keep) {
          kept_rows.push_back(rows[size_t(i)]);
          kept_feed.push_back(feed[size_t(i)]);
        }
        rows = std::move(kept_rows);
        feed = std::move(kept_feed);
      }
      const int64_t m = int64_t(rows.size());
      mask = at::cat({mask, at::ones({m, 1}, at::kLong)}, 1);
      ForwardOptions f;
      f.logits = Logits::Last;
      f.state = &state;
      f.attention_mask = mask;
      logits = model.forward(at::tensor(feed, at::kLong).view({m, 1}), f).logits.select(1, 0);
      ++st.decode_steps;
    }
    // waiting rows take the free places: at once with refill, else once the batch has ended
    const int64_t free = cap - int64_t(rows.size());
    if (next < B && free > 0 && (rows.empty() || o.refill)) admit(std::min(free, B - next));
  }
  return out;
}

std::function<bool(int, const std::vector<int64_t>&)> stop_strings(const text::Tokenizer& tok,
                                                                   const std::vector<std::string>& stops) {
  return [&tok, &stops](int, const std::vector<int64_t>& toks) {
    const std::string text = tok.decode(std::vector<int32_t>(toks.begin(), toks.end()), true);
    for (const auto& s : stops)
      if (text.find(s) != std::string::npos) return true;
    return false;
  };
}

std::string cut_at_stops(const text::Tokenizer& tok, const std::vector<int64_t>& tokens,
                         const std::vector<std::string>& stops) {
  std::string text = tok.decode(std::vector<int32_t>(tokens.begin(), tokens.end()), true);
  size_t cut = std::string::npos;
  for (const auto& s : stops) cut = std::min(cut, text.find(s));
  return cut == std::string::npos ? text : text.substr(0, cut);
}

}  // namespace ltrun::model
