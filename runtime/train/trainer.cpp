// runtime/train/trainer.cpp: the causal-LM training loop, its checkpoints and its logging.
#include "runtime/train/trainer.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <torch/version.h>  // TORCH_VERSION_MAJOR/MINOR; on the include path of both LibTorch builds
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ATen/core/grad_mode.h>

#include "runtime/core/error.h"
#include "runtime/core/interrupt.h"
#include "runtime/io/atomic_file.h"
#include "runtime/io/checkpoint.h"
#include "runtime/io/safetensors.h"
#include "runtime/store/session.h"
#include "runtime/train/freeze.h"
#include "runtime/train/loss.h"

namespace ltrun::train {

namespace fs = std::filesystem;

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

namespace {

// bf16 autocast for CUDA only, for the lifetime of the guard (CPU runs fp32).
struct AutocastGuard {
  bool on = false;
  explicit AutocastGuard(bool enable) : on(enable) {
    if (!on) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
    at::autocast::set_autocast_enabled(at::kCUDA, true);
#else
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(true);
#endif
  }
  ~AutocastGuard() {
    if (!on) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(at::kCUDA, false);
#else
    at::autocast::set_enabled(false);
#endif
    at::autocast::clear_cache();
  }
};

std::string step_dir_name(int64_t step) { return fmt::format("step-{:08d}", step); }

void log_metric(const TrainOptions& o, const std::string& name, double v, int64_t step) {
  if (!o.log) return;
  if (auto* s = store::Session::active()) s->store().metric(s->current(), name, v, step);
}

void log_param(const TrainOptions& o, const std::string& key, const std::string& v) {
  if (!o.log) return;
  if (auto* s = store::Session::active()) s->store().param(s->current(), key, v);
}

std::string eta_text(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const int64_t t = int64_t(s + 0.5);
  return t >= 3600 ? fmt::format("{}h{:02d}m", t / 3600, (t / 60) % 60)
                   : fmt::format("{}m{:02d}s", t / 60, t % 60);
}

void save_checkpoint(const model::Model& m, const AdamW& opt, const DataSource& data,
                     const TrainOptions& o, int64_t step, int64_t tokens) {
  const fs::path root(o.checkpoint_dir);
  fs::create_directories(root);
  const fs::path final_dir = root / step_dir_name(step);
  const fs::path tmp = root / (step_dir_name(step) + ".tmp");
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  m.save(tmp.string());
  for (const std::string& f : o.checkpoint_files)
    fs::copy_file(f, tmp / fs::path(f).filename(), fs::copy_options::overwrite_existing);
  auto state = opt.state();
  state.emplace_back("rng.cpu", at::detail::getDefaultCPUGenerator().get_state());
  io::save_safetensors((tmp / "optimizer.safetensors").string(), state);
  nlohmann::json j;
  j["step"] = step;
  j["optimizer_steps"] = opt.steps();
  j["data_cursor"] = data.cursor ? data.cursor() : 0;
  j["tokens"] = tokens;
  j["total_steps"] = o.steps;
  j["lr"] = o.lr;
  io::write_file_atomic((tmp / "trainer_state.json").string(), j.dump(2) + "\n");
  fs::remove_all(final_dir);
  fs::rename(tmp, final_dir);
  io::write_file_atomic((root / "latest").string(), step_dir_name(step) + "\n");
  // keep the newest keep_checkpoints complete ones
  std::vector<fs::path> old;
  for (const auto& e : fs::directory_iterator(root)) {
    const std::string n = e.path().filename().string();
    if (e.is_directory() && n.rfind("step-", 0) == 0 && n.find(".tmp") == std::string::npos)
      old.push_back(e.path());
  }
  std::sort(old.begin(), old.end());
  const int64_t keep = std::max<int64_t>(o.keep_checkpoints, 1);
  for (int64_t i = 0; i + keep < int64_t(old.size()); ++i) fs::remove_all(old[size_t(i)]);
}

struct Resumed {
  int64_t step = 0, tokens = 0;
};

Resumed load_checkpoint(model::Model& m, AdamW& opt, DataSource& data, const std::string& dir) {
  const std::string cdir = latest_checkpoint(dir);
  Resumed r;
  if (cdir.empty()) return r;
  std::ifstream f(fs::path(cdir) / "trainer_state.json");
  LT_CHECK(f.good(), "resume: cannot read {}/trainer_state.json", cdir);
  nlohmann::json j;
  try {
    f >> j;
  } catch (const std::exception& e) {
    fail("resume: {}/trainer_state.json: {}", cdir, e.what());
  }
  const io::Checkpoint ck = io::Checkpoint::open(cdir);
  {
    at::NoGradGuard g;
    for (const model::Param& p : m.parameters()) {
      LT_CHECK(ck.has(p.name), "resume: {} lacks {}", cdir, p.name);
      at::Tensor src = ck.tensor(p.name);
      LT_CHECK(src.sizes() == p.tensor.sizes(), "resume: {} in {} has another shape", p.name, cdir);
      p.tensor.copy_(src);
    }
  }
  const io::SafetensorsFile of = io::SafetensorsFile::open((fs::path(cdir) / "optimizer.safetensors").string());
  std::vector<std::pair<std::string, at::Tensor>> st;
  for (const io::TensorInfo& t : of.tensors())
    if (t.name != "rng.cpu") st.emplace_back(t.name, of.tensor(t.name));
  opt.load_state(st, j.at("optimizer_steps").get<int64_t>());
  if (of.has("rng.cpu")) {
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    gen.set_state(of.tensor("rng.cpu").clone());
  }
  if (data.seek) data.seek(j.at("data_cursor").get<uint64_t>());
  r.step = j.at("step").get<int64_t>();
  r.tokens = j.value("tokens", int64_t(0));
  return r;
}

}  // namespace

std::string latest_checkpoint(const std::string& dir) {
  const fs::path p = fs::path(dir) / "latest";
  if (dir.empty() || !fs::exists(p)) return "";
  std::ifstream f(p);
  std::string name;
  std::getline(f, name);
  LT_CHECK(!name.empty() && fs::is_directory(fs::path(dir) / name),
           "resume: {} names {}, which is not a checkpoint folder", p.string(), name);
  return (fs::path(dir) / name).string();
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

TrainResult train_causal_lm(model::Model& m, DataSource& data, const TrainOptions& o) {
  LT_CHECK(o.steps > 0, "train: steps must be > 0, got {}", o.steps);
  LT_CHECK(o.micro_batch > 0 && o.grad_accum > 0, "train: micro_batch and grad_accum must be > 0");
  LT_CHECK(data.next, "train: no data");
  LT_CHECK(o.checkpoint_dir.empty() || o.checkpoint_every >= 0, "train: checkpoint_every < 0");
  LT_CHECK(!o.resume || !o.checkpoint_dir.empty(), "train: resume needs checkpoint_dir");
  TrainResult r;
  const FreezeReport fr = count_trainable(m);
  LT_CHECK(fr.trainable > 0,
           "train: every parameter is frozen: nothing to train (a loaded model is frozen; pick a "
           "plan with m:freeze(spec), m:train_only(spec) or m:train_only(\"all\"))");
  r.trainable_params = fr.trainable;
  r.total_params = fr.total;
  r.lowest_trainable_layer = lowest_trainable_layer(m);
  const int skip_to = o.force_full_backward ? 0 : std::max(r.lowest_trainable_layer, 0);

  AdamW opt(param_groups(m, o.weight_decay, o.lr_mult), {o.beta1, o.beta2, o.eps});
  std::vector<model::Param> trainable;
  for (const ParamGroup& g : opt.groups())
    trainable.insert(trainable.end(), g.params.begin(), g.params.end());
  Schedule sched{o.lr, o.warmup, o.min_lr_ratio, o.steps, o.decay};

  log_param(o, "trainable_params", std::to_string(r.trainable_params));
  log_param(o, "total_params", std::to_string(r.total_params));
  log_param(o, "lowest_trainable_layer", std::to_string(r.lowest_trainable_layer));
  if (!data.describe.empty()) log_param(o, "data", data.describe);

  if (o.resume) {
    const Resumed res = load_checkpoint(m, opt, data, o.checkpoint_dir);
    r.start_step = res.step;
    r.tokens = res.tokens;
  }
  const int64_t tokens_before = r.tokens;
  const bool cuda = m.device().is_cuda();
  const bool tty = o.progress && isatty(2);
  const auto t0 = std::chrono::steady_clock::now();
  auto since = [](std::chrono::steady_clock::time_point a) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
  };
  auto validate = [&](int64_t step) {
    if (!data.validation) return;
    const std::vector<at::Tensor> vb = data.validation();
    if (vb.empty()) return;
    const double vl = eval_loss(m, vb);
    r.val_loss = vl;
    r.val_losses.emplace_back(step, vl);
    log_metric(o, "val_loss", vl, step);
  };

  int64_t step = r.start_step;
  for (; step < o.steps; ++step) {
    if (interrupt_pending() && !o.checkpoint_dir.empty() && step > r.start_step) {
      // Ctrl-C between steps: keep the finished steps, then stop as interrupted
      save_checkpoint(m, opt, data, o, step, r.tokens);
      fmt::print(stderr, "\ntrain: interrupted; checkpoint of step {} in {} (resume = true)\n",
                 step, o.checkpoint_dir);
    }
    check_interrupt();
    const auto ts = std::chrono::steady_clock::now();
    const double lr = sched.at(step);
    double loss_sum = 0;
    int64_t tokens = 0;
    for (int64_t a = 0; a < o.grad_accum; ++a) {
      at::Tensor batch = data.next(o.micro_batch).to(m.device());
      AutocastGuard ac(cuda && o.autocast);
      double lv;
      if (o.activation_checkpointing && !o.force_full_backward) {
        lv = checkpointed_loss_backward(m, batch, skip_to, 1.0 / double(o.grad_accum)).item<double>();
      } else {
        LossPass lp = causal_lm_loss(m, batch, skip_to, o.force_full_backward);
        lv = lp.loss.item<double>();
        if (std::isfinite(lv)) (lp.loss / double(o.grad_accum)).backward();
      }
      if (!std::isfinite(lv))
        fail("train: loss is {} at step {} (micro-batch {}); lr {:.3g}: lower the learning rate "
             "or check the data",
             lv, step + 1, a, lr);
      loss_sum += lv;
      tokens += batch.size(0) * (batch.size(1) - 1);
    }
    const double gnorm = clip_grad_norm(trainable, o.clip);
    if (!std::isfinite(gnorm))
      fail("train: gradient norm is {} at step {}; lr {:.3g}", gnorm, step + 1, lr);
    opt.step(lr);
    opt.zero_grad();
    const double loss = loss_sum / double(o.grad_accum);
    const double dt = since(ts);
    r.tokens += tokens;
    StepLog sl{step, loss, lr, gnorm, dt > 0 ? double(tokens) / dt : 0};
    r.log.push_back(sl);
    r.final_loss = loss;
    log_metric(o, "loss", loss, step + 1);
    log_metric(o, "lr", lr, step + 1);
    log_metric(o, "grad_norm", gnorm, step + 1);
    log_metric(o, "tokens_per_s", sl.tokens_per_s, step + 1);
    if (o.on_step) o.on_step(step + 1, loss);
    const bool last = step + 1 == o.steps;
    if (o.eval_every > 0 && (step + 1) % o.eval_every == 0 && !last) validate(step + 1);
    const bool stop = o.stop_after >= 0 && step + 1 >= o.stop_after && !last;
    if (!o.checkpoint_dir.empty() &&
        (last || stop || (o.checkpoint_every > 0 && (step + 1) % o.checkpoint_every == 0)))
      save_checkpoint(m, opt, data, o, step + 1, r.tokens);
    if (tty) {
      const double el = since(t0);
      const int64_t done = step + 1 - r.start_step;
      fmt::print(stderr, "\rstep {}/{}  loss {:.4f}  lr {:.3g}  {:.0f} tok/s  ETA {}   ", step + 1,
                 o.steps, loss, lr, double(r.tokens - tokens_before) / std::max(el, 1e-9),
                 eta_text(el / double(done) * double(o.steps - step - 1)));
      if (last) fmt::print(stderr, "\n");
    }
    if (stop) {
      r.stopped_early = true;
      ++step;
      break;
    }
  }
  if (!r.stopped_early) validate(step);
  r.steps_done = step;
  r.wall_s = since(t0);
  const int64_t run_tokens = r.tokens - tokens_before;
  r.tokens_per_s = r.wall_s > 0 ? double(run_tokens) / r.wall_s : 0;
  log_metric(o, "wall_s", r.wall_s, step);
  if (r.val_loss >= 0) log_param(o, "final_val_loss", fmt::format("{}", r.val_loss));
  return r;
}

}  // namespace ltrun::train
