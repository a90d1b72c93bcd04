// runtime/train/loop.cpp: the shared training loop, its checkpoints and its progress line.
#include "runtime/train/loop.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/grad_mode.h>
#include <fmt/format.h>
#include <torch/version.h>  // TORCH_VERSION_MAJOR/MINOR; on the include path of both LibTorch builds
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "runtime/core/fs.h"
#include "runtime/core/error.h"
#include "runtime/core/interrupt.h"
#include "runtime/dist/dist.h"
#include "runtime/io/atomic_file.h"
#include "runtime/io/checkpoint.h"
#include "runtime/io/safetensors.h"
#include "runtime/train/data_parallel.h"
#include "runtime/train/freeze.h"

namespace ltrun::train {

namespace fs = std::filesystem;

AutocastGuard::AutocastGuard(bool enable) : on(enable) {
  if (!on) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
  at::autocast::set_autocast_enabled(at::kCUDA, true);
#else
  at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
  at::autocast::set_enabled(true);
#endif
}

AutocastGuard::~AutocastGuard() {
  if (!on) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  at::autocast::set_autocast_enabled(at::kCUDA, false);
#else
  at::autocast::set_enabled(false);
#endif
  at::autocast::clear_cache();
}

namespace {
void remove_tree_or_fail(const fs::path& p) {
  const std::string err = ltrun::fs::remove_tree(p.string());
  LT_CHECK(err.empty(), "checkpoint: cannot remove {}", err);
}

std::string step_dir_name(int64_t step) { return fmt::format("step-{:08d}", step); }

std::string eta_text(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const int64_t t = int64_t(s + 0.5);
  return t >= 3600 ? fmt::format("{}h{:02d}m", t / 3600, (t / 60) % 60)
                   : fmt::format("{}m{:02d}s", t / 60, t % 60);
}

at::Tensor cpu_rng_state() { return at::detail::getDefaultCPUGenerator().get_state(); }

// What a checkpoint holds besides the weights and the optimizer.
struct Snapshot {
  ObjectiveState objective;
  at::Tensor rng;
  int64_t tokens = 0;
};

// opt_state: AdamW::state()'s tensors (ZeRO-1: gathered from every rank)
void save_checkpoint(const model::Model& m, std::vector<std::pair<std::string, at::Tensor>> opt_state,
                     int64_t opt_steps, const Objective& obj, const Snapshot& snap,
                     const LoopOptions& o, int64_t step) {
  const fs::path root(o.checkpoint_dir);
  fs::create_directories(root);
  const fs::path final_dir = root / step_dir_name(step);
  const fs::path tmp = root / (step_dir_name(step) + ".tmp");
  remove_tree_or_fail(tmp);
  fs::create_directories(tmp);
  m.save(tmp.string());
  for (const std::string& f : o.checkpoint_files)
    fs::copy_file(f, tmp / fs::path(f).filename(), fs::copy_options::overwrite_existing);
  auto state = std::move(opt_state);
  state.emplace_back("rng.cpu", snap.rng);
  io::save_safetensors((tmp / "optimizer.safetensors").string(), state);
  if (!snap.objective.tensors.empty())
    io::save_safetensors((tmp / "objective.safetensors").string(), snap.objective.tensors);
  nlohmann::json j;
  j["step"] = step;
  j["optimizer_steps"] = opt_steps;
  j["tokens"] = snap.tokens;
  j["total_steps"] = o.steps;
  j["lr"] = o.lr;
  j["objective_name"] = obj.name();
  j["objective"] = snap.objective.json;
  io::write_file_atomic((tmp / "trainer_state.json").string(), j.dump(2) + "\n");
  // last: every file's size and sha256, checked at resume (io::verify_manifest)
  io::write_manifest(tmp.string());
  remove_tree_or_fail(final_dir);
  fs::rename(tmp, final_dir);
  // the metrics up to this step become durable before the checkpoint is the one to resume
  if (o.sink.flush) o.sink.flush();
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
  for (int64_t i = 0; i + keep < int64_t(old.size()); ++i) remove_tree_or_fail(old[size_t(i)]);
}

struct Resumed {
  int64_t step = 0, tokens = 0;
};

Resumed load_checkpoint(model::Model& m, AdamW& opt, Objective& obj, const std::string& dir) {
  const std::string cdir = latest_checkpoint(dir);
  Resumed r;
  // nothing to resume from is an error, never a silent start from step 0 (which would
  // overwrite the folder's purpose and lose the steps the caller believes done)
  if (cdir.empty())
    fail("resume: no checkpoint in {} ({} does not exist); to start afresh, leave resume off",
         dir, (fs::path(dir) / "latest").string());
  // a damaged file is named here, not steps later as NaN logits or a shape error
  try {
    if (!io::verify_manifest(cdir))
      fmt::print(stderr, "resume: note: {} has no {} (written before checkpoints carried one): its files are not "
                 "verified\n", cdir, io::kManifestFile);
  } catch (const Interrupted&) {
    throw;
  } catch (const Error& e) {
    fail("resume: {}", e.what());
  }
  std::ifstream f(fs::path(cdir) / "trainer_state.json");
  LT_CHECK(f.good(), "resume: cannot read {}/trainer_state.json", cdir);
  nlohmann::json j;
  try {
    f >> j;
  } catch (const std::exception& e) {
    fail("resume: {}/trainer_state.json: {}", cdir, e.what());
  }
  const std::string written_by = j.value("objective_name", std::string("causal_lm"));
  LT_CHECK(written_by == obj.name(), "resume: {} was written by a {} run; this run trains {}",
           cdir, written_by, obj.name());
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
  ObjectiveState os;
  if (j.contains("objective")) os.json = j["objective"];
  else if (j.contains("data_cursor")) os.json["data_cursor"] = j["data_cursor"];  // older checkpoints
  const fs::path ot = fs::path(cdir) / "objective.safetensors";
  if (fs::exists(ot)) {
    const io::SafetensorsFile tf = io::SafetensorsFile::open(ot.string());
    for (const io::TensorInfo& t : tf.tensors()) os.tensors.emplace_back(t.name, tf.tensor(t.name).clone());
  }
  try {
    obj.load_state(os);
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    fail("resume from {}: {}", cdir, e.what());
  }
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

LoopResult run_loop(model::Model& m, Objective& obj, const LoopOptions& o) {
  LT_CHECK(o.steps > 0, "train: steps must be > 0, got {}", o.steps);
  LT_CHECK(o.checkpoint_dir.empty() || o.checkpoint_every >= 0, "train: checkpoint_every < 0");
  LT_CHECK(!o.resume || !o.checkpoint_dir.empty(), "train: resume needs checkpoint_dir");
  InterruptChecked checked;  // this loop stops cleanly on Ctrl-C: no watchdog
  LoopResult r;
  const FreezeReport fr = count_trainable(m);
  LT_CHECK(fr.trainable > 0,
           "train: every parameter is frozen: nothing to train (a loaded model is frozen; pick a "
           "plan with m:freeze(spec), m:train_only(spec) or m:train_only(\"all\"))");
  r.trainable_params = fr.trainable;
  r.total_params = fr.total;
  r.lowest_trainable_layer = lowest_trainable_layer(m);

  // groups over every parameter: a plan changed during the run is covered (AdamW skips
  // parameters without a gradient and makes state for one when it first has one)
  AdamW opt(param_groups(m, o.weight_decay, o.lr_mult, /*include_frozen=*/true),
            {o.beta1, o.beta2, o.eps, o.master_weights});
  Schedule sched{o.lr, o.warmup, o.min_lr_ratio, o.steps, o.decay};
  LT_CHECK(o.decay == "cosine" || o.decay == "linear" || o.decay == "constant",
           "train: unknown decay '{}': expected cosine, linear or constant", o.decay);

  dist::Group* group = o.group && o.group->world_size() > 1 ? o.group : nullptr;
  const bool main_rank = !group || group->is_main();
  auto param = [&](const std::string& k, const std::string& v) {
    if (main_rank && o.sink.param) o.sink.param(k, v);
  };
  auto metric = [&](const std::string& k, double v, int64_t step) {
    if (main_rank && o.sink.metric) o.sink.metric(k, v, step);
  };
  param("trainable_params", std::to_string(r.trainable_params));
  param("total_params", std::to_string(r.total_params));
  param("lowest_trainable_layer", std::to_string(r.lowest_trainable_layer));
  if (o.master_weights) param("master_weights", "true");

  if (o.resume) {
    const Resumed res = load_checkpoint(m, opt, obj, o.checkpoint_dir);
    r.start_step = res.step;
    r.tokens = res.tokens;
  }
  if (group) {
    // every rank resumes from the same step (they read the checkpoint rank 0 wrote)
    const auto starts = group->all_gather(at::tensor({r.start_step}, at::kLong));
    for (size_t k = 0; k < starts.size(); ++k)
      LT_CHECK(starts[k].item<int64_t>() == r.start_step,
               "train: rank {} resumes from step {} but rank {} from step {}: the ranks must share "
               "checkpoint_dir ({} on rank {})", k, starts[k].item<int64_t>(), group->rank(),
               r.start_step, o.checkpoint_dir, group->rank());
    // every rank starts from rank 0's weights (a resumed checkpoint or a fresh model alike)
    for (const model::Param& p : m.parameters()) {
      at::Tensor t = p.tensor;
      group->broadcast(t, 0);
    }
    param("world_size", std::to_string(group->world_size()));
    param("dist_backend", group->backend());
  }
  obj.start(m, param);
  // the parameters whose gradients are averaged, in the same order on every rank
  std::vector<at::Tensor> dp_params;
  std::vector<model::Param> all_params;
  if (group)
    for (const ParamGroup& g : opt.groups())
      for (const model::Param& p : g.params) {
        dp_params.push_back(p.tensor);
        all_params.push_back(p);
      }
  std::unique_ptr<ShardedAdamW> zero;
  std::unique_ptr<OverlappedGrads> overlap;
  if (group && o.shard_optimizer) zero = std::make_unique<ShardedAdamW>(*group, opt, all_params);
  if (group && o.overlap_all_reduce)
    overlap = std::make_unique<OverlappedGrads>(*group, dp_params, o.bucket_bytes);
  if (group) {
    param("shard_optimizer", zero ? "true" : "false");
    param("overlap_all_reduce", overlap ? "true" : "false");
  }
  // a checkpoint's optimizer state: with ZeRO-1 a collective (every rank calls it), and only
  // rank 0 writes it
  auto save = [&](const Snapshot& snap, int64_t at_step) {
    auto st = zero ? zero->full_state() : std::vector<std::pair<std::string, at::Tensor>>{};
    if (o.checkpoint_dir.empty() || !main_rank) return;  // rank 0 writes
    save_checkpoint(m, zero ? std::move(st) : opt.state(), opt.steps(), obj, snap, o, at_step);
  };
  const int64_t tokens_before = r.tokens;
  const bool cuda = m.device().is_cuda();
  const bool tty = o.progress && isatty(2) && main_rank;
  const bool checkpoints = !o.checkpoint_dir.empty();
  const bool writes_checkpoints = checkpoints && main_rank;
  const auto t0 = std::chrono::steady_clock::now();
  auto since = [](std::chrono::steady_clock::time_point a) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
  };
  auto evaluate = [&](int64_t step) {
    Metrics ev = obj.evaluate(step);
    if (ev.empty()) return;
    for (const auto& [k, v] : ev) metric(k, v, step);
    r.evals.emplace_back(step, std::move(ev));
  };
  auto snapshot = [&] { return Snapshot{obj.state(), cpu_rng_state(), r.tokens}; };
  auto stop_interrupted = [&](const Snapshot& snap, int64_t step) {
    save(snap, step);
    if (writes_checkpoints) {
      fmt::print(stderr, "\ntrain: interrupted; checkpoint of step {} in {} (resume = true)\n",
                 step, o.checkpoint_dir);
    }
    consume_interrupt();
    throw Interrupted();
  };

  int64_t step = r.start_step;
  for (; step < o.steps; ++step) {
    bool stop_now = interrupt_pending();
    if (group) {  // every rank stops after the same step
      at::Tensor flag = at::full({1}, stop_now ? 1.0f : 0.0f);
      group->all_reduce(flag, dist::ReduceOp::max);
      stop_now = flag.item<float>() > 0;
    }
    if (stop_now) {
      // Ctrl-C between steps: keep the finished steps, then stop as interrupted
      if (checkpoints && step > r.start_step) stop_interrupted(snapshot(), step);
      consume_interrupt();
      throw Interrupted();
    }
    const auto ts = std::chrono::steady_clock::now();
    StepContext ctx;
    ctx.step = step;
    ctx.steps = o.steps;
    ctx.lr = sched.at(step);
    ctx.cuda = cuda;
    ctx.rank = group ? group->rank() : 0;
    ctx.world_size = group ? group->world_size() : 1;
    ctx.group = group;
    // the plan may have changed since the last step
    const int lowest = lowest_trainable_layer(m);
    LT_CHECK(lowest <= m.n_layers(),
             "train: every parameter is frozen at step {}: nothing to train", step + 1);
    ctx.from_layer = o.force_full_backward ? 0 : std::max(lowest, 0);
    // where an interrupt in the middle of this step goes back to
    const Snapshot start = checkpoints && !group && step > r.start_step ? snapshot() : Snapshot{};
    const int64_t n = obj.begin_step(ctx);
    LT_CHECK(n > 0, "train: {} gave {} micro-batches for step {}", obj.name(), n, step + 1);
    double loss = 0;
    int64_t tokens = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (i > 0 && !group && interrupt_pending()) {
        opt.zero_grad();  // drop the unfinished step
        if (checkpoints && step > r.start_step) stop_interrupted(start, step);
        check_interrupt();
      }
      MicroLoss ml;
      if (overlap && i == n - 1) overlap->arm();  // its backward starts the all-reduce
      {
        AutocastGuard ac(cuda && o.autocast);
        ml = obj.micro_batch(ctx, i);
        if (!ml.backward_done && std::isfinite(ml.value)) (ml.loss * ml.scale).backward();
      }
      if (!std::isfinite(ml.value))
        fail("train: loss is {} at step {} (micro-batch {}); lr {:.3g}: lower the learning rate "
             "or check the data",
             ml.value, step + 1, i, ctx.lr);
      loss += ml.scale * ml.value;
      tokens += ml.tokens;
    }
    if (group) {
      r.bytes_all_reduced += overlap ? overlap->finish() : dist::average_gradients(*group, dp_params, o.bucket_bytes);
      at::Tensor lt = at::tensor({loss, double(tokens)}, at::kDouble);
      group->all_reduce(lt, dist::ReduceOp::sum);
      loss = lt[0].item<double>() / double(group->world_size());
      tokens = int64_t(lt[1].item<double>());
    }
    Metrics extra = obj.end_step(ctx);
    const double gnorm = clip_grad_norm(opt.with_grad(), o.clip);
    if (!std::isfinite(gnorm))
      fail("train: gradient norm is {} at step {}; lr {:.3g}", gnorm, step + 1, ctx.lr);
    if (zero) zero->step(ctx.lr);
    else opt.step(ctx.lr);
    opt.zero_grad();
    const double dt = since(ts);
    r.tokens += tokens;
    StepLog sl{step, loss, ctx.lr, gnorm, dt > 0 ? double(tokens) / dt : 0, tokens, std::move(extra)};
    r.final_loss = loss;
    metric("loss", loss, step + 1);
    metric("lr", ctx.lr, step + 1);
    metric("grad_norm", gnorm, step + 1);
    metric("tokens_per_s", sl.tokens_per_s, step + 1);
    for (const auto& [k, v] : sl.metrics) metric(k, v, step + 1);
    r.log.push_back(std::move(sl));
    if (o.on_step) o.on_step(step + 1, loss);
    const bool last = step + 1 == o.steps;
    if (o.eval_every > 0 && (step + 1) % o.eval_every == 0 && !last) evaluate(step + 1);
    const bool stop = o.stop_after >= 0 && step + 1 >= o.stop_after && !last;
    if (checkpoints &&
        (last || stop || (o.checkpoint_every > 0 && (step + 1) % o.checkpoint_every == 0)))
      save(snapshot(), step + 1);
    if (tty) {
      const double el = since(t0);
      const int64_t done = step + 1 - r.start_step;
      fmt::print(stderr, "\rstep {}/{}  loss {:.4f}  lr {:.3g}  {:.0f} tok/s  ETA {}   ", step + 1,
                 o.steps, loss, ctx.lr, double(r.tokens - tokens_before) / std::max(el, 1e-9),
                 eta_text(el / double(done) * double(o.steps - step - 1)));
      if (last) fmt::print(stderr, "\n");
    }
    if (stop) {
      r.stopped_early = true;
      ++step;
      break;
    }
  }
  if (!r.stopped_early) evaluate(step);
  r.steps_done = step;
  r.optimizer_state_bytes = opt.state_bytes();
  r.wall_s = since(t0);
  const int64_t run_tokens = r.tokens - tokens_before;
  r.tokens_per_s = r.wall_s > 0 ? double(run_tokens) / r.wall_s : 0;
  metric("wall_s", r.wall_s, step);
  // the run's rate (tokens over the whole wall time, evaluations included), not the mean of
  // the steps' tokens_per_s: the figure LoopResult::tokens_per_s gives scripts
  metric("train_tokens_per_s", r.tokens_per_s, step);
  return r;
}

const Fields<LoopOptions>& loop_option_fields() {
  static const Fields<LoopOptions> f = {{"lr", &LoopOptions::lr},
                                        {"warmup", &LoopOptions::warmup},
                                        {"decay", &LoopOptions::decay},
                                        {"min_lr_ratio", &LoopOptions::min_lr_ratio},
                                        {"weight_decay", &LoopOptions::weight_decay},
                                        {"eps", &LoopOptions::eps},
                                        {"clip_grad", &LoopOptions::clip},
                                        {"master_weights", &LoopOptions::master_weights},
                                        {"eval_every", &LoopOptions::eval_every, 0},
                                        {"checkpoint_dir", &LoopOptions::checkpoint_dir},
                                        {"checkpoint_every", &LoopOptions::checkpoint_every, 0},
                                        {"keep_checkpoints", &LoopOptions::keep_checkpoints, 1},
                                        {"resume", &LoopOptions::resume},
                                        {"stop_after", &LoopOptions::stop_after, -1},
                                        {"progress", &LoopOptions::progress}};
  return f;
}

const Fields<LoopResult>& loop_result_fields() {
  static const Fields<LoopResult> f = {{"steps", &LoopResult::steps_done},
                                       {"start_step", &LoopResult::start_step},
                                       {"tokens", &LoopResult::tokens},
                                       {"trainable_params", &LoopResult::trainable_params},
                                       {"total_params", &LoopResult::total_params},
                                       {"lowest_trainable_layer", &LoopResult::lowest_trainable_layer},
                                       {"final_loss", &LoopResult::final_loss},
                                       {"wall_s", &LoopResult::wall_s},
                                       {"tokens_per_s", &LoopResult::tokens_per_s},
                                       {"bytes_all_reduced", &LoopResult::bytes_all_reduced},
                                       {"optimizer_state_bytes", &LoopResult::optimizer_state_bytes},
                                       {"stopped_early", &LoopResult::stopped_early}};
  return f;
}

}  // namespace ltrun::train
