// runtime/train/data_parallel.h: the two data-parallel options of the training loop
// (runtime/train/loop.h) beyond plain gradient averaging (dist::average_gradients):
//
// ShardedAdamW (ZeRO-1): each rank keeps the AdamW moments of its shard of the trainable
// parameters only. Shards are whole tensors, balanced by element count (largest first, each
// to the least-loaded rank); a parameter that starts training later joins the least-loaded
// rank then, the same on every rank since every rank sees the same plan. step() updates the
// rank's own parameters, then each rank broadcasts its updated parameters (one flattened
// buffer per owner). The gradients are averaged in full before (so clipping sees the global
// norm): the result equals replicated AdamW's, element for element.
//
// OverlappedGrads: the gradient average of a step started while the last micro-batch's
// backward runs. Hooks on the trainable parameters copy each gradient (plus what earlier
// micro-batches accumulated) into its bucket as autograd produces it; a full bucket's sum
// all-reduce starts at once, in bucket order on every rank (a bucket that fills early waits
// for the ones before it). finish() starts what is left, waits, and writes the averages into
// the gradients. Buckets hold parameters in reverse order (the last blocks' gradients come
// first) and are laid out again when the set of trainable parameters changes.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/model/model.h"
#include "runtime/train/optim.h"

namespace ltrun::dist {
class Group;
}

namespace ltrun::train {

class ShardedAdamW {
 public:
  // params: every parameter of opt's groups, in the same order on every rank. Assigns the
  // trainable ones (and any with state, e.g. resumed) to ranks and drops the moments of the
  // parameters other ranks own (a resumed optimizer holds them all).
  ShardedAdamW(dist::Group& g, AdamW& opt, std::vector<model::Param> params);
  // The optimizer step on the averaged gradients: own shard, then the owners' broadcasts.
  void step(double lr);
  // Every parameter's moments (and master copy, with master_weights) gathered from their
  // owners (a collective: every rank calls it),
  // in AdamW::state()'s format, for a checkpoint that resumes sharded or not.
  std::vector<std::pair<std::string, at::Tensor>> full_state();
  int owner(const std::string& name) const;  // -1: not assigned yet

 private:
  void assign(const model::Param& p);
  dist::Group& g_;
  AdamW& opt_;
  std::vector<model::Param> params_;
  std::map<std::string, int> owner_;
  std::vector<int64_t> load_;  // elements owned per rank
};

class OverlappedGrads {
 public:
  // params: every parameter of the optimizer's groups, in the same order on every rank.
  OverlappedGrads(dist::Group& g, std::vector<at::Tensor> params, int64_t bucket_bytes);
  ~OverlappedGrads();  // removes the hooks
  OverlappedGrads(const OverlappedGrads&) = delete;
  OverlappedGrads& operator=(const OverlappedGrads&) = delete;
  // Before the last micro-batch's backward: its gradients are reduced as they come.
  void arm();
  // After that backward: the averaged gradients are in place. Returns the bytes all-reduced.
  uint64_t finish();

 private:
  struct Bucket;
  void on_grad(size_t i, const at::Tensor& grad);
  void launch_ready();
  dist::Group& g_;
  std::vector<at::Tensor> params_;
  int64_t bucket_bytes_;
  std::vector<bool> layout_of_;          // requires_grad of each param when laid out
  std::vector<std::unique_ptr<Bucket>> buckets_;
  std::vector<std::pair<int, int64_t>> slot_;  // param -> (bucket, offset); bucket -1: none
  std::vector<int> hook_;                // hook handle per param (-1: none)
  std::vector<bool> got_;                // param's gradient is in its bucket (this backward)
  size_t next_ = 0;                      // the next bucket to start
  bool armed_ = false;
};

}  // namespace ltrun::train
