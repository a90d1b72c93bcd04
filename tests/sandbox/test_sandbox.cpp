// tests/sandbox/test_sandbox.cpp: what holds on any host, namespaces or not: field checks, the
// refusal when bwrap cannot set up its namespaces (a stand-in bwrap that fails as a kernel
// without user namespaces makes it fail), and the rlimits, statuses, caps and pool order of
// unsafe_local_exec (no namespaces). The isolation itself (network, files, processes) needs
// namespaces: tests/cli/sandbox.sh, which skips with bwrap's reason where they cannot be made.
#include <catch2/catch.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "runtime/core/error.h"
#include "runtime/sandbox/sandbox.h"

using namespace ltrun::sandbox;

namespace {

std::string scratch(const std::string& name) {
  const char* t = std::getenv("LTRUN_TEST_TMP");
  auto dir = std::filesystem::path(t ? t : "/tmp") / "sandbox";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

Program unsafe(std::string code) {
  Program p;
  p.code = std::move(code);
  p.unsafe_local_exec = true;
  return p;
}

std::string error_of(const Program& p) {
  try {
    run(p);
  } catch (const ltrun::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("sandbox: fields out of range are errors naming the field") {
  Program p;
  p.code = "print(1)";
  p.timeout = 0;
  CHECK_THAT(error_of(p), Catch::Contains("timeout 0"));
  p.timeout = -1;
  CHECK_THAT(error_of(p), Catch::Contains("timeout -1"));
  p.timeout = 1.0 / 0.0;
  CHECK_THAT(error_of(p), Catch::Contains("timeout inf"));
  p.timeout = 5;
  p.memory_mb = 1;
  CHECK_THAT(error_of(p), Catch::Contains("memory_mb 1: expected [32, 1048576]"));
  p.memory_mb = int64_t(1) << 40;
  CHECK_THAT(error_of(p), Catch::Contains("memory_mb"));
  p.memory_mb = 256;
  p.code.assign(kMaxCodeBytes + 1, '#');
  CHECK_THAT(error_of(p), Catch::Contains("code is 4194305 bytes"));
  std::vector<Program> many(3, unsafe("print(1)"));
  many[1].nproc = 0;
  try {
    run_many(many, 2);
    FAIL("expected an error");
  } catch (const ltrun::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("program 2 of 3: sandbox: nproc 0"));
  }
}

TEST_CASE("sandbox: a bwrap that cannot make namespaces: refused with its reason, never run unsandboxed") {
  const std::string fake = scratch("fake-bwrap"), marker = scratch("fake-bwrap-ran-python");
  std::filesystem::remove(marker);
  {
    std::ofstream f(fake);
    // what bwrap prints where unprivileged user namespaces are off; it must not run the program
    f << "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because the kernel "
         "does not allow non-privileged user namespaces.' >&2\nexit 1\n";
  }
  ::chmod(fake.c_str(), 0755);
  const Availability a = available(fake);
  CHECK_FALSE(a.ok);
  CHECK_THAT(a.reason, Catch::Contains("No permissions to creating new namespace"));
  Program p;
  p.code = "open('" + marker + "', 'w').write('ran')";
  p.bwrap = fake;
  const std::string err = error_of(p);
  CHECK_THAT(err, Catch::Contains("cannot make a sandbox on this machine"));
  CHECK_THAT(err, Catch::Contains("No permissions to creating new namespace"));
  CHECK_THAT(err, Catch::Contains("refusing"));
  CHECK_FALSE(std::filesystem::exists(marker));
  p.bwrap = scratch("no-such-bwrap");
  CHECK_THAT(error_of(p), Catch::Contains("no-such-bwrap not found (install bubblewrap"));
  // the same program with the explicit opt-in runs, without bwrap
  p.unsafe_local_exec = true;
  if (::geteuid() != 0) {  // as root the program runs as nobody, which may not write there
    CHECK(run(p).status == Status::Ok);
    CHECK(std::filesystem::exists(marker));
  }
}

TEST_CASE("sandbox: unsafe_local_exec: statuses from the same rlimits") {
  Program p = unsafe("import sys\nx = sys.stdin.read()\nprint(x.upper(), end='')\nprint('e', file=sys.stderr)");
  p.stdin_data = "round trip\n";
  Result r = run(p);
  CHECK(r.status == Status::Ok);
  CHECK(r.out == "ROUND TRIP\n");
  CHECK(r.err == "e\n");

  r = run(unsafe("import sys\nprint('bad', file=sys.stderr)\nsys.exit(3)"));
  CHECK(r.status == Status::Error);
  CHECK(r.exit_code == 3);
  CHECK(r.err == "bad\n");

  p = unsafe("while True: pass");
  p.timeout = 1;
  r = run(p);
  CHECK(r.status == Status::Timeout);
  CHECK(r.wall < 1 + 5);  // generous: the kill is immediate, the margin is for a loaded host

  p = unsafe("b = bytearray(2 << 30)\nprint('allocated')");
  p.memory_mb = 256;
  r = run(p);
  CHECK(r.status == Status::Memory);
  CHECK_THAT(r.err, Catch::Contains("MemoryError"));
  CHECK(r.out.empty());

  p = unsafe("import sys\nsys.stdout.write('x' * 200000)\nsys.stderr.write('y' * 10)");
  p.output_cap = 1000;
  r = run(p);
  CHECK(r.status == Status::Ok);
  CHECK(r.out_truncated);
  CHECK_FALSE(r.err_truncated);
  CHECK(r.out.substr(0, 1000) == std::string(1000, 'x'));
  CHECK_THAT(r.out, Catch::Contains(std::string(kTruncatedMarker) + "1000 bytes, 199000 more dropped]"));
  CHECK(r.err == "yyyyyyyyyy");

  // Python 3.11 would run "solution" alone and exit 0
  r = run(unsafe(std::string("print('solution')\0assert False, 'tests'", 39)));
  CHECK(r.status == Status::Error);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains("source code cannot contain null bytes"));

  p = unsafe("print('no read')");  // its stdin is never read: our write gets EPIPE, not SIGPIPE
  p.stdin_data.assign(size_t(4) << 20, 'x');
  r = run(p);
  CHECK(r.status == Status::Ok);
  CHECK(r.out == "no read\n");

  r = run(unsafe("import os, signal\nos.kill(os.getpid(), signal.SIGTERM)"));
  CHECK(r.status == Status::Killed);
  CHECK(r.signal == 15);
}

TEST_CASE("sandbox: run_many returns results in input order") {
  std::vector<Program> ps;
  for (int i = 0; i < 12; i++) {
    // later programs finish first, so completion order is the reverse of input order
    ps.push_back(unsafe("import time\ntime.sleep(" + std::to_string(0.05 * (12 - i)) + ")\nprint(" +
                        std::to_string(i) + ")"));
  }
  const auto rs = run_many(ps, 4);
  REQUIRE(rs.size() == 12);
  for (int i = 0; i < 12; i++) {
    CHECK(rs[i].status == Status::Ok);
    CHECK(rs[i].out == std::to_string(i) + "\n");
  }
  CHECK(run_many({}, 4).empty());
}
