// tests/dist/ranks.h: the ranks of a multi-process test: this test binary run again on a
// hidden test case with a torchrun-style environment (posix_spawn: no fork after LibTorch's
// thread pools exist).
#pragma once
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

extern char** environ;

namespace ltrun_test {

// Runs this test binary's hidden test case `filter` as rank `rank` of 2 with the given extra
// environment; returns its pid.
inline pid_t spawn_rank(const std::string& filter_in, int rank, int port, const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  env.push_back(fmt::format("RANK={}", rank));
  env.push_back(fmt::format("LOCAL_RANK={}", rank));
  env.push_back("WORLD_SIZE=2");
  env.push_back("MASTER_ADDR=127.0.0.1");
  env.push_back(fmt::format("MASTER_PORT={}", port));
  env.insert(env.end(), extra.begin(), extra.end());
  std::vector<char*> envp;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string filter = filter_in;
  char* argv[] = {self.data(), filter.data(), nullptr};
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv, envp.data()) == 0);
  return pid;
}

inline int free_port();

// Runs this test binary's hidden test case `filter` as ranks 0 and 1 (a fresh rendezvous port)
// and waits for both; each must exit 0.
inline void run_two_ranks(const std::string& filter, const std::vector<std::string>& extra = {}) {
  const int port = free_port();
  const pid_t p0 = spawn_rank(filter, 0, port, extra);
  const pid_t p1 = spawn_rank(filter, 1, port, extra);
  int s0 = 0, s1 = 0;
  waitpid(p0, &s0, 0);
  waitpid(p1, &s1, 0);
  REQUIRE(WIFEXITED(s0));
  REQUIRE(WEXITSTATUS(s0) == 0);
  REQUIRE(WIFEXITED(s1));
  REQUIRE(WEXITSTATUS(s1) == 0);
}

// A rendezvous port for the ranks: a fresh one per call, from a range below Linux's
// ephemeral ports (32768..60999 by default). The old range reached into them, and an
// outgoing connection elsewhere on the host (another test's Gloo pairs) held the port:
// "failed to bind to 0.0.0.0:32854 (errno: 98 - Address already in use)" under ctest -j2.
inline int free_port() {
  static int next = 20000 + int(getpid() % 4000) * 2;
  return next += 2;
}

}  // namespace ltrun_test
