// runtime/core/process.cpp: posix_spawn, waitpid and kill (see process.h).
#include "runtime/core/process.h"

#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "runtime/core/error.h"

extern char** environ;

namespace ltrun {

long spawn_process(const std::vector<std::string>& argv, const SpawnOptions& o) {
  LT_CHECK(!argv.empty() && !argv[0].empty(), "spawn: an empty argv (expected the program first)");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  // the environment: ours, with o.env's names replaced or added
  std::vector<std::string> env_strings;
  for (char** e = environ; e && *e; e++) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq != std::string::npos && o.env.count(kv.substr(0, eq))) continue;
    env_strings.push_back(kv);
  }
  for (const auto& [k, v] : o.env) {
    LT_CHECK(!k.empty() && k.find('=') == std::string::npos, "spawn {}: bad environment name '{}'", argv[0], k);
    env_strings.push_back(k + "=" + v);
  }
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  const int flags = O_WRONLY | O_CREAT | O_TRUNC;  // (no O_CLOEXEC: the fd becomes the child's 1 or 2)
  if (!o.stdout_path.empty()) posix_spawn_file_actions_addopen(&fa, 1, o.stdout_path.c_str(), flags, 0644);
  if (!o.stderr_path.empty()) posix_spawn_file_actions_addopen(&fa, 2, o.stderr_path.c_str(), flags, 0644);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0].c_str(), &fa, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) fail("spawn {}: {}", argv[0], std::strerror(rc));
  return long(pid);
}

std::optional<ExitStatus> wait_process(long pid, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(timeout_s > 0 ? timeout_s : 0);
  for (;;) {
    int st = 0;
    const pid_t r = waitpid(pid_t(pid), &st, timeout_s < 0 ? 0 : WNOHANG);
    if (r < 0) {
      if (errno == EINTR) continue;
      fail("wait for process {}: {}", pid, std::strerror(errno));
    }
    if (r == pid_t(pid)) {
      ExitStatus s;
      if (WIFEXITED(st)) s.code = WEXITSTATUS(st);
      else if (WIFSIGNALED(st)) s.signal = WTERMSIG(st);
      return s;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool signal_process(long pid, int signal) {
  LT_CHECK(pid > 0, "signal: bad process id {}", pid);
  if (kill(pid_t(pid), signal) == 0) return true;
  if (errno == ESRCH) return false;
  fail("signal {} to process {}: {}", signal, pid, std::strerror(errno));
}

int signal_number(const std::string& name) {
  std::string n = name.rfind("SIG", 0) == 0 ? name.substr(3) : name;
  static const std::pair<const char*, int> known[] = {
      {"HUP", SIGHUP}, {"INT", SIGINT}, {"QUIT", SIGQUIT}, {"KILL", SIGKILL}, {"TERM", SIGTERM},
      {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"STOP", SIGSTOP}, {"CONT", SIGCONT}};
  for (const auto& [k, v] : known)
    if (n == k) return v;
  fail("unknown signal '{}' (HUP, INT, QUIT, KILL, TERM, USR1, USR2, STOP, CONT)", name);
}

std::string self_executable() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  LT_CHECK(n > 0, "cannot read /proc/self/exe: {}", std::strerror(errno));
  return std::string(buf, size_t(n));
}

int available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, int(std::thread::hardware_concurrency()));
}

}  // namespace ltrun
