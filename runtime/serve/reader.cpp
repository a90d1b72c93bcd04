// runtime/serve/reader.cpp: read-only SQLite connections for `ltrun serve` (see reader.h).
// open_read_only() is the one place that opens the file; it can become the store's own
// read-only open once runtime/store has one.
#include "runtime/serve/reader.h"

#include <sqlite3.h>

#include <chrono>
#include <cmath>
#include <cstdint>

#include "runtime/core/env.h"
#include "runtime/core/error.h"

namespace ltrun::serve {

struct Connection {
  sqlite3* db = nullptr;
  std::string denied;  // what the authorizer refused last, for the error message
  std::chrono::steady_clock::time_point deadline;
  ~Connection() { sqlite3_close_v2(db); }
};

namespace {

const char* action_name(int code) {
  switch (code) {
    case SQLITE_INSERT: return "INSERT";
    case SQLITE_UPDATE: return "UPDATE";
    case SQLITE_DELETE: return "DELETE";
    case SQLITE_ATTACH: return "ATTACH";
    case SQLITE_DETACH: return "DETACH";
    case SQLITE_PRAGMA: return "PRAGMA";
    case SQLITE_ALTER_TABLE: return "ALTER TABLE";
    case SQLITE_REINDEX: return "REINDEX";
    case SQLITE_ANALYZE: return "ANALYZE";
    case SQLITE_DROP_TABLE: case SQLITE_DROP_INDEX: case SQLITE_DROP_VIEW: case SQLITE_DROP_TRIGGER:
    case SQLITE_DROP_TEMP_TABLE: case SQLITE_DROP_TEMP_INDEX: case SQLITE_DROP_TEMP_VIEW:
    case SQLITE_DROP_TEMP_TRIGGER: case SQLITE_DROP_VTABLE: return "DROP";
    case SQLITE_CREATE_TABLE: case SQLITE_CREATE_INDEX: case SQLITE_CREATE_VIEW:
    case SQLITE_CREATE_TRIGGER: case SQLITE_CREATE_TEMP_TABLE: case SQLITE_CREATE_TEMP_INDEX:
    case SQLITE_CREATE_TEMP_VIEW: case SQLITE_CREATE_TEMP_TRIGGER: case SQLITE_CREATE_VTABLE:
      return "CREATE";
    case SQLITE_TRANSACTION: return "a transaction statement";
    case SQLITE_SAVEPOINT: return "SAVEPOINT";
    default: return "this statement";
  }
}

// PRAGMAs that only read (without an argument): the schema browser needs them
bool pragma_reads(const char* name, const char* arg) {
  static const char* const reading[] = {"table_info", "table_xinfo", "index_list", "index_info",
                                        "foreign_key_list", "user_version", "schema_version",
                                        "page_count", "page_size", "database_list", "table_list",
                                        "function_list", "compile_options", "data_version"};
  const std::string n = name ? name : "";
  const bool takes_table_arg = n == "table_info" || n == "table_xinfo" || n == "index_list" ||
                               n == "index_info" || n == "foreign_key_list";
  for (const char* r : reading)
    if (n == r) return arg == nullptr || takes_table_arg;
  return false;
}

int authorize(void* user, int code, const char* a, const char* b, const char*, const char*) {
  auto* c = static_cast<Connection*>(user);
  switch (code) {
    case SQLITE_SELECT: case SQLITE_READ: case SQLITE_FUNCTION: case SQLITE_RECURSIVE:
      return SQLITE_OK;
    case SQLITE_PRAGMA:
      if (pragma_reads(a, b)) return SQLITE_OK;
      if (c->denied.empty())  // the first refusal names the statement
        c->denied = std::string("PRAGMA ") + (a ? a : "") + (b ? " = " + std::string(b) : "");
      return SQLITE_DENY;
    default: {
      // CREATE and DROP write the schema table first: name the statement, not that write
      const bool schema_row = (code == SQLITE_INSERT || code == SQLITE_UPDATE || code == SQLITE_DELETE) && a &&
                              (std::string(a) == "sqlite_master" || std::string(a) == "sqlite_temp_master");
      if (c->denied.empty()) c->denied = schema_row ? "a schema change (CREATE, DROP, ALTER)" : action_name(code);
      return SQLITE_DENY;
    }
  }
}

int progress(void* user) {
  auto* c = static_cast<Connection*>(user);
  return std::chrono::steady_clock::now() > c->deadline ? 1 : 0;
}

// Opens `path` read-only. Switch point for the store's own read-only open.
std::unique_ptr<Connection> open_read_only(const std::string& path) {
  LT_CHECK(file_exists(path), "{}: no run store there (pass --db PATH or set LTRUN_DB)", path);
  auto c = std::make_unique<Connection>();
  int rc = sqlite3_open_v2(path.c_str(), &c->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK)
    fail("{}: cannot open the run store read-only: {}", path, c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
  sqlite3_busy_timeout(c->db, 10000);
  sqlite3_exec(c->db, "PRAGMA query_only=1", nullptr, nullptr, nullptr);
  sqlite3_set_authorizer(c->db, authorize, c.get());
  sqlite3_progress_handler(c->db, 10000, progress, c.get());
  return c;
}

}  // namespace

Reader::Reader(std::string path) : path_(file_exists(path) ? absolute_path(path) : path) {
  release(open_read_only(path_));
  Result r;
  try {
    r = query("PRAGMA user_version");
  } catch (const Error& e) {
    fail("{}: not an ltrun run store ({})", path_, e.what());
  }
  schema_version_ = int(std::get<int64_t>(r.table.rows.at(0).at(0)));
  LT_CHECK(schema_version_ >= 1,
           "{}: not an ltrun run store (user_version 0); run a study on it first, or pass another --db",
           path_);
}

Reader::~Reader() = default;

std::unique_ptr<Connection> Reader::acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
  }
  return open_read_only(path_);
}

void Reader::release(std::unique_ptr<Connection> c) {
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < 8) idle_.push_back(std::move(c));
}

void Reader::each_row(const std::string& sql, const std::vector<store::Value>& binds, int timeout_ms,
                      const std::function<bool(sqlite3_stmt*)>& row,
                      const std::function<void(sqlite3_stmt*)>& prepared) {
  // the statement is finalized before its connection goes back to the pool
  struct Lease {
    Reader& r;
    std::unique_ptr<Connection> c;
    sqlite3_stmt* st = nullptr;
    ~Lease() {
      sqlite3_finalize(st);
      r.release(std::move(c));
    }
  } lease{*this, acquire()};
  Connection* c = lease.c.get();
  sqlite3* db = c->db;
  sqlite3_stmt*& st = lease.st;
  c->denied.clear();
  c->deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  const char* tail = nullptr;
  int rc = sqlite3_prepare_v2(db, sql.c_str(), int(sql.size()), &st, &tail);
  if (rc != SQLITE_OK) {
    if (!c->denied.empty() || rc == SQLITE_AUTH)
      throw Refused("the connection is read-only: " + (c->denied.empty() ? "this statement" : c->denied) +
                    " is refused (only SELECT and reading PRAGMAs)");
    throw Error(sqlite3_errmsg(db));
  }
  if (!st) fail("empty query");
  if (tail && *tail) {  // only whitespace and comments may follow
    sqlite3_stmt* next = nullptr;
    rc = sqlite3_prepare_v2(db, tail, -1, &next, nullptr);
    const bool more = rc != SQLITE_OK || next != nullptr;
    sqlite3_finalize(next);
    if (more) fail("one statement at a time (found more after `{}`)", std::string(sql.c_str(), tail));
  }
  if (!sqlite3_stmt_readonly(st))
    throw Refused("the connection is read-only: only statements that read are allowed");
  for (size_t i = 0; i < binds.size(); i++) {
    const auto& v = binds[i];
    const int k = int(i + 1);
    if (std::holds_alternative<int64_t>(v)) sqlite3_bind_int64(st, k, std::get<int64_t>(v));
    else if (std::holds_alternative<double>(v)) sqlite3_bind_double(st, k, std::get<double>(v));
    else if (std::holds_alternative<std::string>(v)) {
      const auto& s = std::get<std::string>(v);
      sqlite3_bind_text(st, k, s.data(), int(s.size()), SQLITE_TRANSIENT);
    } else sqlite3_bind_null(st, k);
  }
  if (prepared) prepared(st);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW)
    if (!row(st)) return;
  if (rc != SQLITE_DONE) {
    if (rc == SQLITE_INTERRUPT) fail("the query ran past {} ms and was stopped", timeout_ms);
    throw Error(sqlite3_errmsg(db));
  }
}  // finalizing the statement ends the read transaction, so the writer can checkpoint the WAL

Reader::Result Reader::query(const std::string& sql, const std::vector<store::Value>& binds,
                             size_t max_rows, int timeout_ms) {
  Result r;
  auto columns = [&](sqlite3_stmt* st) {
    for (int i = 0; i < sqlite3_column_count(st); i++) r.table.columns.push_back(sqlite3_column_name(st, i));
  };
  each_row(sql, binds, timeout_ms, [&](sqlite3_stmt* st) {
    const int n = sqlite3_column_count(st);
    if (r.table.rows.size() >= max_rows) {
      r.truncated = true;
      return false;
    }
    std::vector<store::Value> row(n);
    for (int i = 0; i < n; i++) {
      switch (sqlite3_column_type(st, i)) {
        case SQLITE_INTEGER: row[i] = int64_t(sqlite3_column_int64(st, i)); break;
        case SQLITE_FLOAT: row[i] = sqlite3_column_double(st, i); break;
        case SQLITE_NULL: break;
        default: {
          const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(st, i));
          row[i] = std::string(t, size_t(sqlite3_column_bytes(st, i)));
        }
      }
    }
    r.table.rows.push_back(std::move(row));
    return true;
  }, columns);
  return r;
}

std::vector<std::vector<double>> Reader::numeric_columns(const std::string& sql,
                                                         const std::vector<store::Value>& binds,
                                                         int timeout_ms) {
  std::vector<std::vector<double>> cols;
  auto columns = [&](sqlite3_stmt* st) { cols.resize(size_t(sqlite3_column_count(st))); };
  each_row(sql, binds, timeout_ms, [&](sqlite3_stmt* st) {
    const int n = int(cols.size());
    for (int i = 0; i < n; i++)
      cols[size_t(i)].push_back(sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i));
    return true;
  }, columns);
  return cols;
}

}  // namespace ltrun::serve
