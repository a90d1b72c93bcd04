// runtime/model/model.h: a decoder-only language model (qwen3, qwen2, llama) in the Hugging
// Face layout, run block by block: capture the residual stream, resume from any block,
// intervene after any block, read logits only where asked.
//
// The residual-stream convention used everywhere in ltrun:
//   hidden[0]   = the token embeddings
//   hidden[l+1] = the residual after block l (l = 0 .. n_layers-1)
// all BEFORE the final norm. (HF's output_hidden_states differs in its last entry, which is
// after the final norm; ours is lens()'s input: lens(hidden[n_layers]) are the logits.)
#pragma once
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/model/config.h"

namespace ltrun::model {

// A change to the residual stream after a block, seen by every later block.
struct Intervention {
  enum class Kind { Zero, Add, Replace, Call };
  Kind kind = Kind::Call;
  // Zero: sequence positions, int64 [P] (every row) or bool [T] / [B, T];
  // Add: a tensor broadcastable to h [B, T, H]; Replace: a tensor of h's shape.
  at::Tensor tensor;
  std::function<void(int layer, at::Tensor& h)> fn;  // Call: may modify or reassign h

  static Intervention zero(at::Tensor positions) { return {Kind::Zero, std::move(positions), {}}; }
  static Intervention add(at::Tensor delta) { return {Kind::Add, std::move(delta), {}}; }
  static Intervention replace(at::Tensor h) { return {Kind::Replace, std::move(h), {}}; }
  static Intervention call(std::function<void(int, at::Tensor&)> f) {
    return {Kind::Call, {}, std::move(f)};
  }
};

// Which positions get logits. A layer scan asks for few, so it never holds [T, vocab]
// for every layer.
enum class Logits { None, Last, All, Positions };

// Keys and values of every block for incremental decoding (inference only: it is written
// in place). Batch size is fixed by the first forward that uses it.
class KVCache {
 public:
  explicit KVCache(int64_t capacity_hint = 0) : capacity_hint_(capacity_hint) {}
  int64_t length() const { return length_; }  // positions cached
  void clear() {
    layers_.clear();
    length_ = 0;
  }

 private:
  friend class Model;
  struct Layer {
    at::Tensor k, v;  // [B, kv_heads, capacity, head_dim]; the first length_ positions valid
  };
  std::vector<Layer> layers_;
  int64_t length_ = 0, capacity_hint_ = 0;
};

struct ForwardOptions {
  // [B, past + T], 1 for tokens and 0 for (left) padding; undefined: no padding.
  at::Tensor attention_mask;
  // [B, T]; undefined: from the mask as HF generate does (cumsum(mask) - 1, padding 1), or
  // past .. past + T - 1 without a mask.
  at::Tensor position_ids;
  bool capture = false;  // fill ForwardResult::hidden
  // Resume: run blocks from_layer .. from the residual `hidden` = hidden[from_layer]
  // [B, T, H] (input_ids may then be undefined). With from_layer 0, `hidden` replaces the
  // embeddings (soft prompts).
  int from_layer = 0;
  at::Tensor hidden;
  // Stop after this block (-1: the last). The final norm and head run only when the last
  // block has run.
  int to_layer = -1;
  // Key l: change the residual after block l (-1: after the embeddings) = hidden[l+1].
  std::map<int, Intervention> intervene;
  Logits logits = Logits::All;
  // Logits::Positions: int64 [P] (same for every row) or [B, P]; negative counts from the end.
  at::Tensor logit_positions;
  KVCache* cache = nullptr;  // read and extended; needs the whole stack (no from/to_layer)
};

struct ForwardResult {
  at::Tensor logits;  // [B, T | 1 | P, vocab] in the model's dtype; undefined if not asked
  std::vector<at::Tensor> hidden;  // capture: hidden[0 .. to_layer+1], undefined before from_layer
  at::Tensor residual;             // the residual after the last block run (before the final norm)
};

// One parameter with its HF checkpoint name; layer -1 for embeddings, final norm and head.
struct Param {
  std::string name;
  at::Tensor tensor;
  int layer;
};

class Model {
 public:
  // Loads DIR (config.json, model.safetensors or shards, generation_config.json). dtype
  // unset: float32 on CPU, the checkpoint's torch_dtype elsewhere. Every tensor is checked
  // against the config: a missing, unexpected or mis-shaped one is an error naming it.
  static Model load(const std::string& dir, c10::Device device = c10::kCPU,
                    std::optional<c10::ScalarType> dtype = std::nullopt);
  // A new model initialised as HF does (normal(0, 0.02) weights, zero biases, unit norms),
  // reproducibly from `seed`.
  static Model init(const Config& config, uint64_t seed, c10::Device device = c10::kCPU,
                    c10::ScalarType dtype = c10::kFloat);

  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  const Config& config() const;
  int n_layers() const;
  c10::Device device() const;
  c10::ScalarType dtype() const;

  // input_ids int64 [B, T].
  ForwardResult forward(const at::Tensor& input_ids, const ForwardOptions& options = {}) const;
  // The logit lens: lm_head(final_norm(h)) for h [..., hidden].
  at::Tensor lens(const at::Tensor& h) const;

  std::vector<Param> parameters() const;           // all, in checkpoint order
  std::vector<Param> parameters(int layer) const;  // those of block `layer`
  void set_requires_grad(bool on);
  void set_requires_grad(int layer, bool on);

  Model clone() const;  // deep copy (a tied head stays tied; requires_grad kept)
  // Converts in place; Param handles taken before point at the old tensors.
  Model& to(c10::Device device, std::optional<c10::ScalarType> dtype = std::nullopt);
  // Writes config.json (torch_dtype = the current dtype), generation_config.json and
  // model.safetensors (or shards of at most max_shard_bytes) into `dir`.
  void save(const std::string& dir, uint64_t max_shard_bytes = 0) const;

  struct Impl;

 private:
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ltrun::model
