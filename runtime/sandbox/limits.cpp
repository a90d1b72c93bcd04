// runtime/sandbox/limits.cpp: the seccomp filter, the cgroup of each program (or the process
// cap times address space where no cgroup can be made), and the timeout rule (limits.h).
#include "runtime/sandbox/limits.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "runtime/core/error.h"

namespace ltrun::sandbox::detail {
namespace {

// Refused with EPERM. Names, resolved for this architecture (a name it lacks is skipped).
constexpr const char* kRefused[] = {
    // namespaces: a new user namespace gives back every capability bwrap dropped
    "unshare", "setns",
    // mounts (a tmpfs, a bind over a read-only folder) and changing the root
    "mount", "umount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr",
    // reading or writing another process
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    // the kernel's own surfaces, reachable without privilege or with the namespace's
    "kexec_load", "kexec_file_load", "bpf", "perf_event_open", "keyctl", "add_key", "request_key",
    "open_by_handle_at", "name_to_handle_at", "init_module", "finit_module", "delete_module", "reboot",
    "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "userfaultfd", "syslog", "lookup_dcookie",
    "iopl", "ioperm", "uselib", "nfsservctl", "vhangup", "fanotify_init", "settimeofday", "clock_settime",
    "clock_adjtime", "adjtimex",
    // io_uring: a second way into the kernel that seccomp cannot see through
    "io_uring_setup", "io_uring_enter", "io_uring_register"};

constexpr uint64_t kNamespaceFlags[] = {CLONE_NEWNS,  CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
                                        CLONE_NEWUSER, CLONE_NEWPID,    CLONE_NEWNET};

std::string build_seccomp() {
  std::unique_ptr<void, void (*)(scmp_filter_ctx)> ctx(seccomp_init(SCMP_ACT_ALLOW), seccomp_release);
  LT_CHECK(ctx, "sandbox: seccomp_init failed");
  auto check = [](int rc, const char* what, const char* name) {
    LT_CHECK(rc == 0, "sandbox: seccomp: {} {}: {}", what, name, std::strerror(-rc));
  };
  for (const char* name : kRefused) {
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;
    check(seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EPERM), nr, 0), "rule for", name);
  }
  // clone's flags are its first argument on x86-64 and arm64 (the targets of this build);
  // one rule per flag, as libseccomp compares a masked argument for equality only
  for (const uint64_t f : kNamespaceFlags)
    check(seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, f, f)),
          "rule for", "clone");
  check(seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0), "rule for", "clone3");
  // typing into the terminal of whoever started us (the sandbox has its own session anyway)
  for (const unsigned long req : {(unsigned long)TIOCSTI, (unsigned long)TIOCLINUX})
    check(seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                           SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, req)),
          "rule for", "ioctl");
  // exported through a pipe-like memfd: seccomp_export_bpf writes to a file descriptor
  const int fd = int(::memfd_create("ltrun-seccomp", MFD_CLOEXEC));
  LT_CHECK(fd >= 0, "sandbox: memfd_create: {}", std::strerror(errno));
  const int rc = seccomp_export_bpf(ctx.get(), fd);
  std::string bpf;
  if (rc == 0) {
    ::lseek(fd, 0, SEEK_SET);
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) bpf.append(buf, size_t(n));
  }
  ::close(fd);
  check(rc, "export", "bpf");
  LT_CHECK(!bpf.empty() && bpf.size() % 8 == 0, "sandbox: seccomp: exported {} bytes, not a BPF program", bpf.size());
  return bpf;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool write_text(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  const int e = errno;
  ::close(fd);
  errno = e;
  return ok;
}

bool has_words(const std::string& text, std::initializer_list<const char*> words) {
  std::istringstream in(text);
  std::string w;
  int found = 0;
  while (in >> w)
    for (const char* x : words) found += w == x;
  return found == int(words.size());
}

// memory and pids for the children of dir: there already, or enabled now
bool give_controllers(const std::string& dir) {
  if (has_words(read_text(dir + "/cgroup.subtree_control"), {"memory", "pids"})) return true;
  return write_text(dir + "/cgroup.subtree_control", "+memory +pids");
}

// ltrun-<pid>[-n] cgroups of processes that are gone: what a killed ltrun could not remove
// (rmdir removes only a cgroup without processes and children; a live one stays)
void remove_stale(const std::string& dir) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
  if (!d) return;
  while (dirent* e = ::readdir(d.get())) {
    const std::string name = e->d_name;
    if (name.rfind("ltrun-", 0) != 0) continue;
    const long pid = std::atol(name.c_str() + 6);
    if (pid <= 0 || (::kill(pid_t(pid), 0) != 0 && errno == ESRCH)) ::rmdir((dir + "/" + name).c_str());
  }
}

// Whether a child can enter a program cgroup under `base` (what each launch does before exec);
// "" or why not.
std::string probe(const std::string& base) {
  try {
    ProgramCgroup cg(base, int64_t(64) << 20, 4);
    const pid_t pid = ::fork();  // the child only writes and exits (we may have threads)
    if (pid < 0) return fmt::format("fork: {}", std::strerror(errno));
    if (pid == 0) ::_exit(::write(cg.procs_fd(), "0", 1) == 1 ? 0 : 1);
    int ws = 0;
    while (::waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) return "a process cannot enter a cgroup made under " + base;
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

CgroupBase find_cgroup_base() {
  CgroupBase b;
  struct statfs sf {};
  if (::statfs("/sys/fs/cgroup", &sf) != 0 || sf.f_type != CGROUP2_SUPER_MAGIC) {
    b.reason = "/sys/fs/cgroup is not a cgroup v2 file system";
    return b;
  }
  std::istringstream lines(read_text("/proc/self/cgroup"));
  std::string line, rel;
  while (std::getline(lines, line))
    if (line.rfind("0::", 0) == 0) rel = line.substr(3);
  if (rel.empty() || rel[0] != '/') {
    b.reason = "/proc/self/cgroup names no cgroup v2 path";
    return b;
  }
  const std::string own = "/sys/fs/cgroup" + (rel == "/" ? "" : rel);
  if (!has_words(read_text(own + "/cgroup.controllers"), {"memory", "pids"})) {
    b.reason = own + " offers no memory and pids controllers";
    return b;
  }
  if (::access((own + "/cgroup.subtree_control").c_str(), W_OK) != 0) {
    b.reason = own + " is not writable (not delegated to this user)";
    return b;
  }
  remove_stale(own);
  auto usable = [&b](const std::string& dir) {
    b.reason = probe(dir);
    if (b.reason.empty()) b.dir = dir;
    return b;
  };
  if (give_controllers(own)) return usable(own);
  // A cgroup with processes cannot give controllers to children: when the only process is
  // ours, it moves into a leaf of its own (as a container runtime does), else it is not ours
  // to rearrange.
  const std::string me = std::to_string(::getpid());
  std::istringstream procs(read_text(own + "/cgroup.procs"));
  std::string pid;
  int others = 0;
  while (procs >> pid) others += pid != me;
  if (others) {
    b.reason = fmt::format("{} holds {} other processes (a cgroup with processes cannot give controllers to "
                           "children)", own, others);
    return b;
  }
  const std::string leaf = own + "/ltrun-" + me;
  if ((::mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) || !write_text(leaf + "/cgroup.procs", me)) {
    b.reason = fmt::format("cannot move ltrun into {}: {}", leaf, std::strerror(errno));
    ::rmdir(leaf.c_str());
    return b;
  }
  if (give_controllers(own)) return usable(own);
  b.reason = fmt::format("{}: cannot enable memory and pids for its children: {}", own, std::strerror(errno));
  write_text(own + "/cgroup.procs", me);  // back where we were
  ::rmdir(leaf.c_str());
  return b;
}

}  // namespace

const std::string& seccomp_bpf() {
  static const std::string bpf = build_seccomp();
  return bpf;
}

Bound fallback_bound(int64_t memory_mb, int nproc) {
  Bound b;
  b.kind = "nproc*as";
  b.nproc = int(std::clamp<int64_t>(memory_mb / kFallbackProcessMb, 1, std::max(1, nproc)));
  b.process_mb = memory_mb / b.nproc;
  return b;
}

const CgroupBase& cgroup_base() {
  static const CgroupBase b = find_cgroup_base();
  return b;
}

ProgramCgroup::ProgramCgroup(const std::string& base, int64_t memory_bytes, int pids) {
  static std::atomic<uint64_t> counter{0};
  dir_ = fmt::format("{}/ltrun-{}-{}", base, ::getpid(), counter++);
  LT_CHECK(::mkdir(dir_.c_str(), 0755) == 0, "sandbox: mkdir {}: {}", dir_, std::strerror(errno));
  auto set = [&](const char* file, const std::string& v, bool required) {
    if (!write_text(dir_ + "/" + file, v) && required) {
      const std::string why = std::strerror(errno);
      ::rmdir(dir_.c_str());
      fail("sandbox: {}/{} = {}: {}", dir_, file, v, why);
    }
  };
  set("memory.max", std::to_string(memory_bytes), true);
  set("memory.swap.max", "0", false);   // absent without swap accounting
  set("memory.oom.group", "1", false);  // Linux >= 4.19
  set("pids.max", std::to_string(pids), true);
  procs_fd_ = ::open((dir_ + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  if (procs_fd_ < 0) {
    const std::string why = std::strerror(errno);
    ::rmdir(dir_.c_str());
    fail("sandbox: {}/cgroup.procs: {}", dir_, why);
  }
}

// the count `key` of a cgroup's "KEY N" events file (memory.events, pids.events); 0 when absent
static int64_t event_count(const std::string& file, const std::string& want) {
  std::istringstream in(read_text(file));
  std::string key;
  int64_t v = 0;
  while (in >> key >> v)
    if (key == want) return v;
  return 0;
}

int64_t ProgramCgroup::oom_kills() const { return event_count(dir_ + "/memory.events", "oom_kill"); }
int64_t ProgramCgroup::pids_max_hits() const { return event_count(dir_ + "/pids.events", "max"); }


ProgramCgroup::~ProgramCgroup() {
  if (procs_fd_ >= 0) ::close(procs_fd_);
  // what is left (normally nothing: bwrap's pid namespace died with it); cgroup.kill from 5.14
  if (!write_text(dir_ + "/cgroup.kill", "1")) {
    std::istringstream procs(read_text(dir_ + "/cgroup.procs"));
    for (long pid; procs >> pid;) ::kill(pid_t(pid), SIGKILL);
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (::rmdir(dir_.c_str()) != 0 && errno == EBUSY && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  // still busy: removed by the next ltrun's remove_stale once this process is gone
}

bool ended_by_timeout(bool we_killed, int wait_status, const std::string& status_json) {
  if (!we_killed) return false;
  if (!WIFSIGNALED(wait_status) || WTERMSIG(wait_status) != SIGKILL) return false;  // it exited first
  return status_json.find("\"exit-code\"") == std::string::npos;  // bwrap saw the program exit first
}

}  // namespace ltrun::sandbox::detail
