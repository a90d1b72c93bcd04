// tests/serve: `ltrun serve` below HTTP: LTTB downsampling against hand-worked cases, the
// read-only connection (refused writes, no migration, a writer at the same time, bounded
// values, results and memory), API status codes, artifacts (where they may lie, their
// sha256) and the Host check. The API over HTTP against a real study: tests/cli/serve.sh.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "runtime/core/env.h"
#include "runtime/core/fs.h"
#include "runtime/core/sha256.h"
#include "runtime/serve/api.h"
#include "runtime/serve/downsample.h"
#include "runtime/serve/reader.h"
#include "runtime/serve/server.h"
#include "runtime/store/artifact.h"
#include "runtime/store/store.h"
#include "runtime/store/views.h"
#include "tests/test_util.h"

using namespace ltrun;
using namespace ltrun::serve;
using json = nlohmann::json;
namespace sfs = std::filesystem;  // (ltrun::fs is another)

TEST_CASE("lttb keeps first, last and the point of the largest triangle per bucket") {
  // n = 6, 4 points: inner points 1..4 in buckets {1,2}, {3,4}.
  // bucket 1: next-bucket mean (3.5, 3); from (0,0): areas |-3.5*1 + 1*3| = 0.5 (j=1) and
  //           |-3.5*5 + 2*3| = 11.5 (j=2) → 2.
  // bucket 2: next = last point (5,0); from (2,5): |-3*(2-5) - (-1)*(0-5)| = 4 (j=3) and
  //           |-3*(4-5) - (-2)*(0-5)| = 7 (j=4) → 4.
  const std::vector<double> x{0, 1, 2, 3, 4, 5}, y{0, 1, 5, 2, 4, 0};
  CHECK(lttb(x, y, 4) == std::vector<size_t>{0, 2, 4, 5});
  CHECK(lttb(x, y, 6) == std::vector<size_t>{0, 1, 2, 3, 4, 5});
  CHECK(lttb(x, y, 100).size() == 6);
  CHECK(lttb(x, y, 2) == std::vector<size_t>{0, 5});
  CHECK(lttb({}, {}, 10).empty());
}

TEST_CASE("lttb on a long series: exactly `points`, ascending, the spike and NaN survive") {
  const size_t n = 100000;
  std::vector<double> x(n), y(n);
  for (size_t i = 0; i < n; i++) x[i] = double(i), y[i] = std::sin(double(i) * 1e-3);
  y[54321] = 50;   // a spike
  y[77777] = NAN;  // a divergence
  const auto keep = lttb(x, y, 1000);
  CHECK(keep.size() == 1001);  // 1000 + the NaN kept besides its bucket's pick
  CHECK(keep.front() == 0);
  CHECK(keep.back() == n - 1);
  CHECK(std::is_sorted(keep.begin(), keep.end()));
  CHECK(std::adjacent_find(keep.begin(), keep.end()) == keep.end());
  CHECK(std::find(keep.begin(), keep.end(), size_t(54321)) != keep.end());
  CHECK(std::find(keep.begin(), keep.end(), size_t(77777)) != keep.end());
}

namespace {

std::string fresh_store(const std::string& name, int64_t* run = nullptr) {
  const std::string dir = ltrun_test::scratch_dir("serve", name);
  const std::string path = dir + "/runs.db";
  auto st = store::Store::open(path);
  store::RunStart r;
  r.name = "study";
  const int64_t id = st->begin_run(r);
  for (int s = 0; s < 10; s++) st->metric(id, "loss", 1.0 / (1 + s), s);
  st->param(id, "lr", "0.1");
  st->end_run(id, store::Status::ok);
  if (run) *run = id;
  return path;
}

json body(const Response& r) { return json::parse(r.body); }

}  // namespace

TEST_CASE("reader: reads, refuses every kind of write with a message naming it") {
  const std::string path = fresh_store("refuse");
  Reader rd(path);
  CHECK(rd.schema_version() >= 1);
  CHECK(std::get<int64_t>(rd.query("SELECT count(*) FROM metrics").table.rows[0][0]) == 10);
  const std::pair<const char*, const char*> writes[] = {
      {"INSERT INTO params VALUES (1, 'k', 'v')", "INSERT"},
      {"UPDATE runs SET name = 'x'", "UPDATE"},
      {"DELETE FROM metrics", "DELETE"},
      {"DROP TABLE runs", "DROP"},
      {"CREATE TABLE t(x)", "CREATE"},
      {"ATTACH DATABASE ':memory:' AS m", "ATTACH"},
      {"PRAGMA journal_mode = DELETE", "PRAGMA journal_mode"},
      {"PRAGMA query_only = 0", "PRAGMA query_only"},
      {"BEGIN IMMEDIATE", "transaction"},
  };
  for (const auto& [sql, word] : writes) {
    INFO(sql);
    try {
      rd.query(sql);
      FAIL("not refused");
    } catch (const Refused& e) {
      CHECK(std::string(e.what()).find("read-only") != std::string::npos);
      INFO(e.what());
      CHECK(std::string(e.what()).find(word) != std::string::npos);
    }
  }
  ltrun_test::require_error([&] { rd.query("SELECT 1; SELECT 2"); }, {"one statement"});
  CHECK(rd.query("SELECT 1; -- a comment\n").table.rows.size() == 1);
  CHECK(rd.query("PRAGMA table_info(runs)").table.rows.size() > 5);
  const auto r = rd.query("SELECT step FROM metrics ORDER BY step", {}, 3);
  CHECK(r.table.rows.size() == 3);
  CHECK(r.truncated);
  ltrun_test::require_error([&] {
    rd.query("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c", {}, SIZE_MAX, 200);
  }, {"200 ms"});
}

TEST_CASE("reader: never creates, migrates or locks; a writer writes while it reads") {
  const std::string dir = ltrun_test::scratch_dir("serve", "nomigrate");
  ltrun_test::require_error([&] { Reader rd(dir + "/missing.db"); }, {"missing.db", "no run store"});
  CHECK(!sfs::exists(dir + "/missing.db"));
  {  // an empty SQLite file (user_version 0) is not migrated
    sqlite3* db = nullptr;
    sqlite3_open((dir + "/empty.db").c_str(), &db);
    sqlite3_exec(db, "CREATE TABLE t(x)", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
  ltrun_test::require_error([&] { Reader rd(dir + "/empty.db"); }, {"empty.db", "not an ltrun run store"});
  {
    sqlite3* db = nullptr;
    sqlite3_open((dir + "/empty.db").c_str(), &db);
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &st, nullptr);
    sqlite3_step(st);
    CHECK(sqlite3_column_int(st, 0) == 1);  // still only t
    sqlite3_finalize(st);
    sqlite3_close(db);
  }

  int64_t run = 0;
  const std::string path = fresh_store("concurrent", &run);
  Reader rd(path);
  auto writer = store::Store::open(path);
  // a reader in the middle of a long query does not block the writer (WAL)
  std::atomic<bool> reading{true};
  std::thread t([&] {
    while (reading) rd.numeric_columns("SELECT step, value FROM metrics", {});
  });
  const auto t0 = std::chrono::steady_clock::now();
  for (int s = 10; s < 2010; s++) writer->metric(run, "loss", 1.0 / (1 + s), s);
  writer->flush();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  reading = false;
  t.join();
  CHECK(secs < 60);  // not a timing: a blocked writer would wait out the busy timeout (120 s)
  const auto cols = rd.numeric_columns("SELECT step, value FROM metrics WHERE run_id = ? ORDER BY step", {store::Value(run)});
  REQUIRE(cols.size() == 2);
  REQUIRE(cols[0].size() == 2010);  // the reader sees the new rows at once
  CHECK(cols[1][2009] == Approx(1.0 / 2010));
}

TEST_CASE("api: status codes and JSON errors") {
  int64_t run = 0;
  const std::string path = fresh_store("api", &run);
  Api api(std::make_shared<Reader>(path), 500);
  const std::string r = "/api/runs/" + std::to_string(run);
  auto ok = api.get(r, {});
  REQUIRE(ok.status == 200);
  CHECK(body(ok)["params"]["lr"] == "0.1");
  CHECK(body(ok)["run"]["rerun"].get<std::string>().find("rerun " + std::to_string(run)) != std::string::npos);
  CHECK(api.get("/api/runs/12345", {}).status == 404);
  CHECK(api.get("/api/runs/1x", {}).status == 400);
  CHECK(api.get("/api/runs/99999999999999999999999", {}).status == 400);
  CHECK(api.get(r + "/artifacts/0", {}).status == 404);
  CHECK(api.get(r + "/metrics", {{"name", "loss"}, {"points", "abc"}}).status == 400);
  const auto m = body(api.get(r + "/metrics", {{"name", "loss"}, {"points", "4"}}));
  CHECK(m["series"][0]["x"].size() == 4);
  CHECK(m["series"][0]["points"] == 10);
  const auto w = api.get("/api/sql", {{"q", "DELETE FROM runs"}});
  CHECK(w.status == 403);
  CHECK(body(w)["error"].get<std::string>().find("read-only") != std::string::npos);
  CHECK(api.get("/api/sql", {{"q", "SELEC"}}).status == 400);
  CHECK(api.get("/api/sql", {}).status == 400);
  CHECK(api.get("/api/runs", {{"status", "done"}}).status == 400);
  CHECK(api.get("/api/other", {}).status == 404);
  // the comparison of `ltrun compare` (runtime/store/compare.h): a run against itself
  const auto c = api.get("/api/compare", {{"a", std::to_string(run)}, {"b", std::to_string(run)}});
  REQUIRE(c.status == 200);
  CHECK(body(c)["reproduced"] == "reproduced: all 10 metrics equal");
  CHECK(body(c)["equal"] == 10);
  CHECK(api.get("/api/compare", {{"a", std::to_string(run)}, {"b", "12345"}}).status == 404);
  CHECK(api.get("/api/compare", {{"a", std::to_string(run)}}).status == 400);
  CHECK(api.get("/api/compare", {{"a", std::to_string(run)}, {"b", std::to_string(run)}, {"tolerance", "x"}}).status == 400);
}

TEST_CASE("api: an artifact is served only under the run's folders, with the sha256 it was registered with") {
  int64_t run = 0;
  const std::string path = fresh_store("artifacts", &run);
  const std::string dir = sfs::path(path).parent_path().string();  // the store's folder
  const std::string fig = dir + "/fig.svg", outside = ltrun_test::scratch_dir("serve", "artifacts_outside") + "/x.svg";
  auto write = [](const std::string& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; };
  write(fig, "<svg>fig</svg>");
  write(outside, "<svg>outside</svg>");
  auto edit = [&](const std::string& sql) {
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
    REQUIRE(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  };
  edit("UPDATE runs SET workdir = '" + dir + "'");  // as if it had started there, wherever this test runs
  {
    auto st = store::Store::open(path);
    CHECK(store::register_artifact(*st, run, fig) == sfs::canonical(fig).string());
    ltrun_test::require_error([&] { store::register_artifact(*st, run, "/dev/zero"); }, {"/dev/zero is a character device"});
    ltrun_test::require_error([&] { store::register_artifact(*st, run, dir); }, {dir + " is a folder"});
    sfs::create_symlink(outside, dir + "/link.svg");
    // recorded with a warning (artifact 1), never served
    CHECK(store::register_artifact(*st, run, dir + "/link.svg") == sfs::canonical(outside).string());
  }
  Api api(std::make_shared<Reader>(path), 500);
  const std::string url = "/api/runs/" + std::to_string(run) + "/artifacts/0";
  const auto listed = body(api.get("/api/runs/" + std::to_string(run), {}))["artifacts"];
  REQUIRE(listed.size() == 2);
  CHECK(listed[0]["bytes"] == 14);
  CHECK(!listed[0].contains("refused"));
  CHECK(listed[1]["refused"].get<std::string>().find("lies outside the run's folders") != std::string::npos);
  auto r = api.get("/api/runs/" + std::to_string(run) + "/artifacts/1", {});
  CHECK(r.status == 403);
  CHECK(body(r)["error"].get<std::string>().find("x.svg lies outside the run's folders") != std::string::npos);
  r = api.get(url, {});
  REQUIRE(r.status == 200);
  CHECK(r.body == "<svg>fig</svg>");
  CHECK(r.content_type == "image/svg+xml");

  // the file rewritten (a later run with the same --out): the run's own copy is served
  write(fig, "<svg>changed</svg>");
  r = api.get(url, {});
  CHECK(r.status == 200);
  CHECK(r.body == "<svg>fig</svg>");
  // the copy itself changed: refused, without the hash of what is there now
  const std::string copy = store::artifact_copy_path(path, sha256_hex("<svg>fig</svg>"));
  REQUIRE(sfs::is_regular_file(copy));
  sfs::permissions(copy, sfs::perms::owner_write, sfs::perm_options::add);
  write(copy, "<svg>tampered</svg>");
  r = api.get(url, {});
  CHECK(r.status == 409);
  CHECK(body(r)["error"].get<std::string>().find("has changed since the run registered it") != std::string::npos);
  CHECK(r.body.find(sha256_hex("<svg>tampered</svg>")) == std::string::npos);
  write(copy, "<svg>fig</svg>");
  write(fig, "<svg>fig</svg>");
  CHECK(api.get(url, {}).status == 200);

  // the row edited to name a file elsewhere, with that file's own sha256: never served
  edit("UPDATE artifacts SET path = '" + outside + "', sha256 = '" + sha256_hex("<svg>outside</svg>") + "' WHERE rowid = 1");
  r = api.get(url, {});
  CHECK(r.status == 403);
  CHECK(r.body.find("<svg>outside") == std::string::npos);
  CHECK(body(r)["error"].get<std::string>().find("lies outside the run's folders") != std::string::npos);
  edit("UPDATE artifacts SET path = '" + dir + "/link.svg' WHERE rowid = 1");
  CHECK(api.get(url, {}).status == 403);
  edit("UPDATE artifacts SET path = '" + dir + "/gone.svg' WHERE rowid = 1");
  CHECK(api.get(url, {}).status == 404);

  // a store from before db/migrations/0004 (no runs.workdir) and before copies were kept: the
  // store's folder still counts
  ltrun::fs::remove_tree(store::artifact_store_dir(path));
  edit("UPDATE artifacts SET path = '" + sfs::canonical(fig).string() + "', sha256 = '" + sha256_hex("<svg>fig</svg>") +
       "' WHERE rowid = 1; ALTER TABLE runs DROP COLUMN workdir; PRAGMA user_version = 3");
  Api old(std::make_shared<Reader>(path), 500);
  r = old.get(url, {});
  CHECK(r.status == 200);
  CHECK(r.body == "<svg>fig</svg>");
}

// issue 34, defect 6: a bundle's run with workdir '/' and an artifact row for /etc/shadow: the
// page showed its size and the 409 its sha256
TEST_CASE("api: a run made elsewhere names no file outside the store; its carried files are served") {
  int64_t run = 0;
  const std::string path = fresh_store("artifacts_imported", &run);
  const std::string secret = ltrun_test::scratch_dir("serve", "artifacts_secret") + "/shadow";
  std::ofstream(secret, std::ios::binary) << "root:secret";
  auto edit = [&](const std::string& sql) {
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
    REQUIRE(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  };
  const std::string other = std::string(64, '0');  // a hash that names no file
  edit("UPDATE runs SET workdir = '/', machine_id = 'another machine'; "
       "INSERT INTO artifacts(run_id, kind, path, sha256, t) VALUES (" + std::to_string(run) + ", 'txt', '" + secret +
       "', '" + other + "', 0), (" + std::to_string(run) + ", 'txt', '/etc/shadow', '" + other + "', 0)");
  Api api(std::make_shared<Reader>(path), 500);
  const std::string base = "/api/runs/" + std::to_string(run);
  const auto page = api.get(base, {});
  REQUIRE(page.status == 200);
  const auto listed = body(page)["artifacts"];
  REQUIRE(listed.size() == 2);
  for (const auto& a : listed) {
    CHECK(a["exists"] == false);
    CHECK(!a.contains("bytes"));
  }
  for (int k : {0, 1}) {
    const auto r = api.get(base + "/artifacts/" + std::to_string(k), {});
    CHECK(r.status == 404);
    CHECK(r.body.find(sha256_hex("root:secret")) == std::string::npos);
  }
  // the same run said to be made here, still with workdir '/': '/' is no run's folder
  edit("UPDATE runs SET machine_id = '" + ltrun::machine_id() + "'");
  const auto here = api.get(base + "/artifacts/0", {});
  CHECK(here.status != 200);
  CHECK(here.body.find(sha256_hex("root:secret")) == std::string::npos);
  CHECK(here.body.find("root:secret") == std::string::npos);
  // a file carried in by an import (artifact_files) is served from the store
  edit("UPDATE runs SET machine_id = 'another machine'; INSERT INTO artifacts(run_id, kind, path, sha256, t) VALUES (" +
       std::to_string(run) + ", 'svg', '/elsewhere/fig.svg', '" + sha256_hex("<svg>carried</svg>") + "', 0); "
       "INSERT INTO artifact_files(run_id, path, sha256, size, data) VALUES (" + std::to_string(run) +
       ", '/elsewhere/fig.svg', '" + sha256_hex("<svg>carried</svg>") + "', 18, CAST('<svg>carried</svg>' AS BLOB))");
  const auto carried = api.get(base + "/artifacts/2", {});
  CHECK(carried.status == 200);
  CHECK(carried.body == "<svg>carried</svg>");
  CHECK(body(api.get(base, {}))["artifacts"][2]["bytes"] == 18);
}

// issue 34, defect 7
TEST_CASE("api: /api/sql refuses fts3_tokenizer and load_extension, naming them") {
  const std::string path = fresh_store("sql_functions");
  Api api(std::make_shared<Reader>(path), 5000);
  for (const char* q : {"SELECT fts3_tokenizer('simple')", "SELECT fts3_tokenizer('simple', x'4141414141414141')",
                        "SELECT load_extension('/tmp/x.so')"}) {
    const auto r = api.get("/api/sql", {{"q", q}});
    INFO(q << " -> " << r.body);
    CHECK(r.status == 403);
    CHECK(r.body.find("() is refused") != std::string::npos);
  }
  CHECK(body(api.get("/api/sql", {{"q", "SELECT fts3_tokenizer('simple')"}}))["error"].get<std::string>().find(
            "the SQL function fts3_tokenizer() is refused") == 0);
  CHECK(api.get("/api/sql", {{"q", "SELECT abs(-1)"}}).status == 200);
}

// issue 34, defect 4: 6 requests for 100 items with 2 MB texts each held 2.5 GB
TEST_CASE("api: eval items are paged by size, long texts cut and said so; a request's reading is bounded") {
  int64_t run = 0;
  const std::string path = fresh_store("eval_pages", &run);
  {
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
    const std::string sql = "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c LIMIT 20) "
        "INSERT INTO eval_items(run_id, bench, item_id, category, protocol, prediction, answer, correct, prompt, output) "
        "SELECT " + std::to_string(run) + ", 'b', 'item' || i, NULL, 'gen', 'p', 'a', 1, "
        "CASE WHEN i = 20 THEN printf('%.*c', 3000000, 'x') ELSE printf('%.*c', 1000000, 'x') END, 'out' FROM c";
    REQUIRE(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  Api api(std::make_shared<Reader>(path), 5000);
  const std::string url = "/api/runs/" + std::to_string(run) + "/eval_items";
  // 1,000,000-byte prompts: 8 of them fit 8 MB (8,388,608 bytes), a 9th does not
  auto r = api.get(url, {{"limit", "100"}});
  REQUIRE(r.status == 200);
  auto d = body(r);
  CHECK(d["total"] == 20);
  CHECK(d["items"].size() == 8);
  CHECK(d["truncated"] == true);
  CHECK(d["next_offset"] == 8);
  CHECK(r.body.size() < (size_t(9) << 20));
  d = body(api.get(url, {{"limit", "100"}, {"offset", "16"}}));
  REQUIRE(d["items"].size() == 4);  // 16..19: the last one's 3 MB prompt cut at 1M characters
  CHECK(!d.contains("truncated"));
  CHECK(d["items"][3]["prompt"].get<std::string>().size() == size_t(1) << 20);
  CHECK(d["items"][3]["prompt_truncated"] == true);
  CHECK(!d["items"][0].contains("prompt_truncated"));
  d = body(api.get(url, {{"limit", "2"}}));
  CHECK(d["items"].size() == 2);
  CHECK(!d.contains("truncated"));  // asked for 2, got 2

  // what one request may read: with a budget of 1 MB, a series of 200,000 points (3.2 MB as
  // two columns of doubles) is a 413 saying to ask for less; the 10-point one is served
  {
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
    const std::string sql = "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c LIMIT 200000) "
        "INSERT INTO metrics(run_id, name, step, value, t) SELECT " + std::to_string(run) + ", 'big', i, i, 0 FROM c";
    REQUIRE(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  Api small(std::make_shared<Reader>(path), 5000, size_t(1) << 20);
  r = small.get("/api/runs/" + std::to_string(run) + "/metrics", {{"name", "big"}});
  CHECK(r.status == 413);
  CHECK(body(r)["error"].get<std::string>().find("has 200000 points: about 3 MB in memory, past the 1 MB one request "
                                                 "may hold here; ask for less") != std::string::npos);
  CHECK(small.get("/api/runs/" + std::to_string(run) + "/metrics", {{"name", "loss"}}).status == 200);
  CHECK(small.get("/api/sql", {{"q", "SELECT * FROM metrics"}}).status == 413);
  CHECK(api.get("/api/runs/" + std::to_string(run) + "/metrics", {{"name", "big"}}).status == 200);  // 128 MB
}

// issue 43 item 5: 8 compares of runs with 1.5M points each took 1.35 GB, each refused (413) only
// after reading them; what a compare builds per point was not counted at all
TEST_CASE("api: a request over its budget is refused before its rows are read; requests share the server's budget") {
  const std::string path = fresh_store("budget");
  int64_t a = 0, b = 0, c = 0;
  {
    auto st = store::Store::open(path);
    for (int64_t* id : {&a, &b, &c}) {
      store::RunStart rs;
      rs.name = "big";
      *id = st->begin_run(rs);
      st->end_run(*id, store::Status::ok);
    }
  }
  {
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
    const std::string sql = fmt::format(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 50000) "
        "INSERT INTO metrics(run_id, name, step, value, t) SELECT r, 'm' || (i % 2), i, i, 0 FROM n, "
        "(SELECT {0} AS r UNION ALL SELECT {1}); "
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 250000) "
        "INSERT INTO metrics(run_id, name, step, value, t) SELECT {2}, CASE WHEN i <= 100000 THEN 'series' ELSE 'long' END, i, i, 0 FROM n; "
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 20000) "
        "INSERT INTO layer_metrics(run_id, name, grp, layer, step, value) SELECT {2}, 'norm', 'g' || (i / 100), i % 100, 1, i FROM n",
        a, b, c);
    REQUIRE(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  auto reader = std::make_shared<Reader>(path);
  auto server = std::make_shared<MemoryBudget>(size_t(4) << 20);
  const Api api(reader, 5000, size_t(2) << 20, server);  // 2 MB a request, 4 MB in all
  // the counts come first, and nothing else is read: a few hundred bytes of count rows
  auto refused_unread = [&](const std::string& url, const Params& p, const std::string& says) {
    const uint64_t before = reader->bytes_read();
    const auto r = api.get(url, p);
    INFO(url << " -> " << r.status << " " << r.body.substr(0, 300));
    CHECK(r.status == 413);
    CHECK(r.body.find(says) != std::string::npos);
    CHECK(r.body.find("past the 2 MB one request may hold here") != std::string::npos);
    CHECK(reader->bytes_read() - before < 4096);
  };
  const std::string ids = fmt::format("{}-{}", a, c);
  // a compare of 100,000 points: about 68 MB with what it builds per point (before: answered 200)
  refused_unread("/api/compare", {{"a", std::to_string(a)}, {"b", std::to_string(b)}},
                 fmt::format("runs {} and {} have 100000 metric and layer metric points", a, b));
  // a series of 100,000 points: 1.6 MB as two columns of doubles, served; one of 150,000: refused
  const std::string series = fmt::format("/api/runs/{}/metrics", c);
  uint64_t before = reader->bytes_read();
  auto r = api.get(series, {{"name", "series"}});
  REQUIRE(r.status == 200);
  CHECK(body(r)["series"][0]["points"] == 100000);
  CHECK(reader->bytes_read() - before >= 1600000);
  CHECK(server->used() == r.body.capacity() + 1);  // its body's share, until the answer goes
  r = Response{};
  refused_unread(series, {{"name", "long"}}, fmt::format("metric 'long' of run {} has 150000 points: about 2 MB", c));
  refused_unread("/api/compare/metrics", {{"ids", ids}, {"name", "m0,series"}},
                 "the 2 metric(s) of the 3 run(s) have 150000 points: about 2 MB");
  refused_unread(fmt::format("/api/runs/{}/layer_metrics", c), {{"name", "norm"}},
                 fmt::format("layer metric 'norm' of run {} has 20000 values at step 1", c));
  CHECK(server->used() == 0);  // every request gave back what it took

  // 8 clients asking at once for the 1.6 MB series, 10 times each: at most 4 MB is ever held
  // (two such requests), the others are told to come back (503, Retry-After)
  std::atomic<int> ok{0}, busy{0}, other{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; t++)
    clients.emplace_back([&] {
      for (int k = 0; k < 10; k++) {
        const auto resp = api.get(series, {{"name", "series"}});
        if (resp.status == 200) ok++;
        else if (resp.status == 503 && resp.body.find("busy: the requests in flight hold") != std::string::npos &&
                 resp.headers == std::vector<std::pair<std::string, std::string>>{{"Retry-After", "2"}}) busy++;
        else other++;
      }
    });
  for (auto& t : clients) t.join();
  INFO(ok << " answered, " << busy << " busy, " << other << " other; peak " << server->peak());
  CHECK(other == 0);
  CHECK(ok > 0);
  CHECK(server->peak() <= server->cap());
  CHECK(server->peak() >= 1600000);
  CHECK(server->used() == 0);
}

TEST_CASE("api: heavy routes; after stop() every request is a 503 at once") {
  CHECK(heavy_route("/api/sql"));
  CHECK(heavy_route("/api/compare"));
  CHECK(heavy_route("/api/compare/metrics"));
  CHECK(heavy_route("/api/table"));
  CHECK(heavy_route("/api/runs/3/metrics"));
  CHECK(heavy_route("/api/runs/3/eval_items"));
  CHECK(heavy_route("/api/runs/3/artifacts/0"));
  CHECK(!heavy_route("/api/info"));
  CHECK(!heavy_route("/api/runs"));
  CHECK(!heavy_route("/api/runs/3"));
  CHECK(!heavy_route("/api/queries"));
  const std::string path = fresh_store("stop");
  Api api(std::make_shared<Reader>(path), 5000);
  CHECK(api.get("/api/info", {}).status == 200);
  api.stop();
  const auto r = api.get("/api/runs", {});
  CHECK(r.status == 503);
  CHECK(r.body.find("stopping") != std::string::npos);
}

TEST_CASE("sql: a value, a result and SQLite's memory are bounded; printf's repeat count too") {
  const std::string path = fresh_store("limits");
  Api api(std::make_shared<Reader>(path), 5000);
  auto error_of = [&](const std::string& q) {
    const auto r = api.get("/api/sql", {{"q", q}});
    INFO(q << " -> " << r.status << " " << r.body.substr(0, 300));
    CHECK(r.status == 400);
    return r.status == 400 ? body(r)["error"].get<std::string>() : std::string();
  };
  // before: built the 300 MB blob (12.9 s, 0.82 GB), or looped 1e9 times in one step (19.7 s)
  CHECK(error_of("SELECT randomblob(300000000)").find("longer than 16 MB") != std::string::npos);
  CHECK(error_of("SELECT printf('%.*c', 1e9, 'x')").find("longer than 16 MB") != std::string::npos);
  CHECK(error_of("SELECT format('%.1000000000c', 'x')").find("longer than 16 MB") != std::string::npos);
  CHECK(error_of("WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c LIMIT 100) "
                 "SELECT randomblob(1000000) FROM c").find("the result passed 16 MB after 16 rows") != std::string::npos);
  // printf is still SQLite's own below the bound
  const auto ok = body(api.get("/api/sql", {{"q", "SELECT printf('%5.2f|%-3d|%q|%.3c|%.*s', 3.14159, 7, 'it''s', 'x', 2, 'abcdef')"}}));
  CHECK(ok["rows"][0][0] == " 3.14|7  |it''s|xxx|ab");

  Reader rd(path);
  const int64_t before = limit_sqlite_heap(64 << 20);
  std::string cols;
  for (int i = 0; i < 8; i++) cols += std::string(i ? ", " : "") + "randomblob(15000000)";
  ltrun_test::require_error([&] { rd.query("SELECT " + cols); }, {"more memory than SQLite may take here (64 MB in all)"});
  limit_sqlite_heap(before);
  CHECK(std::get<int64_t>(rd.query("SELECT count(*) FROM metrics").table.rows[0][0]) == 10);  // still usable
}

TEST_CASE("host_allowed: localhost and IP addresses with any port, named hosts only when allowed") {
  for (const char* h : {"localhost", "localhost:8080", "LOCALHOST:1", "127.0.0.1", "127.0.0.1:8080", "[::1]", "[::1]:8080",
                        "192.168.1.5:80", "[fe80::1]:9"})
    CHECK(host_allowed(h, {}));
  for (const char* h : {"", "evil.example", "evil.example:8080", "localhost.evil.example", "127.0.0.1.nip.io",
                        "localhost:", "localhost:80x", "[::1", "[evil]:80", "127.0.0.1:8080:1", "runs.example"})
    CHECK_FALSE(host_allowed(h, {}));
  CHECK(host_allowed("runs.example:8080", {"Runs.Example"}));
  CHECK_FALSE(host_allowed("other.example", {"runs.example"}));
  CHECK(valid_host_name("box.lan"));
  CHECK_FALSE(valid_host_name("box.lan:80"));
  CHECK_FALSE(valid_host_name(""));
  CHECK_FALSE(valid_host_name("a b"));
}

TEST_CASE("one run summary: /api/runs/ID and `ltrun show` read the same view (store/views.h)") {
  const std::string dir = ltrun_test::scratch_dir("serve", "views");
  const std::string path = dir + "/runs.db";
  int64_t id = 0;
  {
    auto st = store::Store::open(path);
    store::RunStart r;
    r.name = "study";
    r.seed = 7;
    id = st->begin_run(r);
    for (int s = 0; s < 4; s++) st->metric(id, "loss", 4.0 - s, s);
    st->param(id, "lr", "0.1");
    st->layer_metric(id, "js", 0, "g", 0.5);
    st->layer_metric(id, "js", 1, "g", 0.25);
    st->eval_item(id, {"mcq", "q1", "cat", "logit", "A", "A", true});
    st->eval_item(id, {"mcq", "q2", "cat", "logit", "B", "A", false});
    store::RunStart c = r;
    c.parent_id = id;
    c.name = "child";
    st->end_run(st->begin_run(c), store::Status::ok);
    st->end_run(id, store::Status::ok);
  }
  auto st = store::Store::open(path);
  const store::RunSummary sum = store::run_summary(store::query_of(*st), id);
  Api api(std::make_shared<Reader>(path), 500);
  const json got = body(api.get("/api/runs/" + std::to_string(id), {}));
  // every field of the view is in the API's run, with the same value (args_json as args)
  for (size_t c = 0; c < sum.run.columns.size(); c++) {
    const std::string& k = sum.run.columns[c];
    if (k == "args_json") continue;
    INFO(k);
    REQUIRE(got["run"].contains(k));
    const store::Value& v = sum.run.rows[0][c];
    if (std::holds_alternative<int64_t>(v)) CHECK(got["run"][k] == std::get<int64_t>(v));
    else if (std::holds_alternative<std::string>(v)) CHECK(got["run"][k] == std::get<std::string>(v));
    else if (std::holds_alternative<std::monostate>(v)) CHECK(got["run"][k].is_null());
  }
  CHECK(got["run"]["seed"] == 7);
  CHECK(got["run"]["status"] == "ok");
  // the sections: the same rows (by their names) as the view
  REQUIRE(got["metrics"].size() == sum.metrics.rows.size());
  CHECK(got["metrics"][0]["name"] == "loss");
  CHECK(got["metrics"][0]["points"] == 4);
  CHECK(got["metrics"][0]["last"] == 1.0);
  for (const char* col : {"points", "first_step", "last_step", "min", "max", "t0", "t1"})
    CHECK(got["metrics"][0].contains(col));
  REQUIRE(got["layer_metrics"].size() == 1);
  CHECK(got["layer_metrics"][0]["layers"] == 2);
  CHECK(got["params"]["lr"] == "0.1");
  REQUIRE(got["eval"].size() == 1);
  CHECK(got["eval"][0]["items"] == 2);
  CHECK(got["eval"][0]["accuracy"] == 0.5);
  REQUIRE(got["children"].size() == 1);
  CHECK(got["children"][0]["name"] == "child");
  CHECK(got["run"]["root"] == id);
  CHECK_THROWS_WITH(store::run_summary(store::query_of(*st), 9999), "no run with id 9999");
}

// The results table (/api/table) on a sweep whose every value is known here: child i (1..N)
// has param width = w(i) (text, compared as a number), plan = "p" + i % 3, a `loss` whose
// min, max and last are written out of step order, and (even i only) `acc`. The expected
// orders are computed here from those formulas, not read back from the store.
TEST_CASE("api: /api/table sorts and pages runs by params and by a metric's last, min and max in SQL") {
  const std::string path = ltrun_test::scratch_dir("serve", "table") + "/runs.db";
  const int n = 23;
  std::vector<int64_t> ids(n + 1);
  auto width = [](int i) { return (i * 37) % 101; };  // 0..100: "9" < "10" as numbers, not as text
  auto lo = [](int i) { return double((i * 13) % 29) / 10; };  // loss min: distinct for i in 1..23
  auto last = [](int i) { return 5.0 + double((i * 7) % 23); };  // at the highest step, written first
  int64_t sweep = 0;
  {
    auto st = store::Store::open(path);
    store::RunStart r;
    r.name = "sweep";
    sweep = st->begin_run(r);
    for (int i = 1; i <= n; i++) {
      store::RunStart c;
      c.name = "child_" + std::to_string(i);
      c.parent_id = sweep;
      ids[size_t(i)] = st->begin_run(c);
      st->param(ids[size_t(i)], "width", std::to_string(width(i)));
      st->param(ids[size_t(i)], "plan", "p" + std::to_string(i % 3));
      st->param(ids[size_t(i)], "out", "/runs/child_" + std::to_string(i));  // a path: no default column
      if (i <= 2) st->metric(ids[size_t(i)], "best", 1.0, 1);                 // most lack it: no default column
      st->metric(ids[size_t(i)], "loss", last(i), 100);  // the last step, logged first
      st->metric(ids[size_t(i)], "loss", lo(i), 3);
      st->metric(ids[size_t(i)], "loss", 50 + i, 7);  // the max
      st->metric(ids[size_t(i)], "loss", NAN, 8);      // NULL: not a min or a max
      if (i % 2 == 0) st->metric(ids[size_t(i)], "acc", double(i) / n, 1);
      st->end_run(ids[size_t(i)], i == 5 ? store::Status::failed : store::Status::ok);
    }
    st->param(ids[4], "width", "wide");  // a text among numbers: after them
    st->end_run(sweep, store::Status::ok);
  }
  Api api(std::make_shared<Reader>(path), 5000);
  const std::string parent = std::to_string(sweep);
  auto order_of = [&](Params p) {
    p.emplace("parent", parent);
    std::vector<int64_t> out;
    const auto r = api.get("/api/table", p);
    REQUIRE(r.status == 200);
    const json b = body(r);
    for (const auto& row : b["rows"]) out.push_back(row["id"].get<int64_t>());
    return out;
  };
  auto expected = [&](auto key) {  // children by key(i) ascending, ties by id descending
    std::vector<int> is;
    for (int i = 1; i <= n; i++) is.push_back(i);
    std::stable_sort(is.begin(), is.end(), [&](int a, int b) { return key(a) < key(b) || (key(a) == key(b) && a > b); });
    std::vector<int64_t> out;
    for (int i : is) out.push_back(ids[size_t(i)]);
    return out;
  };
  auto reversed = [](std::vector<int64_t> v) { std::reverse(v.begin(), v.end()); return v; };

  CHECK(order_of({{"sort", "min:loss"}, {"order", "asc"}}) == expected(lo));
  CHECK(order_of({{"sort", "min:loss"}, {"order", "desc"}}) == reversed(expected(lo)));
  CHECK(order_of({{"sort", "last:loss"}}) == expected(last));  // asc by default
  CHECK(order_of({{"sort", "max:loss"}, {"order", "desc"}}) == reversed(expected([](int i) { return 50 + i; })));
  // a param by its number; the text "wide" (child 4) after the numbers
  auto by_width = expected([&](int i) { return i == 4 ? 1000 : width(i); });
  CHECK(order_of({{"sort", "param:width"}}) == by_width);
  // acc: the odd children have none: last in either order
  auto acc_desc = order_of({{"sort", "max:acc"}, {"order", "desc"}});
  REQUIRE(acc_desc.size() == size_t(n));
  for (int k = 0; k < n / 2; k++) CHECK(acc_desc[size_t(k)] == ids[size_t(2 * (n / 2 - k))]);
  for (size_t k = n / 2; k < size_t(n); k++) CHECK(std::find(ids.begin() + 1, ids.end(), acc_desc[k]) != ids.end());

  // pages of 5 put together are the whole order; each page holds 5 rows, total says 23
  std::vector<int64_t> paged;
  for (int off = 0; off < n; off += 5) {
    const auto r = body(api.get("/api/table", {{"parent", parent}, {"sort", "min:loss"}, {"order", "asc"}, {"limit", "5"}, {"offset", std::to_string(off)}}));
    CHECK(r["total"] == n);
    CHECK(r["rows"].size() == size_t(std::min(5, n - off)));
    for (const auto& row : r["rows"]) paged.push_back(row["id"].get<int64_t>());
  }
  CHECK(paged == expected(lo));

  // the cells: last by step (not the row written last), min and max without the NULL
  const auto one = body(api.get("/api/table", {{"parent", parent}, {"sort", "id"}, {"order", "asc"}, {"limit", "1"},
                                               {"params", "width,plan"}, {"metrics", "loss,acc"}}));
  REQUIRE(one["rows"].size() == 1);
  const auto& c1 = one["rows"][0];
  CHECK(c1["id"] == ids[1]);
  CHECK(c1["params"]["width"] == std::to_string(width(1)));
  CHECK(c1["params"]["plan"] == "p1");
  CHECK(c1["metrics"]["loss"]["last"] == last(1));
  CHECK(c1["metrics"]["loss"]["last_step"] == 100);
  CHECK(c1["metrics"]["loss"]["min"] == lo(1));
  CHECK(c1["metrics"]["loss"]["max"] == 51.0);
  CHECK(c1["metrics"]["acc"]["last"].is_null());
  CHECK(one["available"]["params"] == json::array({"out", "plan", "width"}));
  CHECK(one["available"]["metrics"] == json::array({"acc", "best", "loss"}));
  // default columns (issue 38): no path params, no metric most runs lack; loss before acc
  const auto dflt = body(api.get("/api/table", {{"parent", parent}, {"limit", "1"}}));
  CHECK(dflt["params"] == json::array({"plan", "width"}));
  CHECK(dflt["metrics"] == json::array({"loss", "acc"}));
  // "best M" only for a metric a child logged: the sweep's children logged loss, none "nothere"
  const auto top1 = body(api.get("/api/table", {{"metrics", "nothere,loss"}}));
  CHECK(top1["rows"][0]["child_metrics"] == json::array({"loss"}));
  // the runs list: each run's params (the list shows those that tell runs apart)
  const auto kids = body(api.get("/api/runs", {{"parent", parent}, {"limit", "3"}}));
  REQUIRE(kids["runs"].size() == 3);
  for (const auto& k : kids["runs"]) {
    const std::string plan = k["params"].value("plan", "");
    CHECK(plan.size() == 2);
  }

  // filters: a param's value, the name, the status; the default scope is the top-level runs
  CHECK(order_of({{"param", "plan=p1"}, {"sort", "id"}, {"order", "asc"}}) ==
        std::vector<int64_t>{ids[1], ids[4], ids[7], ids[10], ids[13], ids[16], ids[19], ids[22]});
  CHECK(order_of({{"name", "child_2"}, {"sort", "id"}, {"order", "asc"}}) == std::vector<int64_t>{ids[2], ids[20], ids[21], ids[22], ids[23]});
  CHECK(order_of({{"status", "failed"}}) == std::vector<int64_t>{ids[5]});
  CHECK(order_of({{"param", "plan=p1"}, {"param", "width=" + std::to_string(width(7))}}) == std::vector<int64_t>{ids[7]});
  const auto top = body(api.get("/api/table", {}));
  CHECK(top["total"] == 1);
  CHECK(top["rows"][0]["children"] == n);

  // bad input: named, 400
  for (const Params& bad : std::vector<Params>{{{"sort", "loss"}}, {{"sort", "min:"}}, {{"sort", "mean:loss"}}, {{"order", "up"}},
                                              {{"param", "=3"}}, {{"limit", "-1"}}, {{"parent", "x"}},
                                              {{"metrics", "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q,r,s,t,u"}}}) {
    const auto r = api.get("/api/table", bad);
    CHECK(r.status == 400);
    CHECK(body(r)["error"].get<std::string>().size() > 10);
  }
  // a quote in a name is a name, not SQL
  CHECK(api.get("/api/table", {{"parent", parent}, {"sort", "min:lo'ss"}, {"metrics", "x'); DROP TABLE runs; --"}}).status == 200);
}

// A connection the server accepts gets TCP_NODELAY (tune_connection, called on every accepted
// socket): without it a response's second write waited for the client's delayed ACK (~40 ms
// on most kept-alive requests; experiments/bench/serve.lua's table_fetch_p95_ms shows it).
TEST_CASE("server: an accepted connection has TCP_NODELAY set") {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(listener >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(listener, 1) == 0);
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  const int client = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(::connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  const int conn = ::accept(listener, nullptr, nullptr);
  REQUIRE(conn >= 0);
  auto nodelay = [](int fd) {
    int v = 0;
    socklen_t n = sizeof v;
    REQUIRE(::getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &n) == 0);
    return v != 0;
  };
  CHECK_FALSE(nodelay(conn));  // the kernel's default: Nagle on
  tune_connection(conn);
  CHECK(nodelay(conn));
  ::close(conn);
  ::close(client);
  ::close(listener);
}
