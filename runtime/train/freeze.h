// runtime/train/freeze.h: freeze specs as data: which parameters of a model a plan selects
// (blocks by number, attention / mlp / norms inside them, embeddings, final norm, head), and
// freezing or training only that selection. Parameters are matched by the part their
// architecture tags them with (model::ParamPart), so a spec means the same on every layer
// kind: "attention" is a block's token mixer (attention, Mamba2, ...), q/k norms included.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "runtime/model/model.h"

namespace ltrun::train {

// One selected part. A spec is a union of parts.
struct Part {
  enum class Kind { Blocks, Embeddings, FinalNorm, LmHead, All };
  enum class Sub { All, Attention, Mlp, Norms };  // inside the chosen blocks
  Kind kind = Kind::Blocks;
  std::set<int> layers;  // Kind::Blocks: block numbers as in model.layers.N
  Sub sub = Sub::All;
};

struct Spec {
  std::vector<Part> parts;  // empty: nothing

  static Spec blocks(std::set<int> layers, Part::Sub sub = Part::Sub::All);
  static Spec named(const std::string& name);  // embeddings | final_norm | lm_head | all
  Spec& add(const Spec& other);
  std::string describe() const;  // "blocks 0-3 (mlp) + embeddings"
};

// Blocks 0 .. round(fraction * n) - 1 (shallow) and the rest (deep); blocks a..b inclusive;
// the k blocks in the middle (the lower middle when n - k is odd).
std::set<int> shallow_layers(int n_layers, double fraction);
std::set<int> deep_layers(int n_layers, double fraction);
std::set<int> range_layers(int a, int b);
std::set<int> middle_layers(int n_layers, int k);

// Whether `spec` selects parameter `p` of `m`. A tied head is the embedding matrix: lm_head
// and embeddings select the same tensor.
bool selects(const model::Model& m, const Spec& spec, const model::Param& p);

struct FreezeReport {
  int64_t trainable = 0, total = 0;  // parameter elements
  std::vector<std::string> notes;    // e.g. the tied-embeddings note
};

// A plan is one whole spec, so each call sets every parameter (combine parts in one spec):
// freeze trains everything but the selection, train_only trains only the selection. (A model
// loaded for inference has nothing trainable, so "freeze the rest" must set the rest.)
// Errors on block numbers outside the model.
FreezeReport freeze(model::Model& m, const Spec& spec);
FreezeReport train_only(model::Model& m, const Spec& spec);
// Counts as the report does, without changing anything.
FreezeReport count_trainable(const model::Model& m);

// The lowest block with a trainable parameter, -1 if the embeddings (or a tied head) are
// trainable, n_layers if only the final norm / head are, n_layers + 1 if nothing is.
int lowest_trainable_layer(const model::Model& m);

}  // namespace ltrun::train
