// runtime/io/atomic_file.cpp: temporary file + fsync + rename, with errors naming the file.
#include "runtime/io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "runtime/core/error.h"

namespace ltrun::io {
namespace {

std::string folder_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  // pid + counter keeps concurrent writers (threads, ranks) of one path apart; O_EXCL
  // guarantees it. Mode 0666 lets the umask decide, as for any newly created file.
  static std::atomic<uint64_t> counter{0};
  tmp_ = fmt::format("{}.tmp-{}-{}", path_, ::getpid(), counter++);
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  LT_CHECK(fd_ >= 0, "cannot create {} (temporary file for {}): {}", tmp_, path_,
           std::strerror(errno));
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

void AtomicFile::write(const void* data, size_t n) {
  auto p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t k = ::write(fd_, p, n);
    if (k < 0 && errno == EINTR) continue;
    LT_CHECK(k > 0, "cannot write {}: {}", path_, k < 0 ? std::strerror(errno) : "no progress");
    p += k;
    n -= static_cast<size_t>(k);
  }
}

void AtomicFile::commit() {
  LT_CHECK(::fsync(fd_) == 0, "cannot fsync {}: {}", tmp_, std::strerror(errno));
  int rc = ::close(fd_);
  fd_ = -1;
  LT_CHECK(rc == 0, "cannot close {}: {}", tmp_, std::strerror(errno));
  LT_CHECK(::rename(tmp_.c_str(), path_.c_str()) == 0, "cannot rename {} to {}: {}", tmp_,
           path_, std::strerror(errno));
  committed_ = true;
  int dir = ::open(folder_of(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {  // best effort: some file systems refuse fsync on a folder
    ::fsync(dir);
    ::close(dir);
  }
}

void write_file_atomic(const std::string& path, std::string_view content) {
  AtomicFile f(path);
  f.write(content.data(), content.size());
  f.commit();
}

}  // namespace ltrun::io
