// runtime/core/process.cpp: posix_spawn (or fork + execve), waitpid and kill (see process.h).
#include "runtime/core/process.h"

#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>

#include "runtime/core/error.h"

extern char** environ;

namespace ltrun {

const ApiDoc& spawn_api() {
  static const ApiDoc& d = declare_api(
      {"lt.proc.spawn", "lt.proc.spawn(argv[, opts]) → pid", "starts a program from an argv array (no shell)",
       {{"env", "table", "{NAME = value} set in the child's environment"},
        {"stdout", "string", "a file for its standard output (default: inherited)"},
        {"stderr", "string", "a file for its standard error (default: inherited)"},
        {"death_signal", "string|integer", "the signal it gets when this process ends (\"TERM\", \"KILL\", a number)"}}});
  return d;
}
namespace {
[[maybe_unused]] const ApiDoc& kSpawnDeclared = spawn_api();  // in the registry from the start, not at first use
}  // namespace

namespace {

// argv[0] as execve needs it: with a '/', as given; else the first executable file of that
// name in PATH (as posix_spawnp searches; done here, before fork, where allocating is safe).
std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  for (;;) {
    const size_t end = dirs.find(':', start);
    std::string dir = dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (dir.empty()) dir = ".";
    const std::string p = dir + "/" + name;
    struct stat st {};
    if (stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0) return p;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  fail("spawn {}: {} (not found in PATH)", name, std::strerror(ENOENT));
}

// fork + execve with PR_SET_PDEATHSIG in the child. Between fork and execve the child calls
// only async-signal-safe functions (this process has other threads: the store's flusher,
// LibTorch's pools). An exec failure comes back as errno through a close-on-exec pipe.
long spawn_with_death_signal(const std::vector<std::string>& argv, std::vector<char*>& args,
                             std::vector<char*>& envp, const SpawnOptions& o) {
  const std::string program = find_program(argv[0]);
  int pipe_fd[2];
  if (pipe2(pipe_fd, O_CLOEXEC) != 0) fail("spawn {}: pipe: {}", argv[0], std::strerror(errno));
  const int flags = O_WRONLY | O_CREAT | O_TRUNC;
  const char* out = o.stdout_path.empty() ? nullptr : o.stdout_path.c_str();
  const char* err = o.stderr_path.empty() ? nullptr : o.stderr_path.c_str();
  const int sig = o.death_signal;
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    close(pipe_fd[0]);
    close(pipe_fd[1]);
    fail("spawn {}: fork: {}", argv[0], std::strerror(e));
  }
  if (pid == 0) {  // the child
    int e = 0, stage = 0;  // what failed: 0 prctl, 1 stdout, 2 stderr, 3 exec
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);  // (the starting thread may block some)
    if (prctl(PR_SET_PDEATHSIG, sig) != 0) {
      e = errno;
    } else if (getppid() != parent) {  // the parent died before prctl took effect
      signal(sig, SIG_DFL);  // (a handler of ours, inherited by fork, would catch it)
      raise(sig);
      _exit(128 + sig);
    }
    for (int k = 0; e == 0 && k < 2; k++) {
      const char* path = k == 0 ? out : err;
      if (!path) continue;
      const int fd = open(path, flags, 0644);
      if (fd < 0 || dup2(fd, k + 1) < 0) e = errno, stage = k + 1;
      if (fd >= 0 && fd != k + 1) close(fd);
    }
    if (e == 0) {
      execve(program.c_str(), args.data(), envp.data());
      e = errno, stage = 3;
    }
    const int report[2] = {stage, e};
    ssize_t w = write(pipe_fd[1], report, sizeof report);
    (void)w;
    _exit(127);
  }
  close(pipe_fd[1]);
  int report[2] = {0, 0};
  ssize_t n;
  do n = read(pipe_fd[0], report, sizeof report);
  while (n < 0 && errno == EINTR);
  close(pipe_fd[0]);
  if (n == ssize_t(sizeof report)) {  // exec (or its set-up) failed: reap the child
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    const char* what[] = {"setting its parent-death signal", "opening its stdout file", "opening its stderr file", ""};
    const std::string file = report[0] == 1 ? " " + o.stdout_path : report[0] == 2 ? " " + o.stderr_path : "";
    if (report[0] == 3) fail("spawn {}: {}", argv[0], std::strerror(report[1]));
    fail("spawn {}: {}{}: {}", argv[0], what[report[0] & 3], file, std::strerror(report[1]));
  }
  return long(pid);
}

}  // namespace

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

  if (o.death_signal != 0) return spawn_with_death_signal(argv, args, envp, o);

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
  // (0 or a wrapped pid would wait for any child of our process group)
  LT_CHECK(pid > 0 && pid <= long(std::numeric_limits<pid_t>::max()), "wait: bad process id {}", pid);
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
  // beyond pid_t a pid would wrap (2^32 → 0: our whole process group)
  LT_CHECK(pid > 0 && pid <= long(std::numeric_limits<pid_t>::max()), "signal: bad process id {}", pid);
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
