// runtime/rl/grpo.cpp: the GRPO objective: rollouts, rewards, advantages, old and reference
// log-probs, and the clipped policy loss per micro-batch.
#include "runtime/rl/grpo.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>
#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "runtime/core/error.h"
#include "runtime/dist/dist.h"
#include "runtime/model/generate.h"

namespace ltrun::rl {

namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// rows idx of a batch, its response columns cut to the longest response among them
SequenceBatch pick_rows(const SequenceBatch& s, const at::Tensor& resp_mask, const at::Tensor& idx,
                     int64_t* resp_len) {
  const at::Tensor rm = resp_mask.index_select(0, idx);
  const int64_t R = std::max<int64_t>(1, rm.sum(1).max().item<int64_t>());
  *resp_len = R;
  SequenceBatch b;
  b.ids = s.ids.index_select(0, idx).narrow(1, 0, s.prompt_len + R);
  b.attention_mask = s.attention_mask.index_select(0, idx).narrow(1, 0, s.prompt_len + R);
  b.prompt_len = s.prompt_len;
  b.resp_len = R;
  return b;
}

at::Tensor rows(const at::Tensor& t, const at::Tensor& idx, int64_t R) {
  return t.index_select(0, idx).narrow(1, 0, R);
}

}  // namespace

struct GrpoObjective::Batch {
  int64_t number = -1;
  SequenceBatch seq;
  at::Tensor resp_mask, adv, old_lp, ref_lp;  // [N, R], [N], [N, R] or undefined, idem
  // ref_lp is filled by the update's own policy passes (micro_batch): one optimizer step
  // uses these rollouts, so no old-log-prob pass runs whose hidden state the shared-prefix
  // reference could start from, and the update's pass gives it instead
  bool ref_in_update = false;
  std::string ref_entry;  // GrpoObjective::reference_entry()
};

int64_t grpo_steps_per_rollout(const GrpoOptions& o) { return o.epochs * o.mini_batches; }

double heldout_accuracy(const model::Model& m, const std::vector<std::vector<int64_t>>& prompts,
                        const std::vector<PromptItem>& items, int64_t max_response,
                        const std::function<std::string(const std::vector<int64_t>&)>& decode,
                        int64_t batch, std::vector<bool>* correct) {
  LT_CHECK(prompts.size() == items.size() && !items.empty(),
           "rl.heldout_accuracy: {} prompts for {} items", prompts.size(), items.size());
  LT_CHECK(decode, "rl.heldout_accuracy: needs a tokenizer to read the answers");
  model::GenerateOptions go;
  go.max_new_tokens = int(max_response);
  const size_t per = batch > 0 ? size_t(batch) : prompts.size();
  int64_t n_correct = 0;
  if (correct) correct->assign(items.size(), false);
  for (size_t s = 0; s < prompts.size(); s += per) {
    const std::vector<std::vector<int64_t>> part(prompts.begin() + long(s),
                                                 prompts.begin() + long(std::min(prompts.size(), s + per)));
    const auto gens = model::generate(m, part, go);
    for (size_t i = 0; i < gens.size(); ++i) {
      const bool ok = math_reward(decode(gens[i].tokens), items[s + i].answer) > 0;
      n_correct += ok ? 1 : 0;
      if (correct) (*correct)[s + i] = ok;
    }
  }
  return double(n_correct) / double(items.size());
}

GrpoObjective::GrpoObjective(model::Model& m, std::vector<PromptItem> items,
                             std::vector<std::vector<int64_t>> prompt_ids, GrpoOptions o)
    : m_(m), items_(std::move(items)), prompt_ids_(std::move(prompt_ids)), o_(std::move(o)) {
  LT_CHECK(o_.prompts >= 1 && o_.epochs >= 1 && o_.mini_batches >= 1 && o_.micro_batch >= 1,
           "rl.grpo: prompts, epochs, mini_batches and micro_batch must be >= 1");
  if (!o_.produce) {
    LT_CHECK(!items_.empty() && items_.size() == prompt_ids_.size(),
             "rl.grpo: {} prompts for {} items", prompt_ids_.size(), items_.size());
    LT_CHECK(!o_.rewards.empty(), "rl.grpo: no reward");
    const int64_t N = o_.prompts * o_.rollout.group_size;
    LT_CHECK(N % o_.mini_batches == 0, "rl.grpo: {} rollouts ({} prompts x {}) do not split into {} "
             "mini-batches", N, o_.prompts, o_.rollout.group_size, o_.mini_batches);
    LT_CHECK(o_.rollout.decode, "rl.grpo: the rewards read text: the model needs a tokenizer");
  }
  p_ = preset(o_.algo);
  if (o_.norm) p_.norm = *o_.norm;
  if (o_.agg) p_.agg = *o_.agg;
  if (o_.kl) p_.kl = *o_.kl;
  LT_CHECK(p_.norm == AdvNorm::None || o_.rollout.group_size >= 2,
           "rl.grpo: std-normalised advantages need group_size >= 2");
  lo_.clip_low = o_.clip_low;
  lo_.clip_high = o_.clip_high;
  lo_.kl = p_.kl;
  lo_.agg = p_.agg;
  lo_.max_len = o_.rollout.max_response;
  // the reference is the policy as it is now, before any step (or a resume) changes it
  if (lo_.kl > 0)
    ref_ = std::make_unique<Reference>(o_.copy_reference ? Reference::copy(m_)
                                                         : Reference::shared_prefix(m_));
}

void GrpoObjective::start(const model::Model&,
                          const std::function<void(const std::string&, const std::string&)>& param) {
  param("algo", o_.algo);
  param("adv_norm", p_.norm == AdvNorm::Std ? "std" : "none");
  param("loss_agg", agg_name(p_.agg));
  param("kl_coef", fmt::format("{}", p_.kl));
  param("group_size", std::to_string(o_.rollout.group_size));
  param("prompts_per_rollout", std::to_string(o_.prompts));
  param("ppo_epochs", std::to_string(o_.epochs));
  param("mini_batches", std::to_string(o_.mini_batches));
  if (ref_) {
    param("reference", ref_->kind() == Reference::Kind::Copy ? "copy" : "shared_prefix");
    param("reference_bytes", std::to_string(ref_->bytes()));
    param("reference_from_layer", std::to_string(ref_->from_layer()));
  }
}

std::vector<int64_t> GrpoObjective::prompt_order(int64_t pass) const {
  at::Generator g = at::detail::createCPUGenerator(o_.rollout.seed * 7919 + uint64_t(pass) + 1);
  const at::Tensor p = at::randperm(int64_t(items_.size()), g, at::kLong);
  return std::vector<int64_t>(p.data_ptr<int64_t>(), p.data_ptr<int64_t>() + p.numel());
}

std::shared_ptr<GrpoObjective::Batch> GrpoObjective::produced_batch(int64_t number) {
  ProducedBatch pb = o_.produce(number);
  const size_t N = pb.prompts.size();
  LT_CHECK(pb.responses.size() == N && pb.advantages.size() == N,
           "rl.grpo: produce(batch {}): {} prompts, {} responses and {} advantages (one each per row)", number + 1,
           N, pb.responses.size(), pb.advantages.size());
  LT_CHECK(int64_t(N) >= o_.mini_batches, "rl.grpo: produce(batch {}): {} rows for {} mini-batches",
           number + 1, N, o_.mini_batches);
  for (size_t i = 0; i < N; ++i)
    LT_CHECK(std::isfinite(pb.advantages[i]), "rl.grpo: produce(batch {}): row {}: advantage {} is not finite",
             number + 1, i + 1, pb.advantages[i]);
  auto b = std::make_shared<Batch>();
  b->number = number;
  b->seq = pack_sequences(pb.prompts, pb.responses, model::pad_token(m_.config()), &b->resp_mask);
  b->adv = at::tensor(pb.advantages, at::kDouble).to(at::kFloat);
  int64_t tokens = 0;
  for (const auto& r : pb.responses) tokens += int64_t(r.size());
  step_metrics_ = std::move(pb.metrics);
  step_metrics_.emplace_back("rows", double(N));
  step_metrics_.emplace_back("response_len", double(tokens) / double(N));
  return b;
}

void GrpoObjective::old_and_reference(const train::StepContext& ctx, Batch& b_, double* old_s, double* ref_s) {
  Batch* b = &b_;
  const int64_t N = b->seq.ids.size(0), R = b->seq.resp_len;
  const bool need_old = grpo_steps_per_rollout(o_) > 1;
  // a shared-prefix reference that starts above block 0 resumes from the policy's own
  // hidden state at its block: taken from the old-log-prob pass when there is one, else
  // from the update's pass (saving a pass over blocks 0 .. from_layer - 1 of every row)
  b->ref_in_update = ref_ && !need_old && ref_->kind() == Reference::Kind::SharedPrefix &&
                     ref_->from_layer() > 0 && ref_->from_layer() == ctx.from_layer;
  if (b->ref_in_update) b->ref_lp = at::zeros({N, R}, at::kFloat);
  if (ref_) b->ref_entry = b->ref_in_update ? "update" : "own";
  if (!need_old && !(ref_ && !b->ref_in_update)) return;
  at::NoGradGuard g;
  if (need_old) b->old_lp = at::zeros({N, R}, at::kFloat);
  if (ref_) b->ref_lp = at::zeros({N, R}, at::kFloat);
  for (int64_t s = 0; s < N; s += o_.micro_batch) {
    const at::Tensor idx = at::arange(s, std::min(N, s + o_.micro_batch), at::kLong);
    int64_t Rs = 0;
    const SequenceBatch sb = pick_rows(b->seq, b->resp_mask, idx, &Rs);
    at::Tensor entry;
    if (need_old) {
      auto t = std::chrono::steady_clock::now();
      const PolicyPass pp = policy_logprobs(m_, sb, ctx.from_layer, o_.rollout.temperature, o_.chunk);
      b->old_lp.narrow(0, s, idx.size(0)).narrow(1, 0, Rs).copy_(pp.logp.to(at::kCPU, at::kFloat));
      if (ref_ && ref_->from_layer() == ctx.from_layer && pp.entry.defined()) {
        entry = pp.entry;
        b->ref_entry = "old_logprobs";
      }
      *old_s += since(t);
    }
    if (ref_ && !b->ref_in_update) {
      auto t = std::chrono::steady_clock::now();
      const at::Tensor rl = ref_->logprobs(m_, sb, o_.rollout.temperature, o_.chunk, entry);
      b->ref_lp.narrow(0, s, idx.size(0)).narrow(1, 0, Rs).copy_(rl.to(at::kCPU, at::kFloat));
      *ref_s += since(t);
    }
  }
}

void GrpoObjective::make_rollouts(const train::StepContext& ctx, int64_t number) {
  if (o_.produce) {
    LT_CHECK(ctx.world_size == 1, "rl.grpo: produced batches (produce) run in one process, not {} ranks",
             ctx.world_size);
    auto b = produced_batch(number);
    double old_s = 0, ref_s = 0;
    old_and_reference(ctx, *b, &old_s, &ref_s);
    cur_ = b;
    if (old_s > 0) step_metrics_.emplace_back("time/old_logprobs_s", old_s);
    if (ref_s > 0) step_metrics_.emplace_back("time/reference_s", ref_s);
    return;
  }
  const int64_t n = int64_t(items_.size()), G = o_.rollout.group_size, W = ctx.world_size;
  // several ranks: rank r samples prompts [r P/W, (r+1) P/W) of the batch (whole groups, so
  // advantages are exact locally); its rows draw from the streams those rows have in one
  // process (the same samples however rollout.batch splits them)
  LT_CHECK(o_.prompts % W == 0, "rl.grpo: {} prompts per rollout do not split over {} ranks",
           o_.prompts, W);
  const int64_t P = o_.prompts / W, first = number * o_.prompts + ctx.rank * P;
  std::vector<PromptItem> sel;
  std::vector<std::vector<int64_t>> prompts;
  int64_t pass = -1;
  std::vector<int64_t> order;
  for (int64_t j = first; j < first + P; ++j) {
    if (j / n != pass) {
      pass = j / n;
      order = prompt_order(pass);
    }
    const int64_t k = order[size_t(j % n)];
    sel.push_back(items_[size_t(k)]);
    prompts.push_back(prompt_ids_[size_t(k)]);
  }
  RolloutOptions ro = o_.rollout;
  ro.seed = o_.rollout.seed + uint64_t(number) * 1000003ULL;
  ro.stream_offset = ctx.rank * P * G;  // the rows before this rank's
  auto t = std::chrono::steady_clock::now();
  const Rollouts r = rollout(m_, prompts, ro);
  const double rollout_s = since(t);
  const Scores sc = score(sel, r.prompt_index, r.texts, o_.rewards);
  const std::vector<double> adv = advantages(sc.total, G, p_.norm);

  auto b = std::make_shared<Batch>();
  b->number = number;
  b->seq = r.seq;
  b->resp_mask = r.response_mask;
  b->adv = at::tensor(adv, at::kDouble).to(at::kFloat);
  double old_s = 0, ref_s = 0;
  const bool need_old = grpo_steps_per_rollout(o_) > 1;
  old_and_reference(ctx, *b, &old_s, &ref_s);
  cur_ = b;

  // the rollout metrics, logged at the step that made them, over every rank's rollouts
  std::vector<double> total = sc.total, lens;
  std::vector<std::vector<double>> by_reward = sc.by_reward;
  for (const auto& resp : r.responses) lens.push_back(double(resp.size()));
  int64_t all_tokens = r.tokens;
  if (ctx.group && W > 1) {
    auto gather = [&](const std::vector<double>& v) {
      std::vector<double> out;
      for (const at::Tensor& t : ctx.group->all_gather(at::tensor(v, at::kDouble)))
        out.insert(out.end(), t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
      return out;
    };
    total = gather(total);
    lens = gather(lens);
    for (auto& b : by_reward) b = gather(b);
    at::Tensor tk = at::tensor({double(r.tokens)}, at::kDouble);
    ctx.group->all_reduce(tk, dist::ReduceOp::sum);
    all_tokens = int64_t(tk.item<double>());
  }
  const int64_t P_all = o_.prompts;
  double mean = 0, sq = 0, len = 0;
  const int64_t N_all = P_all * G;
  for (double v : total) mean += v;
  mean /= double(N_all);
  for (double v : total) sq += (v - mean) * (v - mean);
  for (double l : lens) len += l;
  int64_t flat = 0;  // groups whose rewards are all equal (no signal)
  for (int64_t g = 0; g < P_all; ++g) {
    bool same = true;
    for (int64_t i = 1; i < G; ++i) same &= total[size_t(g * G + i)] == total[size_t(g * G)];
    flat += same ? 1 : 0;
  }
  step_metrics_.emplace_back("reward_mean", mean);
  step_metrics_.emplace_back("reward_std", N_all > 1 ? std::sqrt(sq / double(N_all - 1)) : 0.0);
  for (size_t k = 0; k < o_.rewards.size(); ++k) {
    double s = 0;
    for (double v : by_reward[k]) s += v;
    step_metrics_.emplace_back("reward/" + o_.rewards[k].name, s / double(N_all));
    if (o_.rewards[k].name == o_.accuracy) step_metrics_.emplace_back("accuracy", s / double(N_all));
  }
  step_metrics_.emplace_back("response_len", len / double(N_all));
  step_metrics_.emplace_back("flat_group_frac", double(flat) / double(P_all));
  step_metrics_.emplace_back("rollout_tokens_per_s", rollout_s > 0 ? double(all_tokens) / rollout_s : 0);
  step_metrics_.emplace_back("time/rollout_s", rollout_s);
  if (need_old) step_metrics_.emplace_back("time/old_logprobs_s", old_s);
  if (ref_ && !b->ref_in_update) step_metrics_.emplace_back("time/reference_s", ref_s);
}

int64_t GrpoObjective::begin_step(const train::StepContext& ctx) {
  const int64_t spr = grpo_steps_per_rollout(o_);
  const int64_t number = ctx.step / spr, pos = ctx.step % spr;
  step_metrics_.clear();
  ref_update_s_ = 0;
  world_ = ctx.world_size;
  // rollouts of another world size (a resume) are not this rank's share: sampled again
  const int64_t share = o_.prompts / std::max(1, ctx.world_size) * o_.rollout.group_size;
  if (!cur_ || cur_->number != number || (!o_.produce && cur_->seq.ids.size(0) != share)) make_rollouts(ctx, number);
  // several ranks: this rank holds rows [rank N/W, (rank+1) N/W) of the batch of N
  const int64_t W = ctx.world_size, local = cur_->seq.ids.size(0), N = local * W;
  const int64_t epoch = pos / o_.mini_batches, mb = pos % o_.mini_batches;
  // mini-batch mb: rows [mb N / M, (mb + 1) N / M) of the epoch's order (N / M each when M
  // divides N, as sampled batches always do; produced ones need not)
  const int64_t lo = mb * N / o_.mini_batches, size = (mb + 1) * N / o_.mini_batches - lo;
  // a seeded row order per epoch (over the whole batch, the same on every rank)
  at::Generator g = at::detail::createCPUGenerator(o_.rollout.seed * 104729 + uint64_t(number) * 131 +
                                                   uint64_t(epoch) + 7);
  const at::Tensor perm = at::randperm(N, g, at::kLong).narrow(0, lo, size);
  rows_.clear();  // the mini-batch's rows this rank holds, as its own row numbers
  for (int64_t k = 0; k < size; ++k) {
    const int64_t row = perm[k].item<int64_t>() - ctx.rank * local;
    if (row >= 0 && row < local) rows_.push_back(row);
  }
  const at::Tensor idx = at::tensor(rows_, at::kLong);
  denom_ = lo_.agg == Agg::TokenMean
               ? (rows_.empty() ? 0.0 : cur_->resp_mask.index_select(0, idx).sum().item<double>())
               : double(size);
  if (ctx.group && W > 1) {
    // the mini-batch's divisor spans the ranks; the loop averages the ranks' gradients (divides
    // by W), so each rank divides its share by divisor / W
    if (lo_.agg == Agg::TokenMean) {
      at::Tensor d = at::tensor({denom_}, at::kDouble);
      ctx.group->all_reduce(d, dist::ReduceOp::sum);
      denom_ = d.item<double>();
    }
    denom_ /= double(W);
  }
  sum_clip_ = sum_akl_ = sum_ent_ = sum_pg_ = sum_kl_ = sum_tok_ = 0;
  return std::max<int64_t>(1, (int64_t(rows_.size()) + o_.micro_batch - 1) / o_.micro_batch);
}

train::MicroLoss GrpoObjective::micro_batch(const train::StepContext& ctx, int64_t i) {
  if (rows_.empty()) {  // a rank without rows in this mini-batch: no gradient, no loss
    train::MicroLoss ml;
    ml.loss = at::zeros({});
    ml.backward_done = true;
    return ml;
  }
  const int64_t s = i * o_.micro_batch, e = std::min<int64_t>(int64_t(rows_.size()), s + o_.micro_batch);
  const at::Tensor idx = at::tensor(std::vector<int64_t>(rows_.begin() + s, rows_.begin() + e), at::kLong);
  int64_t R = 0;
  const SequenceBatch sb = pick_rows(cur_->seq, cur_->resp_mask, idx, &R);
  const at::Tensor rm = rows(cur_->resp_mask, idx, R);
  at::Tensor ref, entry;
  if (cur_->ref_in_update) {
    // before the policy's pass: the reference swaps its saved values into the trainable
    // parameters for its pass, which must not happen between a forward and its backward
    entry = prefix_entry(m_, sb, ctx.from_layer);  // the policy's pass below starts from it too
    const auto t = std::chrono::steady_clock::now();
    ref = ref_->logprobs(m_, sb, o_.rollout.temperature, o_.chunk, entry).to(at::kCPU, at::kFloat);
    cur_->ref_lp.narrow(1, 0, R).index_copy_(0, idx, ref);  // kept with the rollouts (checkpoints)
    ref_update_s_ += since(t);
  } else if (cur_->ref_lp.defined()) {
    ref = rows(cur_->ref_lp, idx, R);
  }
  const PolicyPass pp = policy_logprobs(m_, sb, ctx.from_layer, o_.rollout.temperature, o_.chunk, true, entry);
  const at::Tensor old = cur_->old_lp.defined() ? rows(cur_->old_lp, idx, R) : pp.logp.detach();
  LossOptions lo = lo_;
  lo.denom = denom_;
  const PolicyLoss pl = policy_loss(pp.logp, old.to(pp.logp.device()), ref.defined() ? ref.to(pp.logp.device()) : ref,
                                    cur_->adv.index_select(0, idx), rm.to(pp.logp.device()), lo);
  const double n = rm.sum().item<double>();
  sum_tok_ += n;
  sum_clip_ += pl.clip_frac * n;
  sum_akl_ += pl.approx_kl * n;
  sum_ent_ += (pp.entropy.to(at::kCPU) * rm).sum().item<double>();
  sum_pg_ += pl.pg.item<double>();
  sum_kl_ += pl.kl.item<double>();
  train::MicroLoss ml;
  ml.loss = pl.loss;
  ml.value = pl.loss.item<double>();
  ml.scale = 1.0;  // the mini-batch divisor is in the loss already
  ml.tokens = sb.attention_mask.sum().item<int64_t>();
  return ml;
}

train::Metrics GrpoObjective::end_step(const train::StepContext& ctx) {
  if (ctx.group && ctx.world_size > 1) {  // every rank's share (pg and kl are W x their share)
    at::Tensor v = at::tensor({sum_clip_, sum_akl_, sum_ent_, sum_pg_, sum_kl_, sum_tok_}, at::kDouble);
    ctx.group->all_reduce(v, dist::ReduceOp::sum);
    const double w = double(ctx.world_size);
    sum_clip_ = v[0].item<double>(), sum_akl_ = v[1].item<double>(), sum_ent_ = v[2].item<double>();
    sum_pg_ = v[3].item<double>() / w, sum_kl_ = v[4].item<double>() / w, sum_tok_ = v[5].item<double>();
  }
  train::Metrics out = step_metrics_;
  if (cur_ && cur_->ref_in_update) out.emplace_back("time/reference_s", ref_update_s_);
  const double n = std::max(sum_tok_, 1.0);
  out.emplace_back("pg_loss", sum_pg_);
  out.emplace_back("kl", sum_kl_);
  out.emplace_back("clip_frac", sum_clip_ / n);
  out.emplace_back("approx_kl", sum_akl_ / n);
  out.emplace_back("entropy", sum_ent_ / n);
  return out;
}

train::Metrics GrpoObjective::evaluate(int64_t) {
  if (o_.eval_prompts.empty()) return {};
  const double acc = heldout_accuracy(m_, o_.eval_prompts, o_.eval_items,
                                      o_.eval_max_response > 0 ? o_.eval_max_response : o_.rollout.max_response,
                                      o_.rollout.decode);
  return {{"heldout_accuracy", acc}};
}

at::Tensor GrpoObjective::rollout_advantages() const { return cur_ ? cur_->adv : at::Tensor(); }

std::string GrpoObjective::reference_entry() const { return cur_ ? cur_->ref_entry : ""; }

train::ObjectiveState GrpoObjective::state() const {
  train::ObjectiveState s;
  // several ranks: each holds its share of the rollouts and rank 0 alone writes checkpoints,
  // so none are carried; a resume in the middle of a batch samples it again (not exact)
  s.json["batch"] = cur_ && world_ == 1 ? cur_->number : -1;
  if (!cur_ || world_ > 1) return s;
  s.json["prompt_len"] = cur_->seq.prompt_len;
  s.json["resp_len"] = cur_->seq.resp_len;
  s.tensors = {{"rollout.ids", cur_->seq.ids}, {"rollout.attention_mask", cur_->seq.attention_mask},
               {"rollout.response_mask", cur_->resp_mask}, {"rollout.adv", cur_->adv}};
  if (cur_->old_lp.defined()) s.tensors.emplace_back("rollout.old_logp", cur_->old_lp);
  if (cur_->ref_lp.defined()) s.tensors.emplace_back("rollout.ref_logp", cur_->ref_lp);
  return s;
}

void GrpoObjective::load_state(const train::ObjectiveState& s) {
  const int64_t number = s.json.value("batch", int64_t(-1));
  if (number < 0) {
    cur_.reset();
    return;
  }
  auto b = std::make_shared<Batch>();
  b->number = number;
  auto get = [&](const std::string& name, bool required) {
    for (const auto& [k, t] : s.tensors)
      if (k == name) return t;
    LT_CHECK(!required, "rl.grpo: resume: the checkpoint lacks {}", name);
    return at::Tensor();
  };
  b->seq.ids = get("rollout.ids", true);
  b->seq.attention_mask = get("rollout.attention_mask", true);
  b->seq.prompt_len = s.json.at("prompt_len").get<int64_t>();
  b->seq.resp_len = s.json.at("resp_len").get<int64_t>();
  b->resp_mask = get("rollout.response_mask", true);
  b->adv = get("rollout.adv", true);
  b->old_lp = get("rollout.old_logp", false);
  b->ref_lp = get("rollout.ref_logp", false);
  LT_CHECK(grpo_steps_per_rollout(o_) == 1 || b->old_lp.defined(),
           "rl.grpo: resume: the checkpoint's rollouts have no old log-probs, which these options need");
  cur_ = b;
}

const Fields<GrpoOptions>& grpo_option_fields() {
  static const Fields<GrpoOptions> f = {{"algo", &GrpoOptions::algo},
                                        {"prompts", &GrpoOptions::prompts, 1},
                                        {"epochs", &GrpoOptions::epochs, 1},
                                        {"mini_batches", &GrpoOptions::mini_batches, 1},
                                        {"micro_batch", &GrpoOptions::micro_batch, 1},
                                        {"chunk", &GrpoOptions::chunk, 1},
                                        {"copy_reference", &GrpoOptions::copy_reference},
                                        {"accuracy", &GrpoOptions::accuracy},
                                        {"eval_max_response", &GrpoOptions::eval_max_response, 0}};
  return f;
}

}  // namespace ltrun::rl
