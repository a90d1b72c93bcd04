// runtime/model/model.h: a decoder-only language model in the Hugging Face layout (the
// architectures of arch.h: qwen3, qwen2, llama, nemotron_h), run block by block: capture the
// residual stream and named sites inside blocks, resume from any block, intervene at any
// hook point, decode with a per-layer state, read logits only where asked.
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

// Named points inside a layer where activations can be captured or changed. Every layer
// produces resid_post (its output, the residual stream after it: hidden[l+1]); the others
// exist where the layer has the matching part (Layer kinds list theirs: see arch.h):
//   mixer_out  the token mixer's output (attention, Mamba2, ...) before it joins the residual
//   resid_mid  the residual after the mixer, before the MLP (layers with both)
//   mlp_out    the MLP's output before it joins the residual
enum class Site { ResidPost, ResidMid, MixerOut, MlpOut };
const char* site_name(Site s);      // "resid_post", ...
Site parse_site(const std::string& name);  // error naming the known sites

// A hook point: a site of a layer. Layer -1 is the embeddings (resid_post only). An int
// converts to (layer, resid_post), so `intervene[l]` keeps meaning "after block l".
struct HookPoint {
  int layer = 0;
  Site site = Site::ResidPost;
  HookPoint(int l = 0, Site s = Site::ResidPost) : layer(l), site(s) {}  // NOLINT: implicit
  bool operator<(const HookPoint& o) const {
    return layer != o.layer ? layer < o.layer : int(site) < int(o.site);
  }
  bool operator==(const HookPoint& o) const { return layer == o.layer && site == o.site; }
};

// A change to the activation at a hook point, seen by everything after it.
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

// What one layer keeps between decoding steps (keys and values of an attention layer, conv
// and SSM state of a Mamba2 layer); defined by each layer kind (arch.h).
struct LayerState {
  virtual ~LayerState() = default;
  // Row i: this state's first lengths[i] positions (this state has one row), left-padded to
  // `width` positions, as a new state of lengths.size() rows. Null when the kind cannot cut
  // its state at a position (a recurrent state holds only its last position: Mamba2).
  virtual std::unique_ptr<LayerState> prefix_rows(const std::vector<int64_t>& lengths,
                                                  int64_t width) const {
    return nullptr;
  }
  // Keep (and repeat) rows: row i of the new state is row rows[i] of this one (rows: int64
  // [R], on any device). Expands a prompt's state to its samples and drops finished rows.
  virtual void select_rows(const at::Tensor& rows);
  // Continuous batching (generate's refill): this state, after `past` positions, and `other`
  // (the same kind, after `other_past` positions), whose rows follow this state's, both
  // right-aligned to `width` positions: a row's last position stays last, the first
  // past - width positions are dropped (padding in every row: the caller's mask says so) or
  // width - past zero positions prepended (padding, masked by the caller). A recurrent state
  // (Mamba2, Gated DeltaNet) holds no positions: its rows are concatenated.
  virtual void append_rows(const LayerState& other, int64_t past, int64_t other_past, int64_t width);
  // This state's rows, then those of each of `others` (the same kind, holding the same
  // positions), in one new buffer: several prefix_rows results run side by side.
  virtual void cat_rows(const std::vector<const LayerState*>& others);
};

// The decode state of every layer for incremental decoding (inference only: it is written in
// place). Batch size and the first block (ForwardOptions::from_layer) are fixed by the first
// forward that uses it.
class DecodeState {
 public:
  explicit DecodeState(int64_t capacity_hint = 0);
  ~DecodeState();
  DecodeState(DecodeState&&) noexcept;
  DecodeState& operator=(DecodeState&&) noexcept;
  int64_t length() const { return length_; }  // positions consumed
  int64_t batch() const { return batch_; }    // rows (-1 before the first forward)
  void clear();
  // Row i becomes row rows[i] (int64 [R], each in 0..batch-1; repeats allowed) in every
  // layer: a prefilled prompt expanded to its samples, or finished rows dropped.
  void select_rows(const at::Tensor& rows);
  // The rows of `other` (a state of the same model and first block that has run) after this
  // state's rows, both right-aligned to `width` positions (LayerState::append_rows): new
  // prompts joining a running decode batch. This state's first length() - width positions
  // must be padding in every row; width >= other.length().
  void append_rows(const DecodeState& other, int64_t width);

 private:
  friend class Model;
  friend class StaticCache;  // static_decode.h: its layers' tensors are views of fixed buffers
  std::vector<std::unique_ptr<LayerState>> layers_;  // null for layers without state (MLP)
  int64_t length_ = 0, capacity_hint_ = 0, batch_ = -1;
  int from_layer_ = 0;  // layers below it hold nothing
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
  // Key l (= HookPoint{l, resid_post}): change the residual after block l (-1: after the
  // embeddings) = hidden[l+1]. Key {l, site}: change that site inside block l.
  std::map<HookPoint, Intervention> intervene;
  // Fill ForwardResult::sites with these sites of every block run that produces them.
  std::vector<Site> capture_sites;
  Logits logits = Logits::All;
  // Logits::Positions: int64 [P] (same for every row) or [B, P]; negative counts from the end.
  at::Tensor logit_positions;
  // Read and extended. Runs to the last block; from_layer must be the one the state started
  // with (a state for blocks from_layer.. only: e.g. prefix_rows of a resumed pass). With
  // to_layer, the state must hold no block after it (e.g. prefix_rows_at's state of one block).
  DecodeState* state = nullptr;
};

struct ForwardResult {
  at::Tensor logits;  // [B, T | 1 | P, vocab] in the model's dtype; undefined if not asked
  std::vector<at::Tensor> hidden;  // capture: hidden[0 .. to_layer+1], undefined before from_layer
  at::Tensor residual;             // the residual after the last block run (before the final norm)
  std::map<HookPoint, at::Tensor> sites;  // capture_sites: after interventions at that point
};

// What a parameter belongs to, as its architecture tags it: freeze specs and weight decay
// select by part, never by name. Mixer: attention, Mamba2 or linear attention (with the
// norms inside it, e.g. q_norm); Norm: a layer's own norms and the final norm (layer -1).
enum class ParamPart { Embeddings, Mixer, Mlp, Norm, Head };
const char* part_name(ParamPart p);  // "embeddings", "mixer", "mlp", "norm", "head"

// One parameter with its HF checkpoint name; layer -1 for embeddings, final norm and head.
// decay: whether AdamW's weight decay applies (not to biases, norms, Mamba2's A_log, D, dt_bias).
struct Param {
  std::string name;
  at::Tensor tensor;
  int layer;
  ParamPart part = ParamPart::Mixer;
  bool decay = true;
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
  // The kind of block `layer` ("decoder", "mamba", "attention", "mlp", ...) and the sites
  // it produces (resid_post always).
  const std::string& layer_kind(int layer) const;
  std::vector<Site> layer_sites(int layer) const;
  c10::Device device() const;
  c10::ScalarType dtype() const;

  // input_ids int64 [B, T].
  ForwardResult forward(const at::Tensor& input_ids, const ForwardOptions& options = {}) const;
  // One decode step over a static cache (static_decode.h; inference): ids int64 [B] (one new
  // token per row), row b's token at position lengths[b] (int64 [B]: the positions it holds),
  // attending over its positions 0..lengths[b] of the state's `width`; every layer's state
  // (all blocks) holds exactly B rows and is written in place or reassigned. Returns the
  // logits [B, vocab]. No host synchronisation (no id range check: the ids are sampled), so
  // a CUDA graph can hold it.
  at::Tensor decode_step(const at::Tensor& ids, const at::Tensor& lengths, int64_t width,
                         DecodeState& state) const;
  // The logit lens: lm_head(final_norm(h)) for h [..., hidden].
  at::Tensor lens(const at::Tensor& h) const;
  // The lens in two steps, for callers that read logits in pieces of the vocabulary (never
  // [rows, vocab] at once): lens(h) = lens_norm(h) · head()ᵀ, head() being the LM head
  // [vocab, hidden] (the embeddings when tied).
  at::Tensor lens_norm(const at::Tensor& h) const;
  const at::Tensor& head() const;
  // A state whose row i holds the first lengths[i] positions of `shared` (a state of one
  // row), left-padded to the longest: a prefix common to many rows runs once, then each row
  // goes on from its own length (attention_mask [rows, width + T] marks the padding). Empty
  // when a layer's state cannot be cut at a position (LayerState::prefix_rows).
  std::optional<DecodeState> prefix_rows(const DecodeState& shared,
                                         const std::vector<int64_t>& lengths) const;
  // Block `layer` alone, for several shared prefixes at once: the rows of
  // prefix_rows(*shared[0], lengths) at that block, then those of shared[1], ... (each a state
  // of one row that has run through `layer`, all of the same length). A forward from `layer`
  // to `layer` then runs every source's rows through the block in one call (LayerTracer's
  // prefix method: one call per block, not one per block and resumption). Empty as
  // prefix_rows.
  std::optional<DecodeState> prefix_rows_at(int layer, const std::vector<const DecodeState*>& shared,
                                            const std::vector<int64_t>& lengths) const;

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
