// runtime/store/store.cpp: SQLite run store (see store.h). Buffered rows are flushed by the
// writing thread when the buffer is large, and by a background thread at least every second.
#include "runtime/store/store.h"

#include <fmt/ranges.h>  // fmt::join: in its own header from fmt 11 on
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <exception>
#include <mutex>
#include <thread>

#include "runtime/core/env.h"
#include "runtime/core/error.h"
#include "runtime/store/embedded.h"
#include "runtime/store/sqlite.h"

namespace ltrun::store {

namespace {
// The function the authorizer refused last on this thread (prepare runs the authorizer on the
// caller's thread), for an error message that names it instead of SQLite's "not authorized".
thread_local std::string t_refused_function;

// Set up on every connection this process opens (sqlite3_auto_extension), the store's own and
// the raw ones of merge, export and import alike: fts3_tokenizer() with two arguments installs
// a pointer of the caller's choosing, load_extension() loads a shared library.
int harden_new_connection(sqlite3* db, char**, const struct sqlite3_api_routines*) {
  harden_connection(db);
  return SQLITE_OK;
}
}  // namespace

const char* refused_sql_function(const char* name) {
  if (!name) return nullptr;
  struct Refusal {
    const char* name;
    const char* why;
  };
  // Functions of the library (fts3_tokenizer, load_extension) and of the sqlite3 shell (in case
  // a build links the shell's extensions: readfile, writefile, edit, fsdir, ...): none of them
  // reads the run store, each reaches outside it.
  static const Refusal refused[] = {
      {"fts3_tokenizer", "it reads and installs tokenizer pointers (a process address)"},
      {"load_extension", "it loads a shared library into the process"},
      {"readfile", "it reads a file outside the run store"},
      {"writefile", "it writes a file"},
      {"edit", "it starts an editor"},
      {"fsdir", "it lists folders outside the run store"},
      {"lsmode", "it belongs to the sqlite3 shell's file access"},
      {"sha3_query", "it runs SQL given as text"},
      {"zipfile", "it reads and writes archives outside the run store"},
      {"sqlar_compress", "it belongs to the sqlite3 shell's archives"},
      {"sqlar_uncompress", "it belongs to the sqlite3 shell's archives"},
  };
  for (const auto& r : refused)
    if (sqlite3_stricmp(name, r.name) == 0) return r.why;
  return nullptr;
}

int function_authorizer(void*, int action, const char*, const char* function, const char*, const char*) {
  if (action != SQLITE_FUNCTION || !refused_sql_function(function)) return SQLITE_OK;
  t_refused_function = function;
  return SQLITE_DENY;
}

std::string refused_function_error() {
  std::string name;
  std::swap(name, t_refused_function);
  if (name.empty()) return "";
  return fmt::format("the SQL function {}() is refused: {}", name, refused_sql_function(name.c_str()));
}

void harden_connection(sqlite3* db) {
  // (the C API's sqlite3_enable_load_extension is off by default; these make sure for the SQL side)
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, 0, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, nullptr);
  sqlite3_enable_load_extension(db, 0);
  // no write to sqlite_master through writable_schema, no raw page writes (sqlite_dbpage)
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_set_authorizer(db, function_authorizer, nullptr);
}

void harden_all_connections() {
  // sqlite3_auto_extension registers an entry point once, however often it is called
  static const int rc = sqlite3_auto_extension(reinterpret_cast<void (*)()>(harden_new_connection));
  (void)rc;
}

namespace {
// before any connection of the process: main() of ltrun and of the tests alike
const bool g_hardened = (harden_all_connections(), true);
}  // namespace

const char* status_name(Status s) {
  switch (s) {
    case Status::running: return "running";
    case Status::ok: return "ok";
    case Status::failed: return "failed";
    case Status::interrupted: return "interrupted";
    case Status::crashed: return "crashed";
  }
  return "?";
}

std::string to_text(const Value& v) {
  if (std::holds_alternative<int64_t>(v)) return std::to_string(std::get<int64_t>(v));
  if (std::holds_alternative<double>(v)) return fmt::format("{}", std::get<double>(v));
  if (std::holds_alternative<std::string>(v)) return std::get<std::string>(v);
  return "";
}

namespace {

constexpr int kBusyTimeoutMs = 120000;  // concurrent ranks/studies wait for each other, not fail
constexpr int kReaderBusyTimeoutMs = 10000;  // WAL readers wait only for a writer's recovery
constexpr size_t kFlushRows = 8192;     // writer flushes itself past this many buffered rows
constexpr auto kFlushEvery = std::chrono::milliseconds(1000);

// One buffered row; `kind` picks the statement.
struct Row {
  enum Kind { param, metric, layer_metric, eval_item, artifact } kind;
  Row(Kind k, int64_t run_id) : kind(k), run(run_id) {}
  int64_t run;
  std::string s1, s2, s3, s4, s5, s6, s7, s8;
  double value = 0;
  std::optional<int64_t> i1, i2;
  double t = 0;
};

}  // namespace

struct Store::Impl {
  std::string path;
  std::optional<Db> conn;  // the connection (sqlite.h); `db` is its handle
  sqlite3* db = nullptr;
  int version = 0;
  bool readonly = false;
  mutable std::mutex mu;
  std::vector<Row> pending;
  std::map<std::pair<int64_t, std::string>, int64_t> next_step;
  std::map<int, sqlite3_stmt*> stmts;
  std::thread flusher;
  std::condition_variable cv;
  bool stopping = false;

  void connect(Db d) {
    conn.emplace(std::move(d));
    db = conn->get();
  }
  [[noreturn]] void fail_sql(int rc, const std::string& what) {
    if (conn) conn->fail_sql(rc, what);
    fail("{}: {} failed: {}", path, what, sqlite3_errstr(rc));
  }
  void exec(const std::string& sql, const char* what) { conn->exec(sql, what); }
  // exec, retried while SQLite answers busy. Switching a new file to WAL takes an exclusive lock,
  // and SQLite answers SQLITE_BUSY at once, without calling the busy handler, when two
  // connections would otherwise deadlock on it (seen with four processes opening one new store).
  void exec_waiting(const std::string& sql, const char* what) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
    for (int attempt = 0;; attempt++) {
      int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
      if (rc == SQLITE_OK) return;
      if ((rc & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() > deadline) fail_sql(rc, what);
      // 1..64 ms, staggered by pid so that two waiting openers do not retry in step
      std::this_thread::sleep_for(std::chrono::milliseconds(1 + (attempt * 7 + getpid()) % 64));
    }
  }
  sqlite3_stmt* prepare(const std::string& sql, bool persistent = false) { return conn->prepare(sql, persistent); }
  sqlite3_stmt* cached(int key, const char* sql) {
    auto it = stmts.find(key);
    if (it != stmts.end()) return it->second;
    return stmts[key] = prepare(sql, true);
  }
  void step_done(sqlite3_stmt* st, const std::string& what) { conn->step_done(st, what); }
  int64_t int_query(const std::string& sql) { return conn->int_query(sql); }

  // A file at user_version 0: a new store when it has no tables, else someone else's database.
  void refuse_foreign(bool reading) {
    std::vector<std::string> foreign;
    sqlite3_stmt* st = prepare("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name");
    while (sqlite3_step(st) == SQLITE_ROW)
      foreign.push_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
    sqlite3_finalize(st);
    if (!foreign.empty())
      fail("{}: a SQLite database but not an ltrun run store (user_version 0, tables: {}); "
           "pass another --db", path, fmt::join(foreign, ", "));
    if (reading) fail("{}: an empty file, not yet an ltrun run store (no run has been stored in it)", path);
  }

  void migrate() {
    exec_waiting("PRAGMA journal_mode=WAL", "enabling WAL");
    exec("PRAGMA synchronous=NORMAL", "setting synchronous");
    exec("PRAGMA foreign_keys=ON", "enabling foreign keys");
    // BEGIN IMMEDIATE: two processes opening a new file at once must not both migrate.
    exec_waiting("BEGIN IMMEDIATE", "locking for migration");
    try {
      version = int(int_query("PRAGMA user_version"));
      const auto all = migrations();
      const int latest = all.empty() ? 0 : all.back().version;
      if (version == 0) refuse_foreign(false);
      if (version > latest)
        fail("{}: run store schema version {} is newer than this ltrun knows ({}); update ltrun",
             path, version, latest);
      for (const auto& m : all) {
        if (m.version <= version) continue;
        exec(m.sql, ("applying migration db/migrations/" + m.name).c_str());
        exec("PRAGMA user_version=" + std::to_string(m.version), "setting user_version");
        version = m.version;
      }
      exec("COMMIT", "committing migration");
    } catch (...) {
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

  static std::optional<std::string> column_text(sqlite3_stmt* st, int c) {
    const unsigned char* p = sqlite3_column_text(st, c);
    return p ? std::optional<std::string>(reinterpret_cast<const char*>(p)) : std::nullopt;
  }

  // Rows left `running` by a process of this machine that no longer exists (judge_running).
  void recover_crashed() {
    const std::string host = host_name();
    std::vector<std::pair<int64_t, std::string>> dead;  // id, why
    sqlite3_stmt* st = prepare(
        "SELECT id, pid, boot_id, machine_id, process_start FROM runs WHERE status='running' AND host=?");
    sqlite3_bind_text(st, 1, host.c_str(), -1, SQLITE_TRANSIENT);
    while (sqlite3_step(st) == SQLITE_ROW) {
      RunProcess p{host, sqlite3_column_int64(st, 1), column_text(st, 2), column_text(st, 3), std::nullopt};
      if (sqlite3_column_type(st, 4) != SQLITE_NULL) p.process_start = sqlite3_column_int64(st, 4);
      Liveness l = judge_running(p);
      if (l.state == Liveness::dead) dead.emplace_back(sqlite3_column_int64(st, 0), std::move(l.why));
    }
    sqlite3_finalize(st);
    if (dead.empty()) return;
    exec_waiting("BEGIN IMMEDIATE", "locking to mark crashed runs");
    sqlite3_stmt* up = prepare(
        "UPDATE runs SET status='crashed', finished_at=?, error=coalesce(error, ?) "
        "WHERE id=? AND status='running'");
    for (const auto& [id, err] : dead) {
      std::string ts = utc_timestamp();
      sqlite3_bind_text(up, 1, ts.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(up, 2, err.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(up, 3, id);
      step_done(up, "marking a run crashed");
    }
    sqlite3_finalize(up);
    exec("COMMIT", "committing crashed runs");
  }

  static void bind_opt(sqlite3_stmt* st, int i, const std::optional<int64_t>& v) {
    if (v) sqlite3_bind_int64(st, i, *v); else sqlite3_bind_null(st, i);
  }
  static void bind_text(sqlite3_stmt* st, int i, const std::string& s) {
    sqlite3_bind_text(st, i, s.data(), int(s.size()), SQLITE_TRANSIENT);
  }
  static void bind_real(sqlite3_stmt* st, int i, double v) {
    if (std::isnan(v)) sqlite3_bind_null(st, i); else sqlite3_bind_double(st, i, v);
  }

  // caller holds mu
  void flush_locked() {
    if (pending.empty()) return;
    exec("BEGIN IMMEDIATE", "starting a write");
    try {
      for (const Row& r : pending) {
        sqlite3_stmt* st = nullptr;
        switch (r.kind) {
          case Row::param:
            st = cached(1, "INSERT OR REPLACE INTO params(run_id, key, value) VALUES (?,?,?)");
            sqlite3_bind_int64(st, 1, r.run); bind_text(st, 2, r.s1); bind_text(st, 3, r.s2);
            break;
          case Row::metric:
            st = cached(2, "INSERT INTO metrics(run_id, name, step, value, t) VALUES (?,?,?,?,?)");
            sqlite3_bind_int64(st, 1, r.run); bind_text(st, 2, r.s1); bind_opt(st, 3, r.i1);
            bind_real(st, 4, r.value); sqlite3_bind_double(st, 5, r.t);
            break;
          case Row::layer_metric:
            st = cached(3, "INSERT INTO layer_metrics(run_id, name, layer, grp, value, step) "
                           "VALUES (?,?,?,?,?,?)");
            sqlite3_bind_int64(st, 1, r.run); bind_text(st, 2, r.s1); bind_opt(st, 3, r.i1);
            bind_text(st, 4, r.s2); bind_real(st, 5, r.value); bind_opt(st, 6, r.i2);
            break;
          case Row::eval_item:
            st = cached(4, "INSERT INTO eval_items(run_id, bench, item_id, category, protocol, "
                           "prediction, answer, correct, prompt, output) VALUES (?,?,?,?,?,?,?,?,?,?)");
            sqlite3_bind_int64(st, 1, r.run);
            bind_text(st, 2, r.s1); bind_text(st, 3, r.s2); bind_text(st, 4, r.s3);
            bind_text(st, 5, r.s4); bind_text(st, 6, r.s5); bind_text(st, 7, r.s6);
            bind_opt(st, 8, r.i1);
            if (r.s7.empty()) sqlite3_bind_null(st, 9); else bind_text(st, 9, r.s7);
            if (r.s8.empty()) sqlite3_bind_null(st, 10); else bind_text(st, 10, r.s8);
            break;
          case Row::artifact:
            st = cached(5, "INSERT INTO artifacts(run_id, kind, path, sha256, t) VALUES (?,?,?,?,?)");
            sqlite3_bind_int64(st, 1, r.run); bind_text(st, 2, r.s1); bind_text(st, 3, r.s2);
            bind_text(st, 4, r.s3); sqlite3_bind_double(st, 5, r.t);
            break;
        }
        step_done(st, "writing buffered rows");
      }
      exec("COMMIT", "committing buffered rows");
    } catch (...) {
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
    pending.clear();
  }

  void push(Row r) {
    std::lock_guard<std::mutex> lock(mu);
    r.t = unix_time();
    pending.push_back(std::move(r));
    if (pending.size() >= kFlushRows) flush_locked();
  }

  void flush_loop() {
    std::unique_lock<std::mutex> lock(mu);
    while (!stopping) {
      cv.wait_for(lock, kFlushEvery);
      if (stopping) break;
      try {
        flush_locked();
      } catch (const std::exception&) {
        // keep the rows; the owning thread's next flush reports the error
      }
    }
  }

  // Each reader connection refuses ATTACH/DETACH (a path anywhere on disk) and switching
  // query_only or writable_schema; writes themselves are refused in query() by
  // sqlite3_stmt_readonly, and by the read-only open below that.
  static int reader_authorizer(void* user, int action, const char* a1, const char* a2, const char* a3,
                               const char* a4) {
    if (action == SQLITE_FUNCTION) return function_authorizer(user, action, a1, a2, a3, a4);
    if (action == SQLITE_ATTACH || action == SQLITE_DETACH) return SQLITE_DENY;
    if (action == SQLITE_PRAGMA && a1 && a2 &&
        (sqlite3_stricmp(a1, "query_only") == 0 || sqlite3_stricmp(a1, "writable_schema") == 0))
      return SQLITE_DENY;
    return SQLITE_OK;
  }

  ~Impl() {
    if (flusher.joinable()) {
      { std::lock_guard<std::mutex> lock(mu); stopping = true; }
      cv.notify_all();
      flusher.join();
    }
    for (auto& [k, st] : stmts) sqlite3_finalize(st);  // before the connection closes
  }
};

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Store::~Store() {
  try {
    flush();
  } catch (const std::exception& e) {
    fmt::print(stderr, "ltrun: could not write the last rows to {}: {}\n", impl_->path, e.what());
  }
}

Liveness judge_running(const RunProcess& p) {
  static const std::string host = host_name(), boot = boot_id(), machine = machine_id();
  const std::string who = fmt::format("process {} on {}", p.pid, p.host);
  if (p.host != host) return {Liveness::unknown, who + " (another host: not checked from here)"};
  const std::string gone = who + " ended without closing the run";
  if (!p.boot_id || p.boot_id->empty()) {  // written before boot ids were recorded
    if (p.pid == getpid() || process_alive(p.pid)) return {Liveness::alive, who + " is alive"};
    return {Liveness::dead, gone};
  }
  if (!boot.empty() && *p.boot_id == boot) {
    if (p.pid == getpid()) return {Liveness::alive, who + " is this process"};
    if (!process_alive(p.pid)) return {Liveness::dead, gone};
    if (p.process_start && *p.process_start >= 0) {
      const long long now = process_start_time(p.pid);
      if (now >= 0 && now != *p.process_start)
        return {Liveness::dead, fmt::format("{} (pid {} now belongs to another process)", gone, p.pid)};
    }
    return {Liveness::alive, who + " is alive"};
  }
  if (!machine.empty() && p.machine_id && *p.machine_id == machine)
    return {Liveness::dead, gone + " (the machine has rebooted since)"};
  return {Liveness::unknown, who + " (another machine with the same host name: not checked from here)"};
}

std::shared_ptr<Store> Store::open(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent))
    fail("{}: cannot create the run store: folder {} does not exist", path, parent.string());
  impl->connect(Db::writer(path, true, kBusyTimeoutMs));
  impl->migrate();
  impl->recover_crashed();
  Impl* raw = impl.get();
  impl->flusher = std::thread([raw] { raw->flush_loop(); });
  return std::shared_ptr<Store>(new Store(std::move(impl)));
}

namespace {
// `path` as an SQLite URI (file:...), for the immutable fallback below
std::string file_uri(const std::string& path, const char* query) {
  std::string uri = "file:";
  for (unsigned char c : absolute_path(path)) {
    if (c == '?' || c == '#' || c == '%' || c < 0x20 || c >= 0x7f) uri += fmt::format("%{:02X}", c);
    else uri += char(c);
  }
  return uri + "?" + query;
}
}  // namespace

sqlite3* open_readonly_connection(const std::string& path) {
  LT_CHECK(file_exists(path), "{}: no run store there (nothing has been run with this --db yet)", path);
  harden_all_connections();
  auto try_open = [&](bool immutable) {
    sqlite3* db = nullptr;
    auto check = [&](int rc, const char* what) {
      if (rc == SQLITE_OK) return;
      const std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
      sqlite3_close_v2(db);
      if (rc == SQLITE_NOTADB)
        fail("{}: not an ltrun run store ({}); pass another --db or move the file away", path, msg);
      fail("{}: {} failed: {}", path, what, msg);
    };
    const std::string name = immutable ? file_uri(path, "immutable=1") : path;
    check(sqlite3_open_v2(name.c_str(), &db,
                          SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX | (immutable ? SQLITE_OPEN_URI : 0), nullptr),
          "opening the run store read-only");
    sqlite3_busy_timeout(db, kReaderBusyTimeoutMs);
    check(sqlite3_exec(db, "PRAGMA query_only=1", nullptr, nullptr, nullptr), "making the connection query-only");
    // the first read: a WAL store needs its -shm file from here on
    check(sqlite3_exec(db, "PRAGMA user_version", nullptr, nullptr, nullptr), "reading the run store");
    return db;
  };
  try {
    return try_open(false);
  } catch (const std::exception&) {
    // A WAL store in a folder this user cannot write, with no -shm file left by a writer:
    // SQLite cannot set up shared memory; nobody can be writing it then, so read it as an
    // immutable file.
    const std::exception_ptr first = std::current_exception();
    try {
      return try_open(true);
    } catch (const std::exception&) {
      std::rethrow_exception(first);
    }
  }
}

std::shared_ptr<Store> Store::open_readonly(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->readonly = true;
  impl->connect(Db::reader(path));
  sqlite3_set_authorizer(impl->db, Impl::reader_authorizer, nullptr);
  impl->version = int(impl->int_query("PRAGMA user_version"));
  if (impl->version == 0) impl->refuse_foreign(true);
  return std::shared_ptr<Store>(new Store(std::move(impl)));
}

const std::string& Store::path() const { return impl_->path; }
int Store::schema_version() const { return impl_->version; }
bool Store::read_only() const { return impl_->readonly; }

std::string bound_error(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  const size_t room = max_bytes > 128 ? max_bytes - 64 : max_bytes / 2;  // 64: the note
  size_t head = room * 3 / 4, tail = text.size() - (room - head);
  auto continuation = [&](size_t i) { return (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80; };
  while (head > 0 && continuation(head)) head--;  // cut between UTF-8 characters
  while (tail < text.size() && continuation(tail)) tail++;
  return text.substr(0, head) + fmt::format("\n[... {} bytes cut ...]\n", tail - head) + text.substr(tail);
}

int64_t Store::begin_run(const RunStart& r) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  sqlite3_stmt* st = impl_->cached(10,
      "INSERT INTO runs(parent_id, rerun_of, name, script_path, script_sha256, script_text, "
      "args_json, status, git_rev, host, pid, device, torch_version, ltrun_version, seed, started_at, "
      "machine_id, boot_id, process_start, workdir) "
      "VALUES (?,?,?,?,?,?,?,'running',?,?,?,?,?,?,?,?,?,?,?,?)");
  Impl::bind_opt(st, 1, r.parent_id);
  Impl::bind_opt(st, 2, r.rerun_of);
  Impl::bind_text(st, 3, r.name);
  Impl::bind_text(st, 4, r.script_path);
  Impl::bind_text(st, 5, r.script_sha256);
  if (r.script_text.empty()) sqlite3_bind_null(st, 6); else Impl::bind_text(st, 6, r.script_text);
  Impl::bind_text(st, 7, r.args_json);
  if (r.git_rev.empty()) sqlite3_bind_null(st, 8); else Impl::bind_text(st, 8, r.git_rev);
  Impl::bind_text(st, 9, host_name());
  sqlite3_bind_int64(st, 10, getpid());
  Impl::bind_text(st, 11, r.device);
  Impl::bind_text(st, 12, r.torch_version);
  Impl::bind_text(st, 13, LTRUN_VERSION);
  Impl::bind_opt(st, 14, r.seed);
  Impl::bind_text(st, 15, utc_timestamp());
  static const std::string machine = machine_id(), boot = boot_id();
  const long long started = process_start_time(getpid());  // not cached: a forked child differs
  if (machine.empty()) sqlite3_bind_null(st, 16); else Impl::bind_text(st, 16, machine);
  if (boot.empty()) sqlite3_bind_null(st, 17); else Impl::bind_text(st, 17, boot);
  if (started < 0) sqlite3_bind_null(st, 18); else sqlite3_bind_int64(st, 18, started);
  // where its artifacts may lie (runtime/store/artifact.h)
  std::error_code ec;
  const auto cwd = std::filesystem::canonical(std::filesystem::current_path(ec), ec);
  if (ec) sqlite3_bind_null(st, 19); else Impl::bind_text(st, 19, cwd.string());
  impl_->step_done(st, "starting run " + r.name);
  return sqlite3_last_insert_rowid(impl_->db);
}

void Store::end_run(int64_t run, Status s, const std::string& error) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::string flush_error;
  try {
    impl_->flush_locked();  // what the run logged lands before its status says it ended
  } catch (const std::exception& e) {
    // Rows that failed once would block every later write of this process: this run's are
    // dropped (and counted), rows of the runs still open stay buffered for their own end.
    auto& p = impl_->pending;
    const auto n = p.size();
    p.erase(std::remove_if(p.begin(), p.end(), [&](const Row& r) { return r.run == run; }), p.end());
    flush_error = fmt::format("{} ({} buffered rows of run {} were not written)", e.what(), n - p.size(), run);
    if (s == Status::ok) s = Status::failed;
  }
  std::string text = error;
  if (!flush_error.empty()) text += (text.empty() ? "" : "\n") + flush_error;
  text = bound_error(text);
  sqlite3_stmt* st = impl_->cached(11, "UPDATE runs SET status=?, error=?, finished_at=? WHERE id=?");
  Impl::bind_text(st, 1, status_name(s));
  if (text.empty()) sqlite3_bind_null(st, 2); else Impl::bind_text(st, 2, text);
  Impl::bind_text(st, 3, utc_timestamp());
  sqlite3_bind_int64(st, 4, run);
  impl_->step_done(st, "ending run " + std::to_string(run));
  if (!flush_error.empty()) fail("{}", flush_error);
}

Status Store::run_status(int64_t run) {
  Table t = query("SELECT status FROM runs WHERE id=?", {Value(run)});
  LT_CHECK(!t.rows.empty(), "{}: no run with id {}", impl_->path, run);
  const std::string s = to_text(t.rows[0][0]);
  for (Status x : {Status::running, Status::ok, Status::failed, Status::interrupted, Status::crashed})
    if (s == status_name(x)) return x;
  fail("{}: run {} has unknown status '{}'", impl_->path, run, s);
}

std::optional<Lease> Store::take_lease(const std::string& key, const std::string& job, int64_t pid,
                                       std::optional<int64_t> holder_run) {
  LT_CHECK(pid > 0, "take_lease {} / {}: bad process id {}", key, job, pid);
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& d = *impl_;
  d.exec("BEGIN IMMEDIATE", "locking to take a lease");
  try {
    sqlite3_stmt* st = d.prepare(
        "SELECT host, pid, machine_id, boot_id, process_start, holder_run, taken_at FROM leases "
        "WHERE key=? AND job=?");
    Impl::bind_text(st, 1, key);
    Impl::bind_text(st, 2, job);
    std::optional<Lease> held;
    if (sqlite3_step(st) == SQLITE_ROW) {
      RunProcess r{Impl::column_text(st, 0).value_or(""), sqlite3_column_int64(st, 1),
                   Impl::column_text(st, 3), Impl::column_text(st, 2), std::nullopt};
      if (sqlite3_column_type(st, 4) != SQLITE_NULL) r.process_start = sqlite3_column_int64(st, 4);
      // this process re-takes its own lease (to hand it to the worker it started)
      const bool ours = r.host == host_name() && r.pid == getpid() && r.boot_id == std::optional(boot_id());
      if (!ours && judge_running(r).state != Liveness::dead) {  // alive, or on a machine we cannot judge
        held = Lease{key, job, r.host, r.pid, std::nullopt, Impl::column_text(st, 6).value_or("")};
        if (sqlite3_column_type(st, 5) != SQLITE_NULL) held->holder_run = sqlite3_column_int64(st, 5);
      }
    }
    sqlite3_finalize(st);
    if (held) {
      d.exec("ROLLBACK", "ending a lease check");
      return held;
    }
    st = d.prepare(
        "INSERT OR REPLACE INTO leases(key, job, holder_run, host, pid, machine_id, boot_id, process_start, "
        "taken_at) VALUES (?,?,?,?,?,?,?,?,?)");
    Impl::bind_text(st, 1, key);
    Impl::bind_text(st, 2, job);
    Impl::bind_opt(st, 3, holder_run);
    Impl::bind_text(st, 4, host_name());
    sqlite3_bind_int64(st, 5, pid);
    const std::string machine = machine_id(), boot = boot_id();
    if (machine.empty()) sqlite3_bind_null(st, 6); else Impl::bind_text(st, 6, machine);
    if (boot.empty()) sqlite3_bind_null(st, 7); else Impl::bind_text(st, 7, boot);
    const long long started = process_start_time(pid);
    if (started < 0) sqlite3_bind_null(st, 8); else sqlite3_bind_int64(st, 8, started);
    Impl::bind_text(st, 9, utc_timestamp());
    const int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) d.fail_sql(rc, fmt::format("taking the lease of {} / {}", key, job));
    d.exec("COMMIT", "committing a lease");
  } catch (...) {
    sqlite3_exec(d.db, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return std::nullopt;
}

void Store::release_lease(const std::string& key, const std::string& job, int64_t pid) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  sqlite3_stmt* st = impl_->prepare("DELETE FROM leases WHERE key=? AND job=? AND pid=? AND host=?");
  Impl::bind_text(st, 1, key);
  Impl::bind_text(st, 2, job);
  sqlite3_bind_int64(st, 3, pid);
  Impl::bind_text(st, 4, host_name());
  const int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) impl_->fail_sql(rc, fmt::format("releasing the lease of {} / {}", key, job));
}

void Store::param(int64_t run, const std::string& key, const std::string& value) {
  Row r{Row::param, run};
  r.s1 = key;
  r.s2 = value;
  impl_->push(std::move(r));
}

void Store::metric(int64_t run, const std::string& name, double value, std::optional<int64_t> step) {
  Row r{Row::metric, run};
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    int64_t& next = impl_->next_step[{run, name}];
    if (!step) step = next;
    next = std::max(next, *step + 1);
  }
  r.s1 = name;
  r.value = value;
  r.i1 = step;
  impl_->push(std::move(r));
}

void Store::layer_metric(int64_t run, const std::string& name, int64_t layer, const std::string& grp,
                         double value, std::optional<int64_t> step) {
  Row r{Row::layer_metric, run};
  r.s1 = name;
  r.s2 = grp;
  r.value = value;
  r.i1 = layer;
  r.i2 = step;
  impl_->push(std::move(r));
}

void Store::eval_item(int64_t run, const EvalItem& e) {
  Row r{Row::eval_item, run};
  r.s1 = e.bench; r.s2 = e.item_id; r.s3 = e.category; r.s4 = e.protocol;
  r.s5 = e.prediction; r.s6 = e.answer; r.s7 = e.prompt; r.s8 = e.output;
  if (e.correct) r.i1 = *e.correct ? 1 : 0;
  impl_->push(std::move(r));
}

void Store::artifact(int64_t run, const std::string& kind, const std::string& path,
                     const std::string& sha256) {
  Row r{Row::artifact, run};
  r.s1 = kind; r.s2 = path; r.s3 = sha256;
  impl_->push(std::move(r));
}

void Store::flush() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  try {
    impl_->flush_locked();
  } catch (const std::exception& e) {
    fail("{} ({} rows stay buffered for the next flush)", e.what(), impl_->pending.size());
  }
}

size_t Store::pending() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->pending.size();
}

Table Store::query(const std::string& sql, const std::vector<Value>& binds) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->flush_locked();  // a query sees everything logged so far
  Table t;
  const char* tail = sql.c_str();
  // Several statements may be given; the table is the last one that returns columns.
  while (tail && *tail) {
    sqlite3_stmt* st = nullptr;
    t_refused_function.clear();
    int rc = sqlite3_prepare_v2(impl_->db, tail, -1, &st, &tail);
    if (rc != SQLITE_OK)  // (a refused function is SQLITE_ERROR, "not authorized to use function")
      if (const std::string why = refused_function_error(); !why.empty()) fail("{}: {}", impl_->path, why);
    if (rc == SQLITE_AUTH && impl_->readonly)
      fail("{}: opened read-only: ATTACH, DETACH and switching query_only/writable_schema are "
           "refused ({})", impl_->path, sqlite3_errmsg(impl_->db));
    if (rc != SQLITE_OK) impl_->fail_sql(rc, "preparing the query");
    if (!st) break;  // only whitespace or a comment was left
    if (impl_->readonly && !sqlite3_stmt_readonly(st)) {
      const std::string stmt = sqlite3_sql(st);
      sqlite3_finalize(st);
      fail("{}: opened read-only: refusing a statement that writes: `{}`", impl_->path, stmt);
    }
    for (size_t i = 0; i < binds.size() && i < size_t(sqlite3_bind_parameter_count(st)); i++) {
      const Value& v = binds[i];
      if (std::holds_alternative<int64_t>(v)) sqlite3_bind_int64(st, int(i + 1), std::get<int64_t>(v));
      else if (std::holds_alternative<double>(v)) sqlite3_bind_double(st, int(i + 1), std::get<double>(v));
      else if (std::holds_alternative<std::string>(v)) Impl::bind_text(st, int(i + 1), std::get<std::string>(v));
    }
    const int ncol = sqlite3_column_count(st);
    Table cur;
    for (int c = 0; c < ncol; c++) cur.columns.push_back(sqlite3_column_name(st, c));
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      std::vector<Value> row;
      for (int c = 0; c < ncol; c++) {
        switch (sqlite3_column_type(st, c)) {
          case SQLITE_INTEGER: row.emplace_back(int64_t(sqlite3_column_int64(st, c))); break;
          case SQLITE_FLOAT: row.emplace_back(sqlite3_column_double(st, c)); break;
          case SQLITE_NULL: row.emplace_back(std::monostate{}); break;
          default: {
            const char* p = reinterpret_cast<const char*>(sqlite3_column_text(st, c));
            row.emplace_back(std::string(p, size_t(sqlite3_column_bytes(st, c))));
          }
        }
      }
      cur.rows.push_back(std::move(row));
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) impl_->fail_sql(rc, "running the query");
    if (ncol > 0) t = std::move(cur);
  }
  return t;
}

// The name of an embedded named query: NAME of db/queries/NAME.sql (the store's own) or of
// experiments/STUDY/NAME.sql (a study's, kept in its folder); "" for a migration.
static std::string embedded_query_name(const std::string& path) {
  const bool shared = path.rfind("db/queries/", 0) == 0, study = path.rfind("experiments/", 0) == 0;
  if (!(shared || study) || path.size() < 4 || path.substr(path.size() - 4) != ".sql") return "";
  const size_t slash = path.rfind('/');
  return path.substr(slash + 1, path.size() - 4 - slash - 1);
}

std::string named_query(const std::string& name, const std::vector<std::string>& dirs) {
  // a file name of db/queries: letters, digits, '_', '-', '.' (never a path), and short
  LT_CHECK(!name.empty() && name.size() <= 100 && name != "." && name != ".." &&
               name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") ==
                   std::string::npos,
           "bad query name '{}{}' (a name of db/queries: letters, digits, _ - . and at most 100 characters)",
           name.substr(0, 100), name.size() > 100 ? "..." : "");
  for (const auto& f : embedded_sql())
    if (embedded_query_name(f.path) == name) return f.text;
  for (const auto& dir : dirs) {
    const std::string p = dir + "/" + name + ".sql";
    if (file_exists(p)) return read_file(p);
  }
  fail("no named query @{} (known: {}); add db/queries/{}.sql (or a study's experiments/STUDY/{}.sql) "
       "to ltrun, or name a folder with --queries DIR",
       name, fmt::join(named_query_names(dirs), ", "), name, name);
}

std::vector<std::string> named_query_names(const std::vector<std::string>& dirs) {
  std::vector<std::string> names;
  auto add = [&](const std::string& file) {
    if (file.size() > 4 && file.substr(file.size() - 4) == ".sql") {
      std::string n = file.substr(0, file.size() - 4);
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    }
  };
  for (const auto& dir : dirs) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) add(e.path().filename().string());
  }
  for (const auto& f : embedded_sql()) {
    const std::string n = embedded_query_name(f.path);
    if (!n.empty()) add(n + ".sql");
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace ltrun::store
