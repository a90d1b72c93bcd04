// runtime/core/env.cpp: process, machine and file-system facts for run records.
#include "runtime/core/env.h"

#include <sys/stat.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>

#include "runtime/core/error.h"

namespace ltrun {

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

bool process_alive(long pid) {
  // (beyond pid_t, a pid would wrap: 2^32 as 0 would ask about our own process group)
  if (pid <= 0 || pid > long(std::numeric_limits<pid_t>::max())) return false;
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return false;  // EPERM: someone else's
  // A zombie (ended, not yet reaped) is gone: where PID 1 does not reap orphans (some
  // containers), a killed orphan stays a zombie for good.
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return true;  // no /proc: trust kill()
  const char state = stat[close + 2];
  return state != 'Z' && state != 'X' && state != 'x';
}

namespace {
std::string first_line(const char* path) {
  std::ifstream f(path);
  std::string line;
  if (!f || !std::getline(f, line)) return "";
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return line;
}
}  // namespace

std::string boot_id() { return first_line("/proc/sys/kernel/random/boot_id"); }
std::string machine_id() { return first_line("/etc/machine-id"); }

long long process_start_time(long pid) {
  if (pid <= 0) return -1;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  // "pid (comm) state ppid ...": comm may hold spaces and ')', so count from the last ')'
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22; i++)  // field 3 (state) is the first after ')'
    if (!(rest >> field)) return -1;
  try {
    return std::stoll(field);
  } catch (const std::exception&) {
    return -1;
  }
}

namespace {
std::string run_capture(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  if (pclose(p) != 0) return "";
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}
std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}
}  // namespace

std::string git_revision(const std::string& dir) {
  const std::string git = "git -C " + shell_quote(dir.empty() ? "." : dir);
  std::string rev = run_capture(git + " rev-parse HEAD 2>/dev/null");
  if (rev.empty()) return "";
  if (!run_capture(git + " status --porcelain --untracked-files=no 2>/dev/null").empty()) rev += "-dirty";
  return rev;
}

double unix_time() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string utc_timestamp() {
  double t = unix_time();
  time_t secs = static_cast<time_t>(t);
  int ms = static_cast<int>((t - double(secs)) * 1000.0);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d.%03d", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  return buf;
}

void check_regular_file(const std::string& path, unsigned long long max_bytes) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) fail("cannot read {}: {}", path, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail("cannot read {}: it is a directory", path);
  if (!S_ISREG(st.st_mode))
    fail("cannot read {}: not a regular file (a pipe, socket or device); give a file", path);
  if (static_cast<unsigned long long>(st.st_size) > max_bytes)
    fail("cannot read {}: {} bytes, more than the {} this reader accepts", path, st.st_size, max_bytes);
}

std::string read_file(const std::string& path, unsigned long long max_bytes) {
  check_regular_file(path, max_bytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read {}: {}", path, std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail("cannot read {}: {}", path, std::strerror(errno));
  return ss.str();
}

std::string absolute_path(const std::string& path) {
  std::error_code ec;
  auto p = std::filesystem::weakly_canonical(std::filesystem::absolute(path), ec);
  return ec ? path : p.string();
}

std::string dir_name(const std::string& path) {
  auto p = std::filesystem::path(path).parent_path().string();
  return p.empty() ? "." : p;
}

std::string base_name(const std::string& path) { return std::filesystem::path(path).filename().string(); }

bool file_exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

bool stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

void tune_allocator() {
#if defined(__GLIBC__)
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables && std::strstr(tunables, "glibc.malloc.")) return;
  for (const char* v : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_"})
    if (std::getenv(v)) return;
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest allowed value on 64-bit
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  mallopt(M_TOP_PAD, 64 << 20);
#endif
}

std::string human_bytes(double b) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (b >= 1024 && u < 6) b /= 1024, u++;
  return u == 0 ? fmt::format("{} B", (long long)b) : fmt::format("{:.1f} {}", b, units[u]);
}

long long machine_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  long long total = pages > 0 && page > 0 ? (long long)pages * page : 0;
  if (FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    long long kb = 0;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "SwapTotal: %lld kB", &kb) == 1) total += kb * 1024;
    std::fclose(f);
  }
  return total;
}

}  // namespace ltrun
