// tests/dist/test_timeout.cpp: a rank that hangs (issue 23, item 11). Two ranks on Gloo with
// LTRUN_DIST_TIMEOUT=3 and a launch folder (as `ltrun launch` gives them): after a barrier both
// pass, rank 1 stops taking part (it sleeps) and rank 0's all_reduce must fail within the
// timeout, naming rank 1 as the rank that never reached the collective. Before the fix the
// timeout could not be set (300 s) and nothing named the late rank.
#include <ATen/ATen.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "runtime/dist/dist.h"
#include "tests/dist/ranks.h"
#include "tests/test_util.h"

namespace dist = ltrun::dist;

// A rank: joins (no explicit timeout: LTRUN_DIST_TIMEOUT), passes a barrier, then rank 0
// all-reduces while rank 1 sleeps; rank 0 writes the error it got to LTRUN_HANG_OUT.
TEST_CASE("hang worker", "[.hang_worker]") {
  const dist::Env e = dist::env_from_environment();
  REQUIRE(e.world_size == 2);
  auto g = dist::Group::create(e, "gloo", "cpu");
  g->barrier();
  if (e.rank == 1) {
    std::this_thread::sleep_for(std::chrono::seconds(60));  // the hung rank (killed by the test)
    return;
  }
  std::string msg = "no error";
  try {
    at::Tensor t = at::ones({4});
    g->all_reduce(t);
  } catch (const std::exception& x) {
    msg = x.what();
  }
  std::ofstream(std::getenv("LTRUN_HANG_OUT")) << msg << "\n";
}

TEST_CASE("dist: a hung rank ends the others' collective after LTRUN_DIST_TIMEOUT and is named") {
  const std::string dir = ltrun_test::scratch_dir("dist", "hang");
  const std::string out = dir + "/rank0.txt";
  std::filesystem::remove(out);
  std::filesystem::remove(dir + "/progress");
  const std::vector<std::string> env = {"LTRUN_DIST_TIMEOUT=3", "LTRUN_LAUNCH_DIR=" + dir, "LTRUN_HANG_OUT=" + out};
  const int port = ltrun_test::free_port();
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t p0 = ltrun_test::spawn_rank("[.hang_worker]", 0, port, env);
  const pid_t p1 = ltrun_test::spawn_rank("[.hang_worker]", 1, port, env);
  int s0 = 0, s1 = 0;
  pid_t done = 0;
  // generous: the 3 s timeout, the error path's 3 s wait for a launcher note, process start-up
  while ((done = waitpid(p0, &s0, WNOHANG)) == 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(45))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  kill(p1, SIGKILL);
  waitpid(p1, &s1, 0);
  if (done == 0) {
    kill(p0, SIGKILL);
    waitpid(p0, &s0, 0);
    FAIL("rank 0 still waited 45 s after start with a 3 s timeout");
  }
  REQUIRE(WIFEXITED(s0));
  CHECK(WEXITSTATUS(s0) == 0);
  std::ifstream f(out);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string msg = ss.str();
  INFO(msg);
  CHECK(msg.find("dist: all_reduce on rank 0 of 2 failed (timeout 3 s)") != std::string::npos);
  // the barrier was collective 2 (the rendezvous 1): rank 1 entered 2, the all_reduce is 3
  CHECK(msg.find("rank 1 did not reach it (rank 1 entered 2 collectives, rank 0 3, counting the rendezvous)") !=
        std::string::npos);
}

// A rank 0 alone: its rendezvous must time out naming rank 1, which never came.
TEST_CASE("lone worker", "[.lone_worker]") {
  std::string msg = "no error";
  try {
    dist::Group::create(dist::env_from_environment(), "gloo", "cpu");
  } catch (const std::exception& x) {
    msg = x.what();
  }
  std::ofstream(std::getenv("LTRUN_HANG_OUT")) << msg << "\n";
}

TEST_CASE("dist: a rank that never joins fails the rendezvous after the timeout and is named") {
  const std::string dir = ltrun_test::scratch_dir("dist", "lone");
  const std::string out = dir + "/rank0.txt";
  // as `ltrun launch` on one node: the rendezvous file in the launch folder
  const std::vector<std::string> env = {"LTRUN_DIST_TIMEOUT=2", "LTRUN_LAUNCH_DIR=" + dir,
                                        "LTRUN_RENDEZVOUS_FILE=" + dir + "/rendezvous", "LTRUN_HANG_OUT=" + out};
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t p0 = ltrun_test::spawn_rank("[.lone_worker]", 0, ltrun_test::free_port(), env);
  int s0 = 0;
  pid_t done = 0;
  while ((done = waitpid(p0, &s0, WNOHANG)) == 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(45))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (done == 0) {
    kill(p0, SIGKILL);
    waitpid(p0, &s0, 0);
    FAIL("rank 0 still waited 45 s after start with a 2 s timeout");
  }
  std::ifstream f(out);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string msg = ss.str();
  INFO(msg);
  CHECK(msg.find("(rank 0 of 2) failed (timeout 2 s): rank 1 never joined the group") != std::string::npos);
}

TEST_CASE("dist: LTRUN_DIST_TIMEOUT is read and checked") {
  setenv("LTRUN_DIST_TIMEOUT", "2.5", 1);
  CHECK(dist::env_from_environment().timeout == std::chrono::milliseconds(2500));
  for (const char* bad : {"0", "-1", "abc", "5s", "1e9"}) {
    setenv("LTRUN_DIST_TIMEOUT", bad, 1);
    CHECK_THROWS_WITH(dist::env_from_environment(), Catch::Contains(std::string("LTRUN_DIST_TIMEOUT=") + bad));
  }
  unsetenv("LTRUN_DIST_TIMEOUT");
  CHECK(dist::env_from_environment().timeout == std::chrono::minutes(5));
}
