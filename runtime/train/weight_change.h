// runtime/train/weight_change.h: how far training moved each layer: the L2 norm of
// (trained - base) over all parameters of a block, and of the non-block parts.
#pragma once
#include <vector>

#include "runtime/core/fields.h"
#include "runtime/model/model.h"

namespace ltrun::train {

struct WeightChange {
  std::vector<double> layers;     // [n_layers]: ||W_trained - W_base||_2 over block l's tensors
  std::vector<double> relative;   // the same divided by ||W_base||_2 of the block
  double embeddings = 0, final_norm = 0, lm_head = 0;  // lm_head 0 when tied
};

// By key (runtime/core/fields.h): layers, relative, embeddings, final_norm, lm_head.
const Fields<WeightChange>& weight_change_fields();

// Errors when the models differ in architecture or shape.
WeightChange weight_change(const model::Model& trained, const model::Model& base);

}  // namespace ltrun::train
