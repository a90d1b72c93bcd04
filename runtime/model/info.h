// runtime/model/info.h: what a checkpoint folder holds, read from config.json and the
// safetensors headers alone (no tensor data is touched), for `ltrun model info`.
#pragma once
#include <cstdint>
#include <string>

#include "runtime/model/config.h"

namespace ltrun::model {

struct CheckpointInfo {
  std::string path;
  Config config;
  std::string dtypes;  // the tensors' dtypes as stored, e.g. "BF16" or "BF16, F32"
  // parameter counts by part of the model
  int64_t embeddings = 0, attention = 0, mlp = 0, norms = 0, head = 0, other = 0;
  int64_t parameters = 0;
  uint64_t bytes_on_disk = 0;  // all *.safetensors files

  std::string to_string() const;  // a short human-readable summary
};

CheckpointInfo describe(const std::string& dir);

}  // namespace ltrun::model
