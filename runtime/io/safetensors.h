// runtime/io/safetensors.h: one .safetensors file, read through a memory map and written
// atomically. Format: u64 little-endian header length N, N bytes of JSON header
// {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {str: str}}, then
// the data buffer that the offsets index into.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace at {
class Tensor;
}

namespace ltrun::io {

struct TensorInfo {
  std::string name;
  std::string dtype;            // as in the file: "F32", "BF16", ...
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte range in the data buffer

  uint64_t nbytes() const { return end - begin; }
};

// An open, validated, memory-mapped file. Copies share the mapping. Opening reads only the
// header; tensor data is paged in from the file when first touched.
class SafetensorsFile {
 public:
  // Throws ltrun::Error naming the file (and tensor) for anything the reference
  // implementation would reject: bad header length, invalid JSON, bad entries, unknown
  // dtypes, sizes that disagree with shapes, and gaps, overlaps or trailing bytes in the
  // data buffer.
  static SafetensorsFile open(const std::string& path);

  const std::string& path() const;
  const std::vector<TensorInfo>& tensors() const;  // in data-offset order
  bool has(const std::string& name) const;
  const TensorInfo& info(const std::string& name) const;
  // A CPU tensor of the stored dtype that views the mapping and keeps it alive. The mapping
  // is private: writing to the tensor never changes the file. A tensor whose data is not
  // aligned to its element size in the file (possible with other writers) is copied.
  at::Tensor tensor(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const;

 private:
  struct State;
  explicit SafetensorsFile(std::shared_ptr<const State> state);
  std::shared_ptr<const State> s_;
};

// Writes `tensors` (moved to CPU and made contiguous) to `path` atomically: a temporary file
// in the same folder, fsync, rename. Layout follows the reference writer: tensors sorted by
// descending dtype alignment then name, so every tensor is aligned to its element size,
// and the header padded with spaces to a multiple of 8 bytes.
void save_safetensors(const std::string& path,
                      const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace ltrun::io
