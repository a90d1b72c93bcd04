// tests/io/load_speed_test.cpp: how long saving and loading a ~200 MB checkpoint takes.
// Hidden (not run by default, asserts no timing): `test_io "[.perf]" -s`.
#include <ATen/ATen.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "runtime/io/checkpoint.h"
#include "tests/io/io_test_util.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double resident_mb() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * ::sysconf(_SC_PAGESIZE) / 1e6;
}

}  // namespace

TEST_CASE("load speed of a 200 MB checkpoint", "[.perf][io]") {
  std::string dir = io_test::scratch("load_speed");
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (int i = 0; i < 50; ++i)  // 50 x 4 MiB of F32, like the layers of a small model
    tensors.emplace_back(fmt::format("layers.{}.weight", i), at::randn({1024, 1024}));

  auto t0 = std::chrono::steady_clock::now();
  ltrun::io::save_checkpoint(dir, tensors);
  double save_s = seconds_since(t0);

  // Drop the (fsynced, hence clean) file from the page cache: the first read is from disk.
  const std::string file = dir + "/model.safetensors";
  int fd = ::open(file.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);

  const double rss0 = resident_mb();
  t0 = std::chrono::steady_clock::now();
  auto c = ltrun::io::Checkpoint::open(dir);
  std::vector<at::Tensor> loaded;
  for (const auto& name : c.names()) loaded.push_back(c.tensor(name));
  double open_s = seconds_since(t0);
  const double rss_growth = resident_mb() - rss0;  // ~0: nothing was copied or read

  t0 = std::chrono::steady_clock::now();
  double sum = 0;
  for (const auto& t : loaded) sum += t.sum().item<double>();
  double touch_s = seconds_since(t0);

  uint64_t bytes = std::filesystem::file_size(file);
  WARN(fmt::format("{:.0f} MB: save {:.3f} s, open + {} tensor views {:.4f} s (resident "
                   "memory +{:.1f} MB), first read of all data (from disk) {:.3f} s (sum {:.1f})",
                   bytes / 1e6, save_s, loaded.size(), open_s, rss_growth, touch_s, sum));
  for (const auto& [name, t] : tensors) CHECK(c.tensor(name).equal(t));
  ltrun::fs::remove_tree(dir);
}
