// runtime/core/sha256.h: SHA-256 (FIPS 180-4) for script texts, inputs and artifacts, and the
// one bounded, interruptible way files are hashed.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace ltrun {

std::string sha256_hex(std::string_view data);

// The same, over bytes given in pieces (a blob read a chunk at a time); hex() once, at the end.
class Sha256 {
 public:
  void update(const void* data, size_t n);
  std::string hex();

 private:
  void block(const unsigned char* p);
  uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  unsigned char buf[64];
  size_t buf_len = 0;
  uint64_t total = 0;
};

// Is `resolved` (absolute, symlinks resolved) under /proc, /sys or /dev? Their files are not
// data on disk: /proc/self/pagemap says 0 bytes and reads without end, devices block or never
// end. No input or artifact is ever read from there.
bool pseudo_file_path(const std::string& resolved);

// The sha256 of the regular file open as `fd`, read from its start: at most the size fstat
// gives now (a file that turns out longer than that, one still being written or a pseudo-file,
// is an error), checking for Ctrl-C (check_interrupt) every chunk unless an InterruptChecked
// scope is alive (its code stops by itself: the training loop saving its last checkpoint). `sink`, when given, receives
// the bytes as they are read. Errors (ltrun::Error) name `shown`.
std::string sha256_fd(int fd, const std::string& shown,
                      const std::function<void(const char*, size_t)>& sink = {});

// A regular file's sha256: `path` is opened without blocking (O_NONBLOCK: a FIFO or a device
// never holds the open), and refused, naming it, unless what was opened is a regular file that
// lies, symlinks resolved, outside /proc, /sys and /dev; then read as sha256_fd reads.
std::string sha256_file(const std::string& path);

}  // namespace ltrun
