// runtime/sandbox/bounded.h: a whole command (`rerun --sandbox`'s bubblewrap) bounded as a
// sandboxed program is (sandbox.h): its memory, all its processes together (a cgroup v2 of its
// own, memory.max; where none can be made, RLIMIT_AS of each process), how many processes and
// threads it has at once (pids.max; else RLIMIT_NPROC, set inside its user namespace by
// prlimit, and as uid 65534 when we are root, since no limit binds uid 0), the largest file it
// writes (RLIMIT_FSIZE; the caller gives its working folder a tmpfs of the same size), and a
// wall-clock limit that kills it. Ctrl-C kills it too. What ended it is said by ended_by.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ltrun::sandbox {

struct CommandBounds {
  int64_t memory_mb = 16384;  // --memory-mb
  int nproc = 512;            // --nproc: processes and threads at once
  int64_t disk_mb = 4096;     // --disk-mb: its working folder, and the largest file it writes
  double timeout = 6 * 3600;  // --timeout: wall seconds
  // Where no cgroup can be made, RLIMIT_AS = memory_mb. Off: CUDA reserves far more address
  // space than it uses, so on a GPU only a cgroup bounds memory (describe() says so).
  bool address_space = true;
};
// Errors name the flag (--memory-mb ...) and its range.
void validate(const CommandBounds& b);

struct CommandExit {
  int code = 0, signal = 0;
  bool timed_out = false, interrupted = false;
  int64_t oom_kills = 0, pids_refused = 0;  // from its cgroup (0 without one)
  double wall = 0;
};

class BoundedCommand {
 public:
  explicit BoundedCommand(const CommandBounds& b);  // makes its cgroup, or picks the fallback
  ~BoundedCommand();
  BoundedCommand(const BoundedCommand&) = delete;
  BoundedCommand& operator=(const BoundedCommand&) = delete;

  // The command runs as uid 65534 (we are root and there is no cgroup): the files it is given
  // must be readable by anyone, and bind sources are passed as open descriptors.
  bool as_nobody() const { return as_nobody_; }
  // One line: each bound and how it is enforced here.
  std::string describe() const;
  // `inner` under prlimit (the rlimits, set inside the namespaces): what goes after bwrap's "--".
  std::vector<std::string> wrap(const std::vector<std::string>& inner) const;
  // Runs argv (argv[0] an absolute path), its own environment `env`, and waits for it.
  CommandExit run(const std::vector<std::string>& argv, const std::vector<std::string>& env);

 private:
  struct Cgroup;
  CommandBounds b_;
  std::unique_ptr<Cgroup> cgroup_;
  bool as_nobody_ = false;
};

// What ended it, as "its wall-clock bound (--timeout 5 s)", or "" when no bound did that this
// side can see (an allocation or fork refused inside shows in the command's own error).
std::string ended_by(const CommandExit& e, const CommandBounds& b);

}  // namespace ltrun::sandbox
