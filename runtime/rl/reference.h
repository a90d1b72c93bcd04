// runtime/rl/reference.h: the reference policy of the KL term. With a partly frozen policy
// the reference differs from it only in the trainable parameters, so the shared-prefix
// reference keeps just those parameters' original values (one block's memory when one block
// trains) and computes reference log-probs by resuming from the lowest trainable block on the
// policy's own hidden state there, with the original values swapped in for that pass:
// (N - l) / N of a forward. The copied reference (a whole frozen model) is the baseline it is
// tested and benchmarked against.
#pragma once
#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/model/model.h"
#include "runtime/rl/logprob.h"

namespace ltrun::rl {

class Reference {
 public:
  enum class Kind { SharedPrefix, Copy };
  // Snapshot of `policy` as it is now. SharedPrefix: copies of its trainable parameters and
  // the lowest trainable block; Copy: a full clone.
  static Reference shared_prefix(const model::Model& policy);
  static Reference copy(const model::Model& policy);

  Kind kind() const { return kind_; }
  // Where the reference pass starts: the lowest trainable block (0 for a copy).
  int from_layer() const { return from_layer_; }
  int64_t bytes() const;  // memory held by the reference (saved parameters or the clone)

  // Log-probs of the response tokens of `batch` under the reference (no graph). `policy` is
  // the model being trained (SharedPrefix borrows its frozen prefix and, for the pass, swaps
  // the saved values into its trainable parameters and back). entry: hidden[from_layer()]
  // of this batch from the policy (PolicyPass::entry), saving the prefix pass; undefined:
  // the prefix is run here.
  at::Tensor logprobs(const model::Model& policy, const SequenceBatch& batch, double temperature,
                      int64_t chunk, const at::Tensor& entry = {}) const;

 private:
  Kind kind_ = Kind::SharedPrefix;
  int from_layer_ = 0;
  std::vector<std::pair<std::string, at::Tensor>> saved_;  // SharedPrefix: name -> original value
  std::shared_ptr<model::Model> clone_;                    // Copy
};

}  // namespace ltrun::rl
