// runtime/sandbox/limits.h: what bounds a sandboxed program as a whole (a cgroup v2 where one
// can be made, else a process cap times a per-process address space), the seccomp filter
// handed to bwrap, and the timeout rule of the supervisor. Inside the sandbox area and its tests;
// the filter also guards `rerun --sandbox` (runtime/cli/replay_sandbox.cpp).
#pragma once
#include <cstdint>
#include <string>

namespace ltrun::sandbox::detail {

// The seccomp filter (libseccomp, exported as a classic BPF program for `bwrap --seccomp FD`):
// EPERM for unshare, setns, clone with a namespace flag, the mount family, pivot_root, chroot,
// ptrace and its relatives, kexec, bpf, perf_event_open, the key ring, open_by_handle_at, module
// loading, io_uring, ...; ENOSYS for clone3 (its flags sit in memory a filter cannot read;
// glibc then falls back to clone, which the filter checks). Built once; an error names the call.
const std::string& seccomp_bpf();

// Memory bound of a program as a whole.
struct Bound {
  std::string kind;        // "cgroup" or "nproc*as" ("as", per process only: unsafe_local_exec)
  int nproc = 0;           // processes (and threads) the program may have at once
  int64_t process_mb = 0;  // RLIMIT_AS of each
};
// Where no cgroup can be made: nproc * process_mb <= memory_mb, with process_mb at least
// kFallbackProcessMb where memory_mb allows it (Python needs room of its own), nproc at most
// the asked one. kind "nproc*as".
constexpr int64_t kFallbackProcessMb = 256;
Bound fallback_bound(int64_t memory_mb, int nproc);

// The cgroup v2 folder in which each program gets a cgroup of its own, or "" and why not
// (checked once per process): /sys/fs/cgroup must be cgroup2, and either our own cgroup can
// give its children the memory and pids controllers (the root, or a delegated cgroup that holds
// only this process, which then moves itself into a leaf `ltrun-<pid>` first: a cgroup with
// processes cannot give controllers to children).
struct CgroupBase {
  std::string dir, reason;
};
const CgroupBase& cgroup_base();

// One program's cgroup: memory.max (no swap), pids.max, memory.oom.group (an OOM kill ends
// the whole program). The child writes "0" to procs_fd() before exec, so bwrap and everything
// it starts is inside. The destructor kills what is left and removes the folder.
class ProgramCgroup {
 public:
  ProgramCgroup(const std::string& base, int64_t memory_bytes, int pids);
  ~ProgramCgroup();
  ProgramCgroup(const ProgramCgroup&) = delete;
  ProgramCgroup& operator=(const ProgramCgroup&) = delete;
  int procs_fd() const { return procs_fd_; }
  int64_t oom_kills() const;  // memory.events: oom_kill
  int64_t pids_max_hits() const;  // pids.events: max (forks refused at pids.max)
 private:
  std::string dir_;
  int procs_fd_ = -1;
};

// Whether the supervisor's wall timeout ended the program, from what it saw: it sent SIGKILL
// (we_killed), and the process it waited for ended by that signal and, under bwrap, bwrap had
// not reported the program's own exit (its JSON status "exit-code"). A program that exited by
// itself, even when the deadline passed while its output was read, is never a timeout.
bool ended_by_timeout(bool we_killed, int wait_status, const std::string& status_json);

}  // namespace ltrun::sandbox::detail
