// runtime/sandbox/bounded.cpp: see bounded.h. The child's set-up between fork and exec is that
// of sandbox.cpp (its cgroup first, then not root, then exec); the rlimits are prlimit's, inside.
#include "runtime/sandbox/bounded.h"

#include <fmt/format.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "runtime/core/error.h"
#include "runtime/core/interrupt.h"
#include "runtime/sandbox/limits.h"

namespace ltrun::sandbox {

namespace {
constexpr uid_t kNobody = 65534;
constexpr int kBwrapPids = 4;  // bwrap itself and its init in the pid namespace, and a margin
}  // namespace

struct BoundedCommand::Cgroup {
  detail::ProgramCgroup group;
  Cgroup(const std::string& base, int64_t bytes, int pids) : group(base, bytes, pids) {}
};

void validate(const CommandBounds& b) {
  LT_CHECK(b.memory_mb >= 256 && b.memory_mb <= (int64_t(1) << 24), "--memory-mb {}: expected [256, {}]", b.memory_mb,
           int64_t(1) << 24);
  LT_CHECK(b.nproc >= 16 && b.nproc <= 65536, "--nproc {}: expected [16, 65536] (processes and threads at once; "
           "LibTorch alone starts one thread per core)", b.nproc);
  LT_CHECK(b.disk_mb >= 16 && b.disk_mb <= (int64_t(1) << 24), "--disk-mb {}: expected [16, {}]", b.disk_mb,
           int64_t(1) << 24);
  LT_CHECK(std::isfinite(b.timeout) && b.timeout > 0 && b.timeout <= 30 * 86400,
           "--timeout {}: expected seconds in (0, {}]", b.timeout, 30 * 86400);
}

BoundedCommand::BoundedCommand(const CommandBounds& b) : b_(b) {
  validate(b);
  if (const auto& base = detail::cgroup_base(); !base.dir.empty()) {
    try {
      cgroup_ = std::make_unique<Cgroup>(base.dir, b.memory_mb << 20, b.nproc + kBwrapPids);
    } catch (const Error&) {
      // (a limit on descendants, a cgroup removed under us): the rlimits below, which describe() names
    }
  }
  // RLIMIT_NPROC never binds uid 0, nor a user namespace that root made (its uid is root's)
  as_nobody_ = !cgroup_ && ::geteuid() == 0;
}

BoundedCommand::~BoundedCommand() = default;

std::string BoundedCommand::describe() const {
  const std::string mem =
      cgroup_ ? fmt::format("{} MiB of memory for all its processes (cgroup)", b_.memory_mb)
      : b_.address_space
          ? fmt::format("{} MiB of address space per process (no cgroup v2 here: {})", b_.memory_mb,
                        detail::cgroup_base().reason)
          : fmt::format("memory not bounded (no cgroup v2 here: {}; on a GPU an address-space bound would stop CUDA)",
                        detail::cgroup_base().reason);
  return fmt::format("{}; {} processes and threads{}; {} MiB of disk (its working folder, and the largest file it "
                     "writes); {} s of wall time", mem, b_.nproc, cgroup_ ? " (cgroup)" : as_nobody_ ? " (as uid 65534)" : "",
                     b_.disk_mb, b_.timeout);
}

std::vector<std::string> BoundedCommand::wrap(const std::vector<std::string>& inner) const {
  // bwrap's init counts too; a file may pass the working folder's size by a little, so that a
  // full folder says "No space left on device" (an error the script sees) before SIGXFSZ kills
  std::vector<std::string> a{"/usr/bin/prlimit", "--nproc=" + std::to_string(b_.nproc + 1),
                             "--fsize=" + std::to_string((b_.disk_mb + 16) << 20), "--core=0"};
  if (!cgroup_ && b_.address_space) a.push_back("--as=" + std::to_string(b_.memory_mb << 20));
  a.push_back("--");
  a.insert(a.end(), inner.begin(), inner.end());
  return a;
}

CommandExit BoundedCommand::run(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  LT_CHECK(!argv.empty() && argv[0][0] == '/', "sandbox: the command must be an absolute path");
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const int procs_fd = cgroup_ ? cgroup_->group.procs_fd() : -1;
  const bool drop = as_nobody_;
  const pid_t parent = ::getpid();
  int err[2];
  LT_CHECK(::pipe2(err, O_CLOEXEC) == 0, "sandbox: pipe: {}", std::strerror(errno));
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  LT_CHECK(pid >= 0, "sandbox: fork: {}", std::strerror(errno));
  if (pid == 0) {  // only async-signal-safe calls until exec
    ::close(err[0]);
    auto die = [&] {
      const int e = errno;
      (void)!::write(err[1], &e, sizeof e);
      ::_exit(127);
    };
    ::setpgid(0, 0);
    if (procs_fd >= 0 && ::write(procs_fd, "0", 1) != 1) die();  // bwrap and all it starts are inside
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (drop && (::setgroups(0, nullptr) != 0 || ::setgid(kNobody) != 0 || ::setuid(kNobody) != 0)) die();
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // after setuid, which clears it
    if (::getppid() != parent) ::_exit(127);
    ::execve(args[0], args.data(), envp.data());
    die();
  }
  ::close(err[1]);
  ::setpgid(pid, pid);
  CommandExit x;
  const auto deadline = start + std::chrono::duration<double>(b_.timeout);
  int ws = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &ws, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) fail("sandbox: waitpid: {}", std::strerror(errno));
    if (!x.timed_out && !x.interrupted && (std::chrono::steady_clock::now() >= deadline || interrupt_requested())) {
      x.interrupted = interrupt_requested();
      x.timed_out = !x.interrupted;
      ::kill(-pid, SIGKILL);  // bwrap; what runs inside dies with it (--die-with-parent, its pid namespace)
      ::kill(pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  x.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int e = 0;
  const bool failed = ::read(err[0], &e, sizeof e) == ssize_t(sizeof e);
  ::close(err[0]);
  if (failed) fail("sandbox: cannot start {}: {}", argv[0], std::strerror(e));
  if (WIFEXITED(ws)) x.code = WEXITSTATUS(ws);
  if (WIFSIGNALED(ws)) x.signal = WTERMSIG(ws), x.code = 128 + x.signal;
  if (cgroup_) {
    x.oom_kills = cgroup_->group.oom_kills();
    x.pids_refused = cgroup_->group.pids_max_hits();
  }
  return x;
}

std::string ended_by(const CommandExit& e, const CommandBounds& b) {
  if (e.timed_out) return fmt::format("its wall-clock bound (--timeout {} s)", b.timeout);
  if (e.oom_kills > 0) return fmt::format("its memory bound (--memory-mb {}: the kernel's OOM killer)", b.memory_mb);
  // bwrap reports a signal n of its program as exit code 128 + n
  if (e.signal == SIGXFSZ || e.code == 128 + SIGXFSZ)
    return fmt::format("its disk bound (--disk-mb {}: a file grew past it)", b.disk_mb);
  if (e.pids_refused > 0) return fmt::format("its process bound (--nproc {}: {} forks refused)", b.nproc, e.pids_refused);
  return "";
}

}  // namespace ltrun::sandbox
