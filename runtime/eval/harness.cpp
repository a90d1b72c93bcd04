// runtime/eval/harness.cpp: batched scoring of benchmark items with a model (see harness.h).
#include "runtime/eval/harness.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <ATen/core/grad_mode.h>

#include "runtime/core/error.h"
#include "runtime/core/interrupt.h"
#include "runtime/eval/choice_answer.h"
#include "runtime/eval/math_answer.h"
#include "runtime/eval/metrics.h"
#include "runtime/eval/prompt.h"
#include "runtime/model/generate.h"
#include "runtime/model/model.h"
#include "runtime/text/tokenizer.h"

namespace ltrun::eval {
namespace {

bool is_math(const Item& it) { return it.bench == "gsm8k" || it.bench == "math500"; }

std::vector<int64_t> to64(const std::vector<int32_t>& v) { return {v.begin(), v.end()}; }

// Batches of prompt indices, similar lengths together, in a stable order.
std::vector<std::vector<size_t>> buckets(const std::vector<std::vector<int64_t>>& ids, int batch) {
  std::vector<size_t> order(ids.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ids[a].size() < ids[b].size(); });
  std::vector<std::vector<size_t>> out;
  for (size_t i = 0; i < order.size(); i += size_t(batch))
    out.emplace_back(order.begin() + i, order.begin() + std::min(order.size(), i + size_t(batch)));
  return out;
}

// The token ids that mean "option X" right after the prompt: "X" and " X" where each is one
// token (else the first token of " X"). Their probabilities are summed.
std::vector<std::vector<int64_t>> letter_tokens(const text::Tokenizer& tok, int n) {
  std::vector<std::vector<int64_t>> out;
  for (int i = 0; i < n; i++) {
    std::set<int64_t> ids;
    const std::string l = choice_letter(i);
    for (const std::string& s : {l, " " + l}) {
      auto e = tok.encode(s, false);
      if (e.size() == 1) ids.insert(e[0]);
    }
    if (ids.empty()) ids.insert(tok.encode(" " + l, false).at(0));
    out.emplace_back(ids.begin(), ids.end());
  }
  return out;
}

void done(const HarnessOptions& opt, size_t& n, size_t k, size_t total) {
  n += k;
  if (opt.progress) opt.progress(n, total);
}

// The cloze protocol (harness.h). One row per (item, option): the context's tokens, then the
// continuation's, encoded apart (so an option's tokens do not depend on what precedes it, as
// lm-evaluation-harness does). Only the positions that predict continuation tokens get
// logits (Logits::Positions), so no [rows, length, vocab] buffer exists.
std::vector<ItemResult> score_cloze(const model::Model& m, const text::Tokenizer& tok,
                                    const std::vector<Item>& items, const std::vector<Item>& pool,
                                    const HarnessOptions& opt) {
  struct Row {
    size_t item, option;
    int64_t n_cont;
  };
  std::vector<Row> rows;
  std::vector<std::vector<int64_t>> ids;
  std::vector<std::vector<double>> logp(items.size());
  std::vector<std::string> contexts(items.size());
  for (size_t i = 0; i < items.size(); i++) {
    const Item& it = items[i];
    const auto shots = opt.shots > 0 ? few_shot_examples(pool, it.subject, opt.shots) : std::vector<Item>{};
    contexts[i] = cloze_prompt(it, shots);
    const auto context = to64(tok.encode(contexts[i], true));
    const auto conts = cloze_continuations(it);
    logp[i].assign(conts.size(), 0.0);
    for (size_t c = 0; c < conts.size(); c++) {
      const auto cont = to64(tok.encode(conts[c], false));
      LT_CHECK(!cont.empty(), "{}: item {}: option {} has an empty cloze continuation", it.source, it.id,
               choice_letter(int(c)));
      rows.push_back({i, c, int64_t(cont.size())});
      ids.push_back(context);
      ids.back().insert(ids.back().end(), cont.begin(), cont.end());
    }
  }
  const int64_t pad = model::pad_token(m.config());
  size_t rows_done = 0, reported = 0;
  at::NoGradGuard no_grad;
  for (const auto& b : buckets(ids, opt.batch_size)) {
    check_interrupt();
    int64_t width = 0;
    for (size_t r : b) width = std::max(width, rows[r].n_cont);
    std::vector<std::vector<int64_t>> seqs;
    // position -n-1+j (from the row's end) predicts continuation token j of n; positions past
    // a row's n read its last position and are masked out
    at::Tensor pos = at::full({int64_t(b.size()), width}, -1, at::kLong);
    at::Tensor target = at::zeros({int64_t(b.size()), width}, at::kLong);
    at::Tensor valid = at::zeros({int64_t(b.size()), width}, at::kDouble);
    for (size_t k = 0; k < b.size(); k++) {
      const Row& row = rows[b[k]];
      const auto& seq = ids[b[k]];
      seqs.push_back(seq);
      for (int64_t j = 0; j < row.n_cont; j++) {
        pos[int64_t(k)][j] = -row.n_cont - 1 + j;
        target[int64_t(k)][j] = seq[seq.size() - size_t(row.n_cont) + size_t(j)];
        valid[int64_t(k)][j] = 1.0;
      }
    }
    const model::Padded x = model::left_pad(seqs, pad);
    model::ForwardOptions fo;
    fo.attention_mask = x.mask.to(m.device());
    fo.logits = model::Logits::Positions;
    fo.logit_positions = pos.to(m.device());
    const at::Tensor lp = m.forward(x.ids.to(m.device()), fo)
                              .logits.to(at::kFloat)
                              .log_softmax(-1)
                              .gather(-1, target.to(m.device()).unsqueeze(-1))
                              .squeeze(-1)
                              .to(at::kDouble)
                              .cpu();
    const at::Tensor sums = (lp * valid).sum(1);
    for (size_t k = 0; k < b.size(); k++) logp[rows[b[k]].item][rows[b[k]].option] = sums[int64_t(k)].item<double>();
    rows_done += b.size();
    const size_t items_done = rows_done * items.size() / rows.size();
    done(opt, reported, items_done - reported, items.size());
  }
  std::vector<ItemResult> out(items.size());
  for (size_t i = 0; i < items.size(); i++) {
    ItemResult& ir = out[i];
    ir.item = &items[i];
    ir.protocol = "cloze";
    ir.prompt = contexts[i];
    ir.choice_logp = logp[i];
    size_t best = 0;
    for (size_t c = 1; c < logp[i].size(); c++)
      if (logp[i][c] > logp[i][best]) best = c;
    ir.prediction = choice_letter(int(best));
    ir.correct = !items[i].answer.empty() && ir.prediction == items[i].answer;
  }
  return out;
}

}  // namespace

double Summary::acc_macro() const {
  double sum = 0;
  int k = 0;
  for (const auto& [cat, sc] : by_category)
    if (!cat.empty() && sc.n > 0) {
      sum += sc.acc();
      ++k;
    }
  return k ? sum / k : 0.0;
}

std::string math_prompt(const Item& item, const std::string& tmpl) {
  if (!tmpl.empty()) {
    LT_CHECK(tmpl.find("{question}") != std::string::npos,
             "eval: math template \"{}\" has no {{question}}", tmpl);
    std::string out;
    size_t at = 0;
    for (size_t p; (p = tmpl.find("{question}", at)) != std::string::npos; at = p + 10)
      out += tmpl.substr(at, p - at) + item.question;
    return out + tmpl.substr(at);
  }
  if (item.bench == "math500")
    return "Problem: " + item.question +
           "\nSolve the problem step by step and put the final answer in \\boxed{}.\nSolution:";
  return "Question: " + item.question +
         "\nAnswer: Let's think step by step, then end with \"#### <number>\".\n";
}

HarnessResult evaluate(const model::Model& m, const text::Tokenizer& tok, const std::vector<Item>& items,
                       const std::vector<Item>& pool, const HarnessOptions& opt) {
  LT_CHECK(opt.batch_size > 0, "eval: batch_size must be positive");
  HarnessResult res;
  if (items.empty()) return res;
  const bool math = is_math(items.front());
  for (const auto& it : items)
    LT_CHECK(is_math(it) == math, "eval: items mix math and multiple choice ({} and {})", items.front().bench, it.bench);

  std::vector<std::string> prompts;
  for (const auto& it : items) {
    if (math) {
      prompts.push_back(math_prompt(it, opt.math_template));
    } else {
      const auto shots = opt.shots > 0 ? few_shot_examples(pool, it.subject, opt.shots) : std::vector<Item>{};
      prompts.push_back(choice_prompt(it, shots));
    }
  }
  std::vector<std::vector<int64_t>> ids;
  for (const auto& e : tok.encode_batch(prompts, true)) ids.push_back(to64(e));
  const auto batches = buckets(ids, opt.batch_size);
  const int64_t pad = model::pad_token(m.config());

  auto summarize = [&](const std::string& protocol, const std::vector<ItemResult>& out) {
    Summary sum;
    sum.bench = items.front().bench;
    sum.protocol = protocol;
    const int samples = math ? std::max(1, opt.samples) : 1;
    sum.samples = samples;
    std::vector<SampleCount> counts;
    for (size_t i = 0; i < items.size(); i++) {
      SampleCount sc{samples, 0};
      for (int s = 0; s < samples; s++) sc.c += out[i * size_t(samples) + size_t(s)].correct;
      counts.push_back(sc);
      const Item& it = items[i];
      if (it.answer.empty()) continue;  // unlabelled (e.g. C-Eval test): predictions only
      const bool ok = out[i * size_t(samples)].correct;  // first sample (greedy when T = 0)
      for (Score* sc2 : {&sum.all, &sum.by_subject[it.subject], &sum.by_category[it.category]}) {
        sc2->n++;
        sc2->correct += ok;
      }
    }
    if (math) {
      sum.avg_at_k = mean_avg_at_k(counts);
      sum.pass_at_k = mean_pass_at_k(counts, samples);
    }
    res.summaries.push_back(std::move(sum));
  };

  std::vector<std::string> protocols = math ? std::vector<std::string>{"generate"} : opt.protocols;
  for (const auto& protocol : protocols) {
    LT_CHECK(protocol == "logit" || protocol == "generate" || protocol == "cloze",
             "eval: unknown protocol '{}' (logit, generate, cloze)", protocol);
    std::vector<ItemResult> out(items.size() * size_t(math ? opt.samples : 1));
    size_t progress = 0;
    const size_t total = items.size();
    if (protocol == "cloze") {
      out = score_cloze(m, tok, items, pool, opt);
    } else if (protocol == "logit") {
      at::NoGradGuard no_grad;
      std::map<int, std::vector<std::vector<int64_t>>> letters_by_n;
      for (const auto& b : batches) {
        check_interrupt();
        std::vector<std::vector<int64_t>> rows;
        for (size_t i : b) rows.push_back(ids[i]);
        const model::Padded x = model::left_pad(rows, pad);
        model::ForwardOptions fo;
        fo.attention_mask = x.mask.to(m.device());
        fo.logits = model::Logits::Last;
        at::Tensor probs = m.forward(x.ids.to(m.device()), fo).logits.select(1, 0).to(at::kFloat).softmax(-1).cpu();
        for (size_t r = 0; r < b.size(); r++) {
          const Item& it = items[b[r]];
          const int n = int(it.choices.size());
          auto cached = letters_by_n.find(n);
          if (cached == letters_by_n.end()) cached = letters_by_n.emplace(n, letter_tokens(tok, n)).first;
          const auto& letters = cached->second;
          ItemResult ir;
          ir.item = &it;
          ir.protocol = protocol;
          auto row = probs[int64_t(r)];
          int best = 0;
          for (int c = 0; c < n; c++) {
            double p = 0;
            for (int64_t id : letters[size_t(c)]) p += row[id].item<double>();
            ir.choice_probs.push_back(p);
            if (p > ir.choice_probs[size_t(best)]) best = c;
          }
          ir.prediction = choice_letter(best);
          ir.correct = !it.answer.empty() && ir.prediction == it.answer;
          out[b[r]] = std::move(ir);
        }
        done(opt, progress, b.size(), total);
      }
    } else {
      model::GenerateOptions g;
      g.max_new_tokens = opt.max_new_tokens > 0 ? opt.max_new_tokens : (math ? 256 : 16);
      g.temperature = math ? opt.temperature : 0.0;
      g.top_p = opt.top_p;
      const std::vector<std::string> stops =
          math ? std::vector<std::string>{"\nQuestion:", "\nProblem:", "\n\n\n"} : std::vector<std::string>{};
      g.stop = [&](int, const std::vector<int64_t>& t) {
        if (stops.empty()) return false;
        const std::string s = tok.decode(std::vector<int32_t>(t.begin(), t.end()), true);
        for (const auto& st : stops)
          if (s.find(st) != std::string::npos) return true;
        return false;
      };
      const int samples = math ? std::max(1, opt.samples) : 1;
      // refill: items in their order, 16 batches' worth per call (progress and Ctrl-C between
      // calls), at most batch_size rows decoding at once; item i draws from stream i
      std::vector<std::vector<size_t>> refill_groups;
      for (size_t i = 0; opt.refill && i < items.size(); i += size_t(opt.batch_size) * 16) {
        refill_groups.emplace_back();
        for (size_t j = i; j < std::min(items.size(), i + size_t(opt.batch_size) * 16); j++) refill_groups.back().push_back(j);
      }
      g.max_rows = opt.refill ? opt.batch_size : 0;
      g.refill = opt.refill;
      for (const auto& b : opt.refill ? refill_groups : batches) {
        check_interrupt();
        for (int s = 0; s < samples; s++) {
          std::vector<std::vector<int64_t>> prompts_b;
          for (size_t i : b) prompts_b.push_back(ids[i]);
          g.seed = opt.seed + uint64_t(s) * 1000003u + (opt.refill ? 0 : uint64_t(b.front()));
          g.stream_offset = opt.refill ? int64_t(b.front()) : 0;
          auto gens = model::generate(m, prompts_b, g);
          for (size_t r = 0; r < b.size(); r++) {
            const Item& it = items[b[r]];
            ItemResult ir;
            ir.item = &it;
            ir.protocol = protocol;
            ir.sample = s;
            ir.output = tok.decode(std::vector<int32_t>(gens[r].tokens.begin(), gens[r].tokens.end()), true);
            for (const auto& st : stops) {
              const size_t cut = ir.output.find(st);
              if (cut != std::string::npos) ir.output.resize(cut);
            }
            if (math) {
              ir.prediction = extract_math_answer(ir.output).value_or("");
              ir.correct = !ir.prediction.empty() && equivalent(ir.prediction, it.answer);
            } else {
              ir.prediction = extract_choice(ir.output, int(it.choices.size()));
              ir.correct = !it.answer.empty() && ir.prediction == it.answer;
            }
            out[b[r] * size_t(samples) + size_t(s)] = std::move(ir);
          }
        }
        done(opt, progress, b.size(), total);
      }
    }
    if (protocol != "cloze")
      for (auto& r : out) r.prompt = prompts[size_t(r.item - items.data())];
    summarize(protocol, out);
    if (protocol == "generate" && !math) {
      // the same outputs under the inclusion rule
      std::vector<ItemResult> contains = out;
      for (auto& r : contains) {
        r.protocol = "generate_contains";
        const int k = r.item->answer.size() == 1 ? r.item->answer[0] - 'A' : -1;
        r.correct = k >= 0 && k < int(r.item->choices.size()) &&
                    contains_option(r.output, r.item->answer, r.item->choices[size_t(k)]);
      }
      summarize("generate_contains", contains);
      for (auto& r : out) res.items.push_back(std::move(r));
      for (auto& r : contains) res.items.push_back(std::move(r));
      continue;
    }
    for (auto& r : out) res.items.push_back(std::move(r));
  }
  return res;
}

std::string cap_eval_text(const std::string& s) {
  if (s.size() <= kEvalTextBytes) return s;
  size_t n = kEvalTextBytes;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) n--;  // not inside a character
  return s.substr(0, n) + fmt::format("…[cut: {} bytes]", s.size());
}

void log_result(RunSink& sink, const std::string& bench, const HarnessResult& res) {
  for (const auto& r : res.items) {
    EvalRecord e;
    e.bench = bench;
    e.item_id = r.sample ? r.item->id + "#" + std::to_string(r.sample) : r.item->id;
    e.category = r.item->category;
    e.protocol = r.protocol;
    e.prediction = r.prediction;
    if (r.sample == 0) e.prompt = cap_eval_text(r.prompt);  // samples k > 0 ("ID#k") share it
    e.output = cap_eval_text(r.output);
    e.answer = r.item->answer;
    if (!r.item->answer.empty()) e.correct = r.correct;
    sink.eval_item(e);
  }
  for (const auto& sum : res.summaries) {
    const std::string base = bench + "/" + sum.protocol;
    if (sum.all.n) sink.metric(base + "/acc", sum.all.acc());
    const bool has_categories = std::any_of(sum.by_category.begin(), sum.by_category.end(),
                                            [](const auto& c) { return !c.first.empty() && c.second.n; });
    if (has_categories) sink.metric(base + "/acc_macro", sum.acc_macro());
    for (const auto& [cat, sc] : sum.by_category)
      if (!cat.empty() && sc.n) sink.metric(base + "/acc/" + cat, sc.acc());
    if (sum.samples > 1) {
      sink.metric(fmt::format("{}/avg@{}", bench, sum.samples), sum.avg_at_k);
      sink.metric(fmt::format("{}/pass@{}", bench, sum.samples), sum.pass_at_k);
    }
  }
}

const Fields<HarnessOptions>& harness_option_fields() {
  static const Fields<HarnessOptions> f = {{"protocols", &HarnessOptions::protocols},
                                           {"shots", &HarnessOptions::shots, 0},
                                           {"batch_size", &HarnessOptions::batch_size, 1},
                                           {"max_new_tokens", &HarnessOptions::max_new_tokens, 0},
                                           {"samples", &HarnessOptions::samples, 1},
                                           {"top_p", &HarnessOptions::top_p},
                                           {"template", &HarnessOptions::math_template},
                                           {"refill", &HarnessOptions::refill}};
  return f;
}

std::string item_prompt(const Item& item, const std::vector<Item>& shots) {
  return is_math(item) ? math_prompt(item) : choice_prompt(item, shots);
}

const Fields<ItemResult>& item_result_fields() {
  static const Fields<ItemResult> f = {{"protocol", &ItemResult::protocol},
                                       {"prediction", &ItemResult::prediction},
                                       {"output", &ItemResult::output},
                                       {"correct", &ItemResult::correct},
                                       {"sample", &ItemResult::sample}};
  return f;
}

}  // namespace ltrun::eval
