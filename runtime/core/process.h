// runtime/core/process.h: child processes from an argv array (posix_spawn, or fork + execve
// with a parent-death signal; never a shell, so no argument is ever parsed as shell syntax):
// start, poll or wait, signal. Used by the
// layer-scan scheduler (lib/lt/scan/workers.lua) to run one worker process per job.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/api.h"

namespace ltrun {

// lt.proc.spawn(argv[, opts])'s options (runtime/core/api.h)
const ApiDoc& spawn_api();

struct SpawnOptions {
  std::map<std::string, std::string> env;  // set (or override) in the child's environment
  std::string stdout_path, stderr_path;    // "" inherits; else the file is created/truncated
  // Not 0: the child gets this signal when the thread that started it ends (the process
  // exiting or killed, even by SIGKILL): PR_SET_PDEATHSIG, set between fork and exec, with a
  // check that we had not died already. So a scheduler's workers never outlive it.
  int death_signal = 0;
};

// Starts argv[0] (searched in PATH when it has no '/') with arguments argv[1..]. Returns the
// pid. Errors name the program and the reason (no such file, not executable, ...).
long spawn_process(const std::vector<std::string>& argv, const SpawnOptions& o = {});

struct ExitStatus {
  int code = 0;    // exit code when it exited
  int signal = 0;  // the signal that ended it, 0 when it exited
};
// Waits for a child of this process. timeout_s < 0 blocks; 0 polls; > 0 waits at most that
// long (polling). nullopt while it still runs. Errors when pid is not a child of ours.
std::optional<ExitStatus> wait_process(long pid, double timeout_s = -1);

// Sends `signal` to the process; false when it no longer exists.
bool signal_process(long pid, int signal);

// Signal number by name ("TERM", "SIGKILL", "INT", ...); error on an unknown name.
int signal_number(const std::string& name);

// The running executable (/proc/self/exe), to start more of ourselves.
std::string self_executable();
// CPUs this process may run on (sched_getaffinity), at least 1.
int available_cpus();

}  // namespace ltrun
