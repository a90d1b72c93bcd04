// runtime/diag/tracer.h: the LayerTracer scan of a model over task samples. Per sample: a
// clean pass with the residual stream captured; the logit lens of every residual (Task
// Particle: P_t and its Ratio); for every residual r, the context positions zeroed in
// hidden[r] and the rest of the stack run (Layer-wise Sensitivity: JS and ΔJS). Then group
// means, normalised profiles and split scores. Only Model::forward / lens / n_layers are
// used, so whatever architecture the model core runs is traced with no code here.
#pragma once
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "runtime/core/fields.h"
#include "runtime/diag/measures.h"

namespace ltrun::model {
class Model;
class DecodeState;
}

namespace ltrun::diag {

struct Sample {
  std::vector<int64_t> ids;      // the prompt's tokens
  std::vector<int64_t> context;  // I_c: 0-based token positions zeroed for LS
  std::optional<int64_t> target;  // t*; unset: the model's own prediction, argmax of P
  int group = 0;                  // task group label (summarised in ascending order)
};

// How the perturbed passes run; all run a batch of samples per pass (TraceOptions::batch).
enum class Method {
  // Resume, with the zeroed leading context run once: when the context is a prefix of the
  // prompt (the task format: examples, then the query), every input to its positions at
  // block r is zero, so their states at and after block r depend on position only, whatever
  // the sample. They run once per residual for the whole trace (SharedPrefix); each row then
  // runs only its tokens after the context, from its own prefix length. As in Resume, block
  // l runs once on the rows of every resumption r <= l (N block calls per batch, not
  // N(N+1)/2). Falls back to Resume when a layer's decode state cannot be cut at a position
  // (Mamba2) or nothing is left.
  Prefix,
  // From the clean pass's residual: blocks r..N-1 only, for every residual r, batched across
  // residuals (block l runs once on the (l+1)·batch rows of the resumptions that reached it).
  Resume,
  Naive,   // the whole stack for every residual (the reference, and the bench's baseline)
};

struct TraceOptions {
  int64_t topk = 10;        // JS support: topk(P) ∪ topk(Q); <= 0: the whole vocabulary
  int64_t candidates = 10;  // lens tokens kept per residual
  int64_t batch = 8;        // samples per pass (left-padded with an attention mask)
  double tau = 0;           // TP interval: blocks with Ratio > tau
  bool include_final_djs = false;  // keep the final block's ΔJS, undefined (see delta_js)
  Method method = Method::Prefix;
};

// By key (runtime/core/fields.h): topk, candidates, batch, tau, final_djs (include_final_djs);
// method is parse_method's.
const Fields<TraceOptions>& trace_option_fields();
// "prefix" | "resume" | "naive"; anything else is an error naming fn and the name.
Method parse_method(const std::string& name, const std::string& fn);

// Series indexed by residual (N + 1 entries: [0] embeddings, [l+1] after block l) or by
// block (N entries), as in measures.h.
struct SampleTrace {
  int64_t target = 0;
  int group = 0;
  std::vector<double> p_target;             // residual: P_t by the logit lens at the last token
  std::vector<double> js;                   // residual: JS(P ‖ Q) with the context zeroed there
  std::vector<double> tp_ratio;             // block
  std::vector<double> ls_djs;  // block: N − 1 entries (the final block's is undefined) or N
  std::vector<int> tp_interval;             // blocks with tp_ratio > tau
  std::vector<std::vector<int64_t>> top_ids;  // residual × candidates: the lens's top tokens
  std::vector<std::vector<double>> top_probs;
};

// One SampleTrace per sample, in the given order (the batches are formed from the samples
// sorted by length, to pad less).
std::vector<SampleTrace> trace(const model::Model& m, const std::vector<Sample>& samples,
                               const TraceOptions& options = {});

// Samples [from, to) as one pass: left-padded so that every row ends with its prompt's last
// token. Errors name the sample (1-based) and the bad token, position or target.
struct Packed {
  at::Tensor ids;   // int64 [B, T]; padding is id 0 (masked out)
  at::Tensor mask;  // int64 [B, T] 1 = token, 0 = padding; undefined when no row is padded
  at::Tensor zero;  // bool [B, T]: the context positions, shifted by each row's padding
};
Packed pack(const std::vector<Sample>& samples, size_t from, size_t to, int64_t vocab,
            c10::Device device = c10::kCPU);

// h [B, T, H] with the positions where `zero` (bool [B, T]) holds set to 0, the rest as is.
at::Tensor zero_context(const at::Tensor& h, const at::Tensor& zero);

// The logit lens of rows h [R, hidden] read in pieces of the vocabulary, never [R, vocab] at
// once (at a 151k vocabulary that buffer, its zeroing and its page faults cost as much as the
// products): per row the log-sum-exp (float32) and the top-k logits (float32, descending)
// with their ids; `normed` is the final norm of h, for lens_at.
struct LensTop {
  at::Tensor normed, lse, values, ids;
};
LensTop lens_top(const model::Model& m, const at::Tensor& h, int64_t k);
// The lens logits (float32) of normed rows [R, hidden] at ids int64 [R, n] only.
at::Tensor lens_at(const model::Model& m, const at::Tensor& normed, const at::Tensor& ids);

// Method::Prefix's shared part: `length` zero residuals entering block r, run through blocks
// r..N-1 once with a decode state (computed on first use of r, kept for the whole trace).
class SharedPrefix {
 public:
  SharedPrefix(const model::Model& m, int64_t length);
  ~SharedPrefix();
  int64_t length() const { return length_; }
  const model::DecodeState& at(int r);

 private:
  const model::Model& m_;
  int64_t length_;
  std::vector<std::unique_ptr<model::DecodeState>> states_;
};

// The last-position logits [N + 1, B, V] with `zero` (bool [B, T]) zeroed in the residual
// hidden[r], for r = 0..N; `hidden` is the clean pass's capture (hidden[0..N]) of the same
// batch, `attention_mask` [B, T] or undefined. No zero position: every row is the clean pass.
// Method::Prefix uses `shared` when it is long enough for every row's leading context (else
// one of its own).
at::Tensor perturbed_logits(const model::Model& m, const std::vector<at::Tensor>& hidden,
                            const at::Tensor& zero, const at::Tensor& attention_mask,
                            Method method = Method::Prefix, SharedPrefix* shared = nullptr);
// The same passes' last-position residuals after the last block (before the final norm),
// [N + 1, B, hidden]: perturbed_logits = lens(perturbed_last).
at::Tensor perturbed_last(const model::Model& m, const std::vector<at::Tensor>& hidden,
                          const at::Tensor& zero, const at::Tensor& attention_mask,
                          Method method = Method::Prefix, SharedPrefix* shared = nullptr);

struct GroupMeans {
  int group = 0, samples = 0;
  std::vector<double> p_target, js;      // residual
  std::vector<double> tp_ratio, ls_djs;  // block (ls_djs: N − 1 or N, as in SampleTrace)
};

struct Summary {
  std::vector<GroupMeans> groups;  // in ascending label order
  // per block: the mean over groups of the group means, then min-max normalised; ls has
  // N − 1 entries when the final block's ΔJS is left out (it is then not in the min-max)
  std::vector<double> tp, ls;
  std::vector<int> tp_interval;  // blocks whose mean Ratio (before normalising) > tau
  std::vector<Split> splits;     // empty when the model has too few blocks for a split
  Split best{};                  // the highest S(b)
  Recommendation recommendation;  // by the sign of S(b); see measures.h
};

Summary summarize(const std::vector<SampleTrace>& traces,
                  const std::vector<double>& ratios = kDefaultRatios, double tau = 0);

}  // namespace ltrun::diag
