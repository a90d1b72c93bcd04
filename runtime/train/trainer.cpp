// runtime/train/trainer.cpp: the causal-LM objective on the shared loop.
#include "runtime/train/trainer.h"

#include "runtime/data/corpus.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <fmt/format.h>

#include <cmath>
#include <memory>

#include "runtime/core/error.h"
#include "runtime/train/loss.h"

namespace ltrun::train {

DataSource tensor_source(at::Tensor rows, at::Tensor val) {
  LT_CHECK(rows.defined() && rows.dim() == 2 && rows.size(0) > 0 && rows.size(1) >= 2,
           "training data: expected int64 token rows [N, seq_len + 1], got {} dims", rows.dim());
  auto pos = std::make_shared<uint64_t>(0);
  rows = rows.to(at::kLong);
  DataSource d;
  d.next = [rows, pos](int64_t b) {
    const int64_t n = rows.size(0);
    at::Tensor idx = at::arange(int64_t(*pos), int64_t(*pos) + b, at::kLong).remainder(n);
    *pos += uint64_t(b);
    return rows.index_select(0, idx);
  };
  d.cursor = [pos] { return *pos; };
  d.seek = [pos](uint64_t c) { *pos = c; };
  if (val.defined()) {
    at::Tensor v = val.to(at::kLong);
    d.validation = [v] { return std::vector<at::Tensor>{v}; };
  }
  d.describe = fmt::format("tensor [{}, {}]", rows.size(0), rows.size(1));
  return d;
}

DataSource corpus_source(const std::string& dir, int64_t vocab_size, int64_t seq_len, uint64_t seed,
                         bool seed_given, int64_t val_batch, int64_t n_val_batches) {
  data::Corpus c = data::Corpus::open(dir);
  LT_CHECK(c.vocab_size() <= vocab_size, "corpus {} was tokenized with a vocabulary of {}, the model has {}", dir,
           c.vocab_size(), vocab_size);
  auto w = std::make_shared<std::unique_ptr<data::Windows>>(
      std::make_unique<data::Windows>(c, "train", seq_len, seed));
  DataSource data;
  data.next = [w](int64_t b) { return (*w)->next(b); };
  data.cursor = [w] { return (*w)->cursor(); };
  data.seek = [w](uint64_t x) { (*w)->seek(x); };
  data.seed = seed;
  data.seed_given = seed_given;
  data.reseed = [w, c, seq_len](uint64_t s) { *w = std::make_unique<data::Windows>(c, "train", seq_len, s); };
  if (c.tokens("val") > seq_len)
    data.validation = [c, seq_len, val_batch, n_val_batches] {
      return data::validation_batches(c, "val", seq_len, val_batch, n_val_batches);
    };
  data.describe = fmt::format("{} (seq_len {}, {} train windows)", dir, seq_len, (*w)->count());
  return data;
}

double eval_loss(const model::Model& m, const std::vector<at::Tensor>& batches) {
  at::NoGradGuard g;
  double sum = 0;
  int64_t n = 0;
  for (const at::Tensor& b : batches) {
    const LossPass lp = causal_lm_loss(m, b.to(m.device()), 0);
    const int64_t t = b.size(0) * (b.size(1) - 1);
    sum += lp.loss.item<double>() * double(t);
    n += t;
  }
  return n ? sum / double(n) : std::nan("");
}

CausalLm::CausalLm(model::Model& m, DataSource& data, const TrainOptions& o)
    : m_(m), data_(data), o_(o) {
  LT_CHECK(o.micro_batch > 0 && o.grad_accum > 0, "train: micro_batch and grad_accum must be > 0");
  LT_CHECK(data.next, "train: no data");
}

void CausalLm::start(const model::Model&,
                     const std::function<void(const std::string&, const std::string&)>& param) {
  if (!data_.describe.empty()) param("data", data_.describe);
  if (data_.seed) param("data_seed", std::to_string(*data_.seed));
}

int64_t CausalLm::begin_step(const StepContext&) { return o_.grad_accum; }

MicroLoss CausalLm::micro_batch(const StepContext& ctx, int64_t) {
  // every rank draws the global micro-batch and keeps its own rows (see StepContext)
  at::Tensor batch = data_.next(o_.micro_batch * ctx.world_size);
  if (ctx.world_size > 1) batch = batch.narrow(0, ctx.rank * o_.micro_batch, o_.micro_batch);
  batch = batch.to(m_.device());
  MicroLoss ml;
  ml.scale = 1.0 / double(o_.grad_accum);
  ml.tokens = batch.size(0) * (batch.size(1) - 1);
  if (o_.activation_checkpointing && !o_.force_full_backward) {
    ml.loss = checkpointed_loss_backward(m_, batch, ctx.from_layer, ml.scale);
    ml.backward_done = true;
  } else {
    ml.loss = causal_lm_loss(m_, batch, ctx.from_layer, o_.force_full_backward).loss;
  }
  ml.value = ml.loss.item<double>();
  return ml;
}

Metrics CausalLm::evaluate(int64_t) {
  if (!data_.validation) return {};
  const std::vector<at::Tensor> vb = data_.validation();
  if (vb.empty()) return {};
  return {{"val_loss", eval_loss(m_, vb)}};
}

ObjectiveState CausalLm::state() const {
  ObjectiveState s;
  s.json["data_cursor"] = data_.cursor ? data_.cursor() : 0;
  if (data_.seed) s.json["data_seed"] = *data_.seed;
  return s;
}

void CausalLm::load_state(const ObjectiveState& s) {
  if (s.json.contains("data_seed") && data_.seed) {
    const uint64_t saved = s.json["data_seed"].get<uint64_t>();
    if (saved != *data_.seed) {
      LT_CHECK(!data_.seed_given,
               "the checkpoint's data order has seed {}, but seed {} was asked for: leave the "
               "seed out to continue the checkpoint's order, or start without resume",
               saved, *data_.seed);
      LT_CHECK(data_.reseed, "the checkpoint's data seed is {}, this data source has {} and "
               "cannot change it", saved, *data_.seed);
      data_.reseed(saved);
      data_.seed = saved;
    }
  }
  if (data_.seek) data_.seek(s.json.value("data_cursor", uint64_t(0)));
}

TrainResult train_causal_lm(model::Model& m, DataSource& data, const TrainOptions& o) {
  CausalLm obj(m, data, o);
  TrainResult r;
  static_cast<LoopResult&>(r) = run_loop(m, obj, o);
  for (const auto& [step, ms] : r.evals)
    for (const auto& [k, v] : ms)
      if (k == "val_loss") {
        r.val_losses.emplace_back(step, v);
        r.val_loss = v;
      }
  if (r.val_loss >= 0 && o.sink.param) o.sink.param("final_val_loss", fmt::format("{}", r.val_loss));
  return r;
}

const Fields<TrainOptions>& train_option_fields() {
  static const Fields<TrainOptions> f = {{"steps", &TrainOptions::steps},
                                         {"micro_batch", &TrainOptions::micro_batch},
                                         {"grad_accum", &TrainOptions::grad_accum},
                                         {"shard_optimizer", &TrainOptions::shard_optimizer},
                                         {"overlap_all_reduce", &TrainOptions::overlap_all_reduce},
                                         {"bucket_bytes", &TrainOptions::bucket_bytes, 1},
                                         {"force_full_backward", &TrainOptions::force_full_backward},
                                         {"activation_checkpointing", &TrainOptions::activation_checkpointing}};
  return f;
}

}  // namespace ltrun::train
