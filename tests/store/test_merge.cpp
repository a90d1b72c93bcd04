// tests/store/test_merge.cpp: merge_stores (ltrun db merge): inputs read without a byte of
// them changed or a file made beside them, runs still running held back (and the runs under
// them), copied partially on request and completed by a later merge; judge_running.
#include <sqlite3.h>
#include <sys/wait.h>
#include <csignal>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "runtime/core/env.h"
#include "runtime/core/fs.h"
#include "runtime/store/merge.h"
#include "runtime/store/store.h"
#include "tests/store/store_test_util.h"

using namespace ltrun;
using namespace ltrun::store;
namespace sfs = std::filesystem;  // (ltrun::fs is another)

namespace {

sfs::path folder(const std::string& name) {
  const char* t = std::getenv("LTRUN_TEST_TMP");
  sfs::path dir = sfs::path(t ? t : "/tmp") / "store_merge" / name;
  ltrun::fs::remove_tree(dir.string());
  sfs::create_directories(dir);
  return dir;
}

// every file of a folder with its bytes: what "unchanged, nothing made beside it" compares
std::map<std::string, std::string> files(const sfs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : sfs::directory_iterator(dir)) {
    std::ifstream f(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    out[e.path().filename().string()] = ss.str();
  }
  return out;
}

using ltrun::test::count;  // an independent reader (store_test_util.h)
void exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  sqlite3_close(db);
  REQUIRE(rc == SQLITE_OK);
}

RunStart start(const std::string& name) {
  RunStart r;
  r.name = name;
  r.script_text = "print('hi')";
  return r;
}

// A writer in a child process (the merging process must not have its inputs open): `body`
// runs there; the child exits with 0 when it returned, _exit(0) without closing when `die`.
template <class F>
pid_t writer(F body) {
  const pid_t kid = fork();
  if (kid == 0) {
    try {
      body();
    } catch (...) {
      _exit(3);
    }
    _exit(0);
  }
  REQUIRE(kid > 0);
  return kid;
}
void reap(pid_t kid) {
  int status = 0;
  REQUIRE(waitpid(kid, &status, 0) == kid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
}

void logged_store(const std::string& path, int rows) {
  reap(writer([&] {
    auto s = Store::open(path);
    const int64_t id = s->begin_run(start("shard"));
    for (int i = 0; i < rows; i++) s->metric(id, "loss", i);
    s->end_run(id, Status::ok);
  }));
}

}  // namespace

TEST_CASE("merge reads its inputs without changing a byte or making a file beside them") {
  const auto dir = folder("inputs");
  const std::string wal = (dir / "wal.db").string(), del = (dir / "del.db").string();
  logged_store(wal, 10);  // closed cleanly: WAL, no -wal file
  sfs::copy_file(wal, del);
  exec(del, "PRAGMA journal_mode=DELETE");
  // a writer that died with 50 rows in its -wal, never checkpointed into the file
  const std::string dead = (dir / "dead.db").string();
  reap(writer([&] {
    auto s = Store::open(dead);
    const int64_t id = s->begin_run(start("dead"));
    for (int i = 0; i < 50; i++) s->metric(id, "loss", i);
    s->flush();
    _exit(0);  // no close: the -wal and -shm stay, the run stays `running`
  }));
  REQUIRE(sfs::exists(dead + "-wal"));
  const auto before = files(dir);
  const std::string out = (folder("inputs_out") / "out.db").string();

  const auto report = merge_stores(out, {wal, del, dead});
  CHECK(files(dir) == before);
  REQUIRE(report.size() == 3);
  CHECK(report[0].added == 1);
  CHECK(report[1].already == 1);  // the same run (uuid) in the rollback-journal copy
  CHECK(report[0].read_as.find("immutable") != std::string::npos);
  CHECK(report[1].read_as.find("rollback journal") != std::string::npos);
  CHECK(report[2].read_as.find("-shm untouched") != std::string::npos);
  CHECK(count(out, "SELECT count(*) FROM metrics m JOIN runs r ON r.id = m.run_id WHERE r.name = 'shard'") == 10);
  // the -wal's rows were read (an immutable open sees none of them), the run copied as crashed
  CHECK(count(out, "SELECT count(*) FROM metrics m JOIN runs r ON r.id = m.run_id WHERE r.name = 'dead'") == 50);
  CHECK(count(out, "SELECT count(*) FROM runs WHERE name = 'dead' AND status = 'crashed' AND "
                   "error LIKE '%ended without closing the run%'") == 1);
  CHECK(report[2].crashed == 1);

  // the -wal without its -shm (a shard copied so): read from a private copy, nothing made
  const auto copied = folder("copied");
  sfs::copy_file(dead, copied / "dead.db");
  sfs::copy_file(dead + "-wal", copied / "dead.db-wal");
  const auto before_copy = files(copied);
  const std::string out2 = (folder("copied_out") / "out.db").string();
  const auto r2 = merge_stores(out2, {(copied / "dead.db").string()});
  CHECK(files(copied) == before_copy);
  CHECK(r2[0].read_as.find("private copy") != std::string::npos);
  CHECK(count(out2, "SELECT count(*) FROM metrics") == 50);
}

TEST_CASE("a running run is held back with the runs under it, copied partially on request, completed later") {
  const auto dir = folder("live");
  const std::string src = (dir / "src.db").string(), out = (dir / "out.db").string();
  int ready[2], go[2];
  REQUIRE(pipe(ready) == 0);
  REQUIRE(pipe(go) == 0);
  const pid_t kid = writer([&] {
    auto s = Store::open(src);
    const int64_t root = s->begin_run(start("scan"));
    RunStart c = start("block");
    c.parent_id = root;
    const int64_t child = s->begin_run(c);
    s->metric(child, "score", 1);
    s->end_run(child, Status::ok);
    for (int i = 0; i < 30; i++) s->metric(root, "loss", i);
    s->flush();
    char b = 1;
    if (write(ready[1], &b, 1) != 1 || read(go[0], &b, 1) != 1) _exit(4);
    for (int i = 30; i < 70; i++) s->metric(root, "loss", i);
    s->end_run(root, Status::ok);
  });
  char b = 0;
  REQUIRE(read(ready[0], &b, 1) == 1);

  auto r = merge_stores(out, {src});
  CHECK(r[0].running == 2);  // the scan and the block under it
  CHECK(r[0].added == 0);
  REQUIRE(r[0].still_running.size() == 1);
  CHECK(r[0].still_running[0].find("run 1 (scan): process " + std::to_string(kid)) == 0);
  CHECK(count(out, "SELECT count(*) FROM runs") == 0);

  r = merge_stores(out, {src}, MergeOptions{true});
  CHECK(r[0].added == 2);
  CHECK(r[0].partial == 1);
  CHECK(count(out, "SELECT count(*) FROM metrics WHERE name = 'loss'") == 30);
  CHECK(count(out, "SELECT count(*) FROM runs WHERE name = 'scan' AND status = 'running' AND "
                   "error LIKE 'partial copy:%'") == 1);
  const int64_t scan_id = count(out, "SELECT id FROM runs WHERE name = 'scan'");

  REQUIRE(write(go[1], &b, 1) == 1);
  reap(kid);
  r = merge_stores(out, {src});
  CHECK(r[0].completed == 1);
  CHECK(r[0].already == 1);
  CHECK(count(out, "SELECT count(*) FROM metrics WHERE name = 'loss'") == 70);
  CHECK(count(out, "SELECT count(*) FROM runs WHERE name = 'scan' AND status = 'ok' AND error IS NULL AND id = " +
                       std::to_string(scan_id)) == 1);
  CHECK(count(out, "SELECT count(*) FROM runs c JOIN runs p ON p.id = c.parent_id WHERE c.name = 'block' AND "
                   "p.name = 'scan'") == 1);
  r = merge_stores(out, {src});
  CHECK(r[0].already == 2);
  CHECK(r[0].completed == 0);
  for (int fd : {ready[0], ready[1], go[0], go[1]}) close(fd);
}

TEST_CASE("a running run of another host: held while the store is open elsewhere, else copied as crashed") {
  const auto dir = folder("elsewhere");
  const std::string src = (dir / "src.db").string();
  logged_store(src, 1);
  exec(src, "INSERT INTO runs(name, status, host, pid, boot_id, machine_id, process_start, started_at) "
            "VALUES ('remote', 'running', 'another-host.example', 1234, 'b', 'm', 5, '2026-01-01 00:00:00.000')");
  int ready[2], go[2];
  REQUIRE(pipe(ready) == 0);
  REQUIRE(pipe(go) == 0);
  const pid_t kid = writer([&] {  // a process with the store open (and nothing running)
    auto s = Store::open(src);
    s->query("SELECT 1");
    char b = 1;
    if (write(ready[1], &b, 1) != 1 || read(go[0], &b, 1) != 1) _exit(4);
  });
  char b = 0;
  REQUIRE(read(ready[0], &b, 1) == 1);
  const std::string out = (dir / "out.db").string();
  auto r = merge_stores(out, {src});
  CHECK(r[0].running == 1);
  REQUIRE(r[0].still_running.size() == 1);
  CHECK(r[0].still_running[0].find("another process has the store open") != std::string::npos);
  REQUIRE(write(go[1], &b, 1) == 1);
  reap(kid);
  r = merge_stores(out, {src});
  CHECK(r[0].crashed == 1);
  CHECK(count(out, "SELECT count(*) FROM runs WHERE name = 'remote' AND status = 'crashed' AND "
                   "error LIKE '%no process has the store open%'") == 1);
  for (int fd : {ready[0], ready[1], go[0], go[1]}) close(fd);
}

TEST_CASE("judge_running: this process, a gone process, a reused pid, another host") {
  const std::string host = host_name(), boot = boot_id(), machine = machine_id();
  const int64_t me = getpid();
  const auto started = process_start_time(me);
  CHECK(judge_running({host, me, boot, machine, started}).state == Liveness::alive);
  pid_t kid = fork();
  if (kid == 0) _exit(0);
  waitpid(kid, nullptr, 0);  // reaped: its pid names no process now
  CHECK(judge_running({host, kid, boot, machine, 1}).state == Liveness::dead);
  pid_t live = fork();
  if (live == 0) {
    pause();
    _exit(0);
  }
  const auto live_start = process_start_time(live);
  if (!boot.empty() && live_start >= 0) {
    CHECK(judge_running({host, live, boot, machine, live_start}).state == Liveness::alive);
    CHECK(judge_running({host, live, boot, machine, live_start + 12345}).state == Liveness::dead);  // pid reused
  }
  kill(live, SIGKILL);
  waitpid(live, nullptr, 0);
  CHECK(judge_running({"another-host.example", me, boot, machine, started}).state == Liveness::unknown);
  if (!machine.empty())
    CHECK(judge_running({host, kid, std::string("another-boot"), machine, 1}).state == Liveness::dead);
}
