// runtime/io/atomic_file.h: write a file so that readers see either its old content or the
// complete new one, never a torn file (temporary file in the same folder, fsync, rename).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace ltrun::io {

class AtomicFile {
 public:
  // Creates a temporary file next to `path`; throws ltrun::Error naming `path` on failure.
  explicit AtomicFile(std::string path);
  // Removes the temporary file unless commit() succeeded.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t n);
  // fsync, rename over `path`, fsync the folder so the rename itself survives a crash.
  void commit();

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

void write_file_atomic(const std::string& path, std::string_view content);

}  // namespace ltrun::io
