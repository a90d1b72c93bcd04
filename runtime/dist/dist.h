// runtime/dist/dist.h: the process group of a multi-process run, on LibTorch's c10d: a
// TCPStore rendezvous at MASTER_ADDR:MASTER_PORT, then ProcessGroupGloo (CPU tensors) or
// ProcessGroupNCCL (CUDA tensors, when ltrun was built with NCCL). The ranks come from a
// torchrun-style environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, as
// `ltrun launch` sets it) or from Slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID; the master
// address from MASTER_ADDR, else SLURM_LAUNCH_NODE_IPADDR).
//
// Collectives block until every rank has joined them. A rank that dies makes the others'
// collectives fail (Gloo sees the closed connection at once; otherwise after `timeout`) with
// an error that names the dead rank when `ltrun launch` reported it (LTRUN_LAUNCH_DIR).
// Under `ltrun launch` each rank also counts the collectives it has entered in a shared file
// (LTRUN_LAUNCH_DIR/progress), so a collective that times out names the ranks that never
// reached it (a hung rank), and so does a rendezvous that times out.
//
// The timeout (rendezvous and every collective) is LTRUN_DIST_TIMEOUT seconds (`ltrun launch
// --timeout`), else 300. A single-node `ltrun launch` meets in a file of its private
// LTRUN_LAUNCH_DIR (LTRUN_RENDEZVOUS_FILE, c10d's FileStore) instead of a TCP port: LibTorch
// 1.13's TCPStore can only listen on every interface, and one host needs no port at all;
// Gloo's own connections then bind 127.0.0.1.
#pragma once
#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ltrun::dist {

struct Env {
  int rank = 0, world_size = 1, local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string source = "none";  // "torchrun" | "slurm" | "none"
  std::chrono::milliseconds timeout = std::chrono::minutes(5);  // LTRUN_DIST_TIMEOUT (seconds)
  std::string rendezvous_file;  // LTRUN_RENDEZVOUS_FILE: one node, a FileStore instead of TCP
};

// The environment of this process (world_size 1, rank 0 when nothing is set). Errors name
// the variable that is malformed or out of range.
Env env_from_environment();

enum class ReduceOp { sum, avg, max, min };
ReduceOp parse_op(const std::string& s);  // "sum" | "avg" | "max" | "min"

class Group {
 public:
  // Joins the group of `e` (world_size > 1); backend "auto" (NCCL for a CUDA device when
  // built with it, else Gloo), "gloo" or "nccl". `device`: where the collectives' tensors live.
  // timeout: of the rendezvous and of every collective; nullopt: e.timeout.
  static std::unique_ptr<Group> create(const Env& e, const std::string& backend,
                                       const std::string& device = "cpu",
                                       std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  ~Group();

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }
  int local_rank() const { return env_.local_rank; }
  bool is_main() const { return env_.rank == 0; }
  const std::string& backend() const { return backend_; }

  void barrier();
  // In place on every rank. avg divides the sum by world_size.
  void all_reduce(at::Tensor& t, ReduceOp op = ReduceOp::sum);
  void broadcast(at::Tensor& t, int src = 0);
  // t from every rank, in rank order (same shape on every rank).
  std::vector<at::Tensor> all_gather(const at::Tensor& t);

  // A sum all-reduce started by all_reduce_start: wait() blocks until it is done (and fails
  // as all_reduce does), then t holds the sum.
  class Pending {
   public:
    void wait();
    ~Pending();
   private:
    friend class Group;
    struct State;
    std::unique_ptr<State> s_;
  };
  // Starts an in-place sum all-reduce of t (contiguous) without waiting for it. Every rank
  // must start its all-reduces in the same order; they may overlap with computation.
  std::unique_ptr<Pending> all_reduce_start(at::Tensor t);

  // Bytes handed to all_reduce so far (tensor bytes per call, not wire bytes).
  uint64_t bytes_all_reduced() const { return bytes_all_reduced_; }

 private:
  struct Impl;
  Group(Env e, std::string backend, std::unique_ptr<Impl> impl);
  uint64_t enter();  // this rank's next collective number (counted in the progress file)
  void wait(const char* what, uint64_t seq, std::function<void()> op);

  Env env_;
  std::string backend_;
  std::unique_ptr<Impl> impl_;
  uint64_t bytes_all_reduced_ = 0;
};

// The process's group: made by init() (by `ltrun SCRIPT` when WORLD_SIZE > 1); nullptr in a
// single-process run.
Group* active();
Group& init(const Env& e, const std::string& backend = "auto", const std::string& device = "cpu");
void shutdown();  // drops the active group (at exit)

// Data-parallel gradients: sums the gradients of `params` (those that require grad; an
// undefined gradient counts as zeros) over the ranks and divides by world_size, in buckets
// of at most bucket_bytes flattened together. Parameters that do not require grad cost
// nothing. Returns the bytes all-reduced.
uint64_t average_gradients(Group& g, const std::vector<at::Tensor>& params,
                           int64_t bucket_bytes = 25 << 20);

}  // namespace ltrun::dist
