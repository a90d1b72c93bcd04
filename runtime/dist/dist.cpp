// runtime/dist/dist.cpp: c10d process groups (see dist.h).
#include "runtime/dist/dist.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/version.h>
#ifdef LTRUN_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <fstream>
#include <thread>

#include "runtime/core/error.h"

namespace ltrun::dist {

namespace {

std::unique_ptr<Group> g_group;

std::optional<std::string> env(const char* k) {
  const char* v = std::getenv(k);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

int env_int(const char* k, const std::string& v, int lo, int hi) {
  size_t used = 0;
  long x = 0;
  try {
    x = std::stol(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  LT_CHECK(used == v.size() && x >= lo && x <= hi, "{}={}: expected an integer in {}..{}", k, v, lo, hi);
  return int(x);
}

// What `ltrun launch` wrote about a rank that ended, if anything (waits up to `wait`).
std::string launcher_note(std::chrono::milliseconds wait) {
  const auto dir = env("LTRUN_LAUNCH_DIR");
  if (!dir) return "";
  const auto f = std::filesystem::path(*dir) / "failed";
  const auto until = std::chrono::steady_clock::now() + wait;
  while (true) {
    if (std::filesystem::exists(f)) {
      std::ifstream in(f);
      std::string line;
      std::getline(in, line);
      if (!line.empty()) return line;
    }
    if (std::chrono::steady_clock::now() >= until) return "";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// The collectives each rank has entered, one uint64 per rank in LTRUN_LAUNCH_DIR/progress
// (mapped shared; every rank writes only its own slot). A rank's count lagging behind this
// rank's at a failed collective means it never reached it.
class Progress {
 public:
  Progress(const std::string& dir, int world, int rank) : world_(world), rank_(rank) {
    const std::string path = dir + "/progress";
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return;  // no naming of late ranks, nothing worse
    const size_t bytes = size_t(world) * sizeof(uint64_t);
    struct stat st {};
    // every rank grows the file to the same size (zeros): no rank can shrink it
    if (::fstat(fd, &st) == 0 && (size_t(st.st_size) >= bytes || ::ftruncate(fd, off_t(bytes)) == 0)) {
      void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (p != MAP_FAILED) slots_ = static_cast<uint64_t*>(p);
    }
    ::close(fd);
  }
  ~Progress() {
    if (slots_) ::munmap(slots_, size_t(world_) * sizeof(uint64_t));
  }
  bool active() const { return slots_ != nullptr; }
  void set(uint64_t seq) {
    if (slots_) __atomic_store_n(&slots_[rank_], seq, __ATOMIC_RELEASE);
  }
  // Who is behind this rank at its collective number `seq` (the rendezvous counts as 1):
  //   "rank 1 never joined the group" (seq 1), or "ranks 1, 3 did not reach it (rank 1
  //   entered 2 collectives, rank 3 never joined the group, rank 0 3, counting the
  //   rendezvous)"; "" when every rank got there (or nothing is known)
  std::string late(uint64_t seq) const {
    if (!slots_) return "";
    std::string who, where;
    int n = 0;
    for (int r = 0; r < world_; ++r) {
      if (r == rank_) continue;
      const uint64_t c = __atomic_load_n(&slots_[r], __ATOMIC_ACQUIRE);
      if (c >= seq) continue;
      who += fmt::format("{}{}", n ? ", " : "", r);
      where += c == 0 ? fmt::format("rank {} never joined the group, ", r)
                      : fmt::format("rank {} entered {} collective{}, ", r, c, c == 1 ? "" : "s");
      ++n;
    }
    if (!n) return "";
    if (seq == 1) return fmt::format("rank{} {} never joined the group", n > 1 ? "s" : "", who);
    return fmt::format("rank{} {} did not reach it ({}rank {} {}, counting the rendezvous)", n > 1 ? "s" : "", who,
                       where, rank_, seq);
  }

 private:
  int world_, rank_;
  uint64_t* slots_ = nullptr;
};

std::string seconds_text(std::chrono::milliseconds t) {
  return t.count() % 1000 ? fmt::format("{:.3g} s", double(t.count()) / 1000.0)
                          : fmt::format("{} s", t.count() / 1000);
}

}  // namespace

Env env_from_environment() {
  Env e;
  if (auto ws = env("WORLD_SIZE")) {
    e.source = "torchrun";
    e.world_size = env_int("WORLD_SIZE", *ws, 1, 1 << 20);
    auto r = env("RANK");
    LT_CHECK(r || e.world_size == 1, "WORLD_SIZE={} is set but RANK is not", e.world_size);
    e.rank = r ? env_int("RANK", *r, 0, e.world_size - 1) : 0;
    auto lr = env("LOCAL_RANK");
    e.local_rank = lr ? env_int("LOCAL_RANK", *lr, 0, e.world_size - 1) : e.rank;
  } else if (auto n = env("SLURM_NTASKS")) {
    e.source = "slurm";
    e.world_size = env_int("SLURM_NTASKS", *n, 1, 1 << 20);
    auto r = env("SLURM_PROCID");
    LT_CHECK(r, "SLURM_NTASKS={} is set but SLURM_PROCID is not", e.world_size);
    e.rank = env_int("SLURM_PROCID", *r, 0, e.world_size - 1);
    auto lr = env("SLURM_LOCALID");
    e.local_rank = lr ? env_int("SLURM_LOCALID", *lr, 0, e.world_size - 1) : 0;
    if (auto a = env("SLURM_LAUNCH_NODE_IPADDR")) e.master_addr = *a;
  }
  if (auto a = env("MASTER_ADDR")) e.master_addr = *a;
  if (auto p = env("MASTER_PORT")) e.master_port = env_int("MASTER_PORT", *p, 1, 65535);
  if (auto t = env("LTRUN_DIST_TIMEOUT")) {
    char* end = nullptr;
    const double s = std::strtod(t->c_str(), &end);
    LT_CHECK(end && *end == 0 && s > 0 && s <= 7 * 86400, "LTRUN_DIST_TIMEOUT={}: expected seconds in (0, 604800]",
             *t);
    e.timeout = std::chrono::milliseconds(int64_t(std::ceil(s * 1000)));
  }
  if (auto f = env("LTRUN_RENDEZVOUS_FILE")) e.rendezvous_file = *f;
  return e;
}

ReduceOp parse_op(const std::string& s) {
  if (s == "sum") return ReduceOp::sum;
  if (s == "avg" || s == "mean") return ReduceOp::avg;
  if (s == "max") return ReduceOp::max;
  if (s == "min") return ReduceOp::min;
  fail("dist: reduce op '{}': expected sum, avg, max or min", s);
}

// LibTorch 1.x: ProcessGroupGloo / ProcessGroupNCCL derive from c10d::ProcessGroup; 2.x
// made them c10d::Backend (ProcessGroup dispatches to backends by device). ltrun calls the
// collectives (allreduce, broadcast, allgather, barrier: the same signatures in both) on the
// Gloo or NCCL object itself.
#if TORCH_VERSION_MAJOR >= 2
using ProcessGroupBase = c10d::Backend;
#else
using ProcessGroupBase = c10d::ProcessGroup;
#endif

struct Group::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<ProcessGroupBase> pg;
  c10::Device device{c10::kCPU};
  std::unique_ptr<Progress> progress;
  uint64_t seq = 1;  // collectives entered (the rendezvous is the first)
  std::chrono::milliseconds timeout{0};
};

Group::Group(Env e, std::string backend, std::unique_ptr<Impl> impl)
    : env_(std::move(e)), backend_(std::move(backend)), impl_(std::move(impl)) {}

Group::~Group() = default;

std::unique_ptr<Group> Group::create(const Env& e, const std::string& backend_in,
                                     const std::string& device,
                                     std::optional<std::chrono::milliseconds> timeout_in) {
  LT_CHECK(e.world_size >= 1 && e.rank >= 0 && e.rank < e.world_size,
           "dist: rank {} outside 0..{}", e.rank, e.world_size - 1);
  const std::chrono::milliseconds timeout = timeout_in.value_or(e.timeout);
  auto impl = std::make_unique<Impl>();
  impl->timeout = timeout;
  if (auto dir = env("LTRUN_LAUNCH_DIR")) {
    impl->progress = std::make_unique<Progress>(*dir, e.world_size, e.rank);
    impl->progress->set(1);  // arrived at the rendezvous
  }
  // what a failed rendezvous says about the ranks that never came
  auto late = [&] {
    const std::string l = impl->progress ? impl->progress->late(1) : "";
    return fmt::format("(timeout {}){}{}", seconds_text(timeout), l.empty() ? "" : ": ", l);
  };
  impl->device = c10::Device(device);
  std::string backend = backend_in;
  if (backend == "auto") backend = impl->device.is_cuda() ? "nccl" : "gloo";
  LT_CHECK(backend == "gloo" || backend == "nccl", "dist: backend '{}': expected auto, gloo or nccl",
           backend_in);
#ifndef LTRUN_NCCL
  if (backend == "nccl") {
    LT_CHECK(backend_in == "auto", "dist: backend nccl: this ltrun was built without NCCL");
    backend = "gloo";  // CUDA tensors go through host copies
  }
#endif
  try {
    if (!e.rendezvous_file.empty()) {  // one node: a file, no port (see dist.h)
      auto file = c10::make_intrusive<c10d::FileStore>(e.rendezvous_file, e.world_size);
      file->setTimeout(timeout);
      impl->store = c10::make_intrusive<c10d::PrefixStore>("ltrun", file);
    } else {
      c10d::TCPStoreOptions so;
      so.port = uint16_t(e.master_port);
      so.isServer = e.rank == 0;
      so.numWorkers = size_t(e.world_size);
      so.waitWorkers = true;
      so.timeout = timeout;
      c10::intrusive_ptr<c10d::TCPStore> tcp;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
      // LibTorch 2.4+ asks for the libuv server by default; Debian's is built without libuv
      // ("use_libuv was requested but PyTorch was built without libuv support"): the classic one
      try {
        tcp = c10::make_intrusive<c10d::TCPStore>(e.master_addr, so);
      } catch (const std::exception& x) {
        if (!so.useLibUV || std::string(x.what()).find("libuv") == std::string::npos) throw;
        so.useLibUV = false;
        tcp = c10::make_intrusive<c10d::TCPStore>(e.master_addr, so);
      }
#else
      tcp = c10::make_intrusive<c10d::TCPStore>(e.master_addr, so);
#endif
      impl->store = c10::make_intrusive<c10d::PrefixStore>("ltrun", tcp);
    }
  } catch (const std::exception& x) {
    std::string msg = x.what();
    if (auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
    fail("dist: rendezvous at {} (rank {} of {}) failed {}: {}",
         e.rendezvous_file.empty() ? fmt::format("{}:{}", e.master_addr, e.master_port) : e.rendezvous_file,
         e.rank, e.world_size, late(), msg);
  }
  try {
    if (backend == "gloo") {
      auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
      // one node (a loopback master): loopback; GLOO_SOCKET_IFNAME: that interface; else the
      // address this host's name resolves to
      const bool loopback = !e.rendezvous_file.empty() || e.master_addr == "localhost" ||
                            e.master_addr.rfind("127.", 0) == 0;
      if (auto ifname = env("GLOO_SOCKET_IFNAME"))
        opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(*ifname));
      else if (loopback)
        opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      else
        opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      impl->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(impl->store, e.rank, e.world_size, opts);
    } else {
#ifdef LTRUN_NCCL
      auto opts = c10d::ProcessGroupNCCL::Options::create();
      opts->timeout = timeout;
      impl->pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(impl->store, e.rank, e.world_size, opts);
#endif
    }
  } catch (const std::exception& x) {
    std::string msg = x.what();
    if (auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
    fail("dist: {} process group (rank {} of {}) failed {}: {}", backend, e.rank, e.world_size, late(), msg);
  }
  return std::unique_ptr<Group>(new Group(e, backend, std::move(impl)));
}

uint64_t Group::enter() {
  const uint64_t seq = ++impl_->seq;
  if (impl_->progress) impl_->progress->set(seq);
  return seq;
}

void Group::wait(const char* what, uint64_t seq, std::function<void()> op) {
  try {
    op();
  } catch (const std::exception& x) {
    std::string msg = x.what();
    if (auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
    const std::string note = launcher_note(std::chrono::seconds(3));
    const std::string late = impl_->progress ? impl_->progress->late(seq) : "";
    fail("dist: {} on rank {} of {} failed (timeout {}): {}{}{}", what, env_.rank, env_.world_size,
         seconds_text(impl_->timeout), note.empty() ? "" : note + "; ", late.empty() ? "" : late + "; ", msg);
  }
}

namespace {
// Gloo reduces CPU tensors: CUDA tensors on a Gloo group go through a host copy. NCCL reduces
// CUDA tensors: CPU tensors (a metric, a count) on an NCCL group go through the group's device.
at::Tensor to_comm(const at::Tensor& t, const std::string& backend, const c10::Device& device) {
  at::Tensor c = backend == "gloo" && !t.device().is_cpu()  ? t.to(at::kCPU)
                 : backend == "nccl" && !t.device().is_cuda() ? t.to(device)
                                                             : t;
  return c.is_contiguous() ? c : c.contiguous();
}
void from_comm(at::Tensor& t, const at::Tensor& c) {
  if (!c.is_same(t)) t.copy_(c);
}
}  // namespace

void Group::barrier() {
  const uint64_t seq = enter();
  wait("barrier", seq, [&] { impl_->pg->barrier()->wait(); });
}

void Group::all_reduce(at::Tensor& t, ReduceOp op) {
  at::NoGradGuard g;
  at::Tensor c = to_comm(t, backend_, impl_->device);
  c10d::AllreduceOptions o;
  o.reduceOp = op == ReduceOp::max   ? c10d::ReduceOp::MAX
               : op == ReduceOp::min ? c10d::ReduceOp::MIN
                                     : c10d::ReduceOp::SUM;
  std::vector<at::Tensor> v{c};
  const uint64_t seq = enter();
  wait("all_reduce", seq, [&] { impl_->pg->allreduce(v, o)->wait(); });
  bytes_all_reduced_ += uint64_t(c.numel()) * uint64_t(c.element_size());
  if (op == ReduceOp::avg) {
    if (c.is_floating_point()) c.div_(double(env_.world_size));
    else c.div_(env_.world_size, "trunc");
  }
  from_comm(t, c);
}

struct Group::Pending::State {
  Group* g = nullptr;
  at::Tensor t, comm;
  c10::intrusive_ptr<c10d::Work> work;
  uint64_t seq = 0;
  bool done = false;
};

Group::Pending::~Pending() = default;

void Group::Pending::wait() {
  if (s_->done) return;
  s_->done = true;
  s_->g->wait("all_reduce", s_->seq, [&] { s_->work->wait(); });
  from_comm(s_->t, s_->comm);
}

std::unique_ptr<Group::Pending> Group::all_reduce_start(at::Tensor t) {
  at::NoGradGuard g;
  auto p = std::make_unique<Pending>();
  p->s_ = std::make_unique<Pending::State>();
  p->s_->g = this;
  p->s_->t = t;
  p->s_->comm = to_comm(t, backend_, impl_->device);
  c10d::AllreduceOptions o;
  o.reduceOp = c10d::ReduceOp::SUM;
  std::vector<at::Tensor> v{p->s_->comm};
  p->s_->seq = enter();
  wait("all_reduce", p->s_->seq, [&] { p->s_->work = impl_->pg->allreduce(v, o); });
  bytes_all_reduced_ += uint64_t(t.numel()) * uint64_t(t.element_size());
  return p;
}

void Group::broadcast(at::Tensor& t, int src) {
  LT_CHECK(src >= 0 && src < env_.world_size, "dist.broadcast: source rank {} outside 0..{}", src,
           env_.world_size - 1);
  at::NoGradGuard g;
  at::Tensor c = to_comm(t, backend_, impl_->device);
  c10d::BroadcastOptions o;
  o.rootRank = src;
  std::vector<at::Tensor> v{c};
  const uint64_t seq = enter();
  wait("broadcast", seq, [&] { impl_->pg->broadcast(v, o)->wait(); });
  from_comm(t, c);
}

std::vector<at::Tensor> Group::all_gather(const at::Tensor& t) {
  at::NoGradGuard g;
  at::Tensor c = to_comm(t, backend_, impl_->device);
  std::vector<std::vector<at::Tensor>> out(1);
  for (int r = 0; r < env_.world_size; ++r) out[0].push_back(at::empty_like(c));
  std::vector<at::Tensor> in{c};
  const uint64_t seq = enter();
  wait("all_gather", seq, [&] { impl_->pg->allgather(out, in)->wait(); });
  std::vector<at::Tensor> res;
  for (auto& x : out[0]) res.push_back(x.to(t.device()));
  return res;
}

Group* active() { return g_group.get(); }

Group& init(const Env& e, const std::string& backend, const std::string& device) {
  LT_CHECK(!g_group, "dist: the process group is already initialised");
  g_group = Group::create(e, backend, device);
  return *g_group;
}

void shutdown() { g_group.reset(); }

uint64_t average_gradients(Group& g, const std::vector<at::Tensor>& params, int64_t bucket_bytes) {
  at::NoGradGuard ng;
  uint64_t bytes = 0;
  std::vector<at::Tensor> bucket;
  int64_t in_bucket = 0;
  auto flush = [&] {
    if (bucket.empty()) return;
    std::vector<at::Tensor> flat;
    for (const at::Tensor& p : bucket)
      flat.push_back(p.grad().defined() ? p.grad().to(at::kFloat).reshape({-1})
                                        : at::zeros({p.numel()}, p.options().dtype(at::kFloat)));
    at::Tensor buf = at::cat(flat);
    g.all_reduce(buf, ReduceOp::sum);
    bytes += uint64_t(buf.numel()) * uint64_t(buf.element_size());
    buf.div_(double(g.world_size()));
    int64_t off = 0;
    for (const at::Tensor& p : bucket) {
      at::Tensor part = buf.narrow(0, off, p.numel()).view(p.sizes()).to(p.dtype());
      off += p.numel();
      if (p.grad().defined()) p.mutable_grad().copy_(part);
      else const_cast<at::Tensor&>(p).mutable_grad() = part.clone();
    }
    bucket.clear();
    in_bucket = 0;
  };
  for (const at::Tensor& p : params) {
    if (!p.requires_grad()) continue;
    const int64_t b = p.numel() * int64_t(sizeof(float));
    if (!bucket.empty() && in_bucket + b > bucket_bytes) flush();
    bucket.push_back(p);
    in_bucket += b;
  }
  flush();
  return bytes;
}

}  // namespace ltrun::dist
