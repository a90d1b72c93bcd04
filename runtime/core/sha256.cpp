// runtime/core/sha256.cpp: a plain SHA-256, so the store needs no crypto library.
#include "runtime/core/sha256.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/core/interrupt.h"

namespace ltrun {
namespace {

constexpr uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }


}  // namespace

void Sha256::block(const unsigned char* p) {
  uint32_t w[64];
  for (int i = 0; i < 16; i++)
    w[i] = uint32_t(p[4 * i]) << 24 | uint32_t(p[4 * i + 1]) << 16 | uint32_t(p[4 * i + 2]) << 8 |
           uint32_t(p[4 * i + 3]);
  for (int i = 16; i < 64; i++) {
    uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int i = 0; i < 64; i++) {
    uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
    uint32_t ch = (e & f) ^ (~e & g);
    uint32_t t1 = hh + S1 + ch + K[i] + w[i];
    uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
    uint32_t mj = (a & b) ^ (a & c) ^ (b & c);
    uint32_t t2 = S0 + mj;
    hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
  }
  h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

void Sha256::update(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  total += n;
  while (n > 0) {
    size_t take = std::min(n, 64 - buf_len);
    std::memcpy(buf + buf_len, p, take);
    buf_len += take; p += take; n -= take;
    if (buf_len == 64) { block(buf); buf_len = 0; }
  }
}

std::string Sha256::hex() {
  uint64_t bits = total * 8;
  unsigned char pad = 0x80, zero = 0;
  update(&pad, 1);
  while (buf_len != 56) update(&zero, 1);
  unsigned char len[8];
  for (int i = 0; i < 8; i++) len[i] = (unsigned char)(bits >> (56 - 8 * i));
  update(len, 8);
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (uint32_t v : h)
    for (int s = 28; s >= 0; s -= 4) out += digits[(v >> s) & 15];
  return out;
}

std::string sha256_hex(std::string_view data) {
  Sha256 s;
  s.update(reinterpret_cast<const unsigned char*>(data.data()), data.size());
  return s.hex();
}

bool pseudo_file_path(const std::string& resolved) {
  for (const char* root : {"/proc", "/sys", "/dev"}) {
    const size_t n = std::strlen(root);
    if (resolved.compare(0, n, root) == 0 && (resolved.size() == n || resolved[n] == '/')) return true;
  }
  return false;
}

std::string sha256_fd(int fd, const std::string& shown, const std::function<void(const char*, size_t)>& sink) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail("cannot read {}: {}", shown, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail("{} is not a regular file; only regular files are hashed", shown);
  const uint64_t size = uint64_t(st.st_size);
  Sha256 s;
  std::vector<char> buf(size_t(1) << 20);
  uint64_t got = 0;
  for (;;) {
    // a file of many GB on a slow disk: Ctrl-C still stops it, unless the code that hashes it
    // honours Ctrl-C itself (InterruptChecked: the training loop writing the checkpoint of its
    // stop, manifest included)
    if (!interrupt_checked()) check_interrupt();
    // one byte past the size: a file longer than fstat says is refused, never read to its end
    const size_t want = size_t(std::min<uint64_t>(buf.size(), size + 1 - got));
    const ssize_t n = ::pread(fd, buf.data(), want, off_t(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("cannot read {}: {}", shown, std::strerror(errno));
    if (n == 0) break;
    if (got + uint64_t(n) > size)
      fail("{} is longer than the {} bytes its size said when it was opened: it is being written, or is not a "
           "file on disk; not hashed", shown, size);
    s.update(reinterpret_cast<const unsigned char*>(buf.data()), size_t(n));
    if (sink) sink(buf.data(), size_t(n));
    got += uint64_t(n);
  }
  return s.hex();
}

std::string sha256_file(const std::string& path) {
  // stat first: /proc and /sys are refused before anything there is opened
  char real[PATH_MAX];
  if (::realpath(path.c_str(), real) && pseudo_file_path(real))
    fail("{}{} lies under /proc, /sys or /dev: not a file on disk; refused", path,
         path == real ? "" : " (" + std::string(real) + ")");
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) fail("cannot read {}: {}", path, std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail("cannot read {}: {}", path, std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    fail("{} is {}, not a regular file; refused", path,
         S_ISDIR(st.st_mode) ? "a folder" : S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISCHR(st.st_mode) ? "a character device"
         : S_ISBLK(st.st_mode) ? "a block device" : S_ISSOCK(st.st_mode) ? "a socket" : "not a regular file");
  // again on what was opened: the path may have been swapped for a link into /proc since
  char link[PATH_MAX];
  const ssize_t n = ::readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), link, sizeof link - 1);
  if (n > 0 && pseudo_file_path(std::string(link, size_t(n))))
    fail("{} ({}) lies under /proc, /sys or /dev: not a file on disk; refused", path, std::string(link, size_t(n)));
  return sha256_fd(fd, path);
}

}  // namespace ltrun
