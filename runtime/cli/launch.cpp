// runtime/cli/launch.cpp: `ltrun launch --nproc-per-node N [--timeout SECONDS] [--nnodes M
// --node-rank R --master-addr A --master-port P] SCRIPT.lua [--key=value ...]`: starts N ranks of this
// ltrun on SCRIPT with a torchrun-style environment (RANK, LOCAL_RANK, WORLD_SIZE,
// LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and the same --db, --device and --seed (`--seed fresh`
// is drawn once, here, for all ranks). Rank 0 writes the run to the store.
// --timeout (LTRUN_DIST_TIMEOUT, default 300 s): how long the rendezvous and each collective
// wait for a rank; the rank that times out names the ranks that never reached the collective
// (runtime/dist/dist.h). One node (--nnodes 1): the ranks meet in a file of the private launch
// folder (LTRUN_RENDEZVOUS_FILE), so nothing listens on a network interface.
//
// A rank that ends with an error or a signal is named on stderr and in LTRUN_LAUNCH_DIR/failed
// (the other ranks' failing collectives quote it); the others get kGrace to end by themselves
// (their collectives fail at once when a peer's connection closes), then SIGTERM, then SIGKILL.
// Ctrl-C (SIGINT/SIGTERM to the launcher; SIGHUP, a closed terminal, as SIGTERM) is passed on
// to every rank. The exit code is the first failing rank's (128 + signal for a signal), 0 when
// all succeed.
//
// Rank 0 names its run in LTRUN_LAUNCH_DIR/run. When rank 0 itself ends by a signal (SIGKILL,
// the OOM killer), it could not close that run: the launcher closes it as failed with an
// error naming rank 0 (and the first failing rank when another one failed first). What rank 0
// logged stays in the store up to its last flush (the store flushes at least every second).
//
// The launch folder /tmp/ltrun-launch-XXXXXX names its processes in `pids` (the launcher, then
// its ranks: "PID START" each, START from /proc/PID/stat so that a reused pid does not count).
// A launcher killed by SIGKILL cannot remove its folder: the next launch removes every such
// folder of this user whose processes are all gone (never one with a live launcher or rank,
// nor one without `pids`).
#include <dirent.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "runtime/cli/cli.h"
#include "runtime/core/fs.h"
#include "runtime/core/device.h"
#include "runtime/core/env.h"
#include "runtime/core/error.h"
#include "runtime/store/store.h"

namespace ltrun::cli {
namespace {

constexpr auto kGrace = std::chrono::seconds(10);  // survivors' time to fail by themselves
constexpr auto kTermGrace = std::chrono::seconds(5);

volatile std::sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

// A free TCP port on this host (a single-node launch picks its own).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  LT_CHECK(fd >= 0, "launch: cannot open a socket: {}", std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  LT_CHECK(ok, "launch: cannot find a free port: {}", std::strerror(errno));
  return ntohs(a.sin_port);
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with code {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int s = WTERMSIG(status);
    return fmt::format("was killed by signal {} ({})", s, strsignal(s));
  }
  return "ended";
}

// Closes rank 0's run as failed when rank 0 ended without closing it (killed by a signal).
void close_orphan_run(const std::string& db, const std::string& launch_dir, const std::string& error) {
  std::ifstream f(launch_dir + "/run");
  int64_t run = -1;
  if (!(f >> run) || run < 0 || db == ":memory:") return;  // rank 0 died before opening its run
  try {
    // opening marks rows of dead processes crashed (rank 0's children runs included)
    auto store = store::Store::open(db);
    const store::Status s = store->run_status(run);
    if (s == store::Status::running || s == store::Status::crashed)
      store->end_run(run, store::Status::failed, error);
    std::fprintf(stderr, "ltrun launch: run %lld failed (%s)\n", (long long)run, db.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ltrun launch: could not mark run %lld of %s failed: %s\n", (long long)run,
                 db.c_str(), e.what());
  }
}

constexpr const char* kLaunchDirPrefix = "ltrun-launch-";

// "PID START" (START: field 22 of /proc/PID/stat, its start time in clock ticks since boot);
// "" when there is no such process
std::string process_identity(long pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(f, stat)) return "";
  const size_t paren = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (paren == std::string::npos) return "";
  std::istringstream in(stat.substr(paren + 1));
  std::string field;
  for (int i = 3; i <= 22; i++)
    if (!(in >> field)) return "";
  return std::to_string(pid) + " " + field;
}

// Writes launch_dir/pids (through a rename: a reader never sees half of it).
void write_pids(const std::string& launch_dir, const std::vector<long>& pids) {
  {
    std::ofstream f(launch_dir + "/pids.tmp");
    for (const long p : pids) f << process_identity(p) << "\n";
  }
  std::filesystem::rename(launch_dir + "/pids.tmp", launch_dir + "/pids");
}

// Launch folders in /tmp of this user whose launcher and ranks are all gone (a launcher killed
// by SIGKILL left them): removed. A folder without `pids` (being made, or from an older ltrun)
// is left alone.
void remove_stale_launch_dirs() {
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir("/tmp"), ::closedir);
  if (!d) return;
  while (const dirent* e = ::readdir(d.get())) {
    const std::string name = e->d_name;
    if (name.rfind(kLaunchDirPrefix, 0) != 0) continue;
    const std::string dir = "/tmp/" + name;
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
    std::ifstream f(dir + "/pids");
    if (!f) continue;
    bool any = false, alive = false;
    for (std::string line; std::getline(f, line);) {
      if (line.empty()) continue;
      any = true;
      alive = alive || process_identity(std::atol(line.c_str())) == line;
    }
    if (!any || alive) continue;
    if (const std::string err = ltrun::fs::remove_tree(dir); !err.empty())
      std::fprintf(stderr, "ltrun launch: cannot remove the stale launch folder %s: %s\n", dir.c_str(), err.c_str());
  }
}

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kExitFailed;
}

}  // namespace

int cmd_launch(const Globals& g, const std::vector<std::string>& args) {
  int nproc = 1, nnodes = 1, node_rank = 0, port = 0;
  std::string addr = "127.0.0.1", timeout;
  size_t i = 0;
  // launch options come before the script; everything after it is the script's
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0) break;
    const auto eq = a.find('=');
    const std::string key = a.substr(0, eq);
    std::string val;
    if (eq != std::string::npos) val = a.substr(eq + 1);
    else {
      LT_CHECK(i + 1 < args.size(), "launch: {} needs a value", key);
      val = args[++i];
    }
    auto num = [&](int lo, int hi) {
      size_t used = 0;
      long x = -1;
      try {
        x = std::stol(val, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      LT_CHECK(used == val.size() && x >= lo && x <= hi, "launch: {} {}: expected an integer in {}..{}",
               key, val, lo, hi);
      return int(x);
    };
    if (key == "--nproc-per-node") nproc = num(1, 1024);
    else if (key == "--nnodes") nnodes = num(1, 65536);
    else if (key == "--node-rank") node_rank = num(0, 65535);
    else if (key == "--master-addr") addr = val;
    else if (key == "--master-port") port = num(1, 65535);
    else if (key == "--timeout") {
      char* end = nullptr;
      const double s = std::strtod(val.c_str(), &end);
      LT_CHECK(!val.empty() && end && *end == 0 && s > 0 && s <= 7 * 86400,
               "launch: --timeout {}: expected seconds in (0, 604800]", val);
      timeout = val;
    } else fail("launch: unknown option {} (expected --nproc-per-node, --timeout, --nnodes, --node-rank, "
                "--master-addr, --master-port before the script)", key);
  }
  LT_CHECK(i < args.size(),
           "usage: ltrun launch --nproc-per-node N [--timeout SECONDS] [--nnodes M --node-rank R "
           "--master-addr A --master-port P] SCRIPT.lua [--key=value ...]");
  LT_CHECK(node_rank < nnodes, "launch: --node-rank {} but --nnodes {}", node_rank, nnodes);
  LT_CHECK(nnodes == 1 || port > 0, "launch: several nodes need --master-port (and --master-addr)");
  if (port == 0) port = free_port();
  const uint64_t seed = g.seed ? *g.seed : kDefaultSeed;
  const int world = nproc * nnodes;

  remove_stale_launch_dirs();
  std::string tmpl = std::string("/tmp/") + kLaunchDirPrefix + "XXXXXX";
  LT_CHECK(::mkdtemp(tmpl.data()), "launch: cannot make a temporary folder: {}", std::strerror(errno));
  const std::string launch_dir = tmpl;
  std::vector<long> pids = {long(::getpid())};
  write_pids(launch_dir, pids);

  std::vector<std::string> child_args = {"--db", g.db, "--device", g.device, "--seed",
                                         std::to_string(seed)};
  child_args.insert(child_args.end(), args.begin() + long(i), args.end());
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);  // the ranks' own process groups miss the terminal's SIGHUP

  std::map<pid_t, int> ranks;  // pid -> global rank, while running
  for (int local = 0; local < nproc; ++local) {
    const int rank = node_rank * nproc + local;
    const pid_t pid = ::fork();
    LT_CHECK(pid >= 0, "launch: fork failed: {}", std::strerror(errno));
    if (pid == 0) {
      // a process group of its own: Ctrl-C at the terminal reaches the launcher only, which
      // passes it on once (a second SIGINT would end a rank before its checkpoint)
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // the launcher died: stop as if Ctrl-C
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      signal(SIGHUP, SIG_DFL);
      setenv("RANK", std::to_string(rank).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(local).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      setenv("MASTER_ADDR", addr.c_str(), 1);
      setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      setenv("LTRUN_LAUNCH_DIR", launch_dir.c_str(), 1);
      if (nnodes == 1) setenv("LTRUN_RENDEZVOUS_FILE", (launch_dir + "/rendezvous").c_str(), 1);
      else unsetenv("LTRUN_RENDEZVOUS_FILE");
      if (!timeout.empty()) setenv("LTRUN_DIST_TIMEOUT", timeout.c_str(), 1);
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(self.c_str()));
      for (auto& a : child_args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(self.c_str(), argv.data());
      std::fprintf(stderr, "ltrun launch: cannot run %s: %s\n", self.c_str(), std::strerror(errno));
      _exit(127);
    }
    ranks[pid] = rank;
    pids.push_back(pid);
  }
  write_pids(launch_dir, pids);

  int code = 0;
  bool failed = false, forwarded = false;
  std::string first_failure, rank0_failure;  // "rank R (pid P) was killed by ..."
  std::chrono::steady_clock::time_point failed_at;
  bool termed = false, killed = false;
  auto signal_all = [&](int sig) {
    for (const auto& [pid, r] : ranks) ::kill(pid, sig);
  };
  while (!ranks.empty()) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      auto it = ranks.find(pid);
      if (it == ranks.end()) continue;
      const int rank = it->second;
      ranks.erase(it);
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      const std::string what = fmt::format("rank {} (pid {}) {}", rank, pid, describe_status(status));
      if (rank == 0 && WIFSIGNALED(status)) rank0_failure = what;
      if (!ok && !failed) {
        failed = true;
        failed_at = std::chrono::steady_clock::now();
        code = exit_code(status);
        first_failure = what;
        {
          std::ofstream f(launch_dir + "/failed.tmp");
          f << what << "\n";
        }
        std::filesystem::rename(launch_dir + "/failed.tmp", launch_dir + "/failed");
        if (!forwarded) std::fprintf(stderr, "ltrun launch: %s; ending the other ranks\n", what.c_str());
      }
      continue;
    }
    if (g_signal && !forwarded) {  // Ctrl-C: every rank stops (and checkpoints) by itself
      forwarded = true;
      signal_all(g_signal == SIGINT ? SIGINT : SIGTERM);
      if (!failed) {
        failed = true;
        failed_at = std::chrono::steady_clock::now();
        code = kExitInterrupted;
      }
    }
    if (failed && !ranks.empty()) {
      const auto waited = std::chrono::steady_clock::now() - failed_at;
      if (!termed && waited > kGrace) {
        termed = true;
        signal_all(SIGTERM);
      } else if (!killed && waited > kGrace + kTermGrace) {
        killed = true;
        for (const auto& [p, r] : ranks)
          std::fprintf(stderr, "ltrun launch: rank %d (pid %d) did not stop: SIGKILL\n", r, int(p));
        signal_all(SIGKILL);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!rank0_failure.empty())
    close_orphan_run(g.db, launch_dir,
                     first_failure == rank0_failure || first_failure.empty()
                         ? rank0_failure + " (closed by ltrun launch)"
                         : fmt::format("{} after {} (closed by ltrun launch)", rank0_failure, first_failure));
  ltrun::fs::remove_tree(launch_dir);
  return code;
}

}  // namespace ltrun::cli
