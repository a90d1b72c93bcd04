// runtime/serve/reader.cpp: read-only SQLite connections for `ltrun serve` (see reader.h),
// opened by the store's own read-only open (store::open_readonly_connection).
#include "runtime/serve/reader.h"

#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>

#include "runtime/core/env.h"
#include "runtime/core/error.h"
#include "runtime/store/store.h"

namespace ltrun::serve {

// SQLite's own printf(), run on an in-memory connection of its own (see printf_checked)
struct PlainPrintf {
  sqlite3* db = nullptr;
  std::map<int, sqlite3_stmt*> stmts;  // "SELECT printf(?1, ..., ?n)" by n
  ~PlainPrintf() {
    for (auto& [n, st] : stmts) sqlite3_finalize(st);
    sqlite3_close_v2(db);
  }
};

struct Connection {
  sqlite3* db = nullptr;
  std::string denied;  // what the authorizer refused last, for the error message
  std::chrono::steady_clock::time_point deadline;
  std::shared_ptr<std::atomic<bool>> cancelled;  // the Reader's (Reader::cancel)
  PlainPrintf plain;
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
    case SQLITE_SELECT: case SQLITE_READ: case SQLITE_RECURSIVE:
      return SQLITE_OK;
    case SQLITE_FUNCTION:
      if (const char* why = store::refused_sql_function(b)) {
        if (c->denied.empty()) c->denied = fmt::format("the SQL function {}() is refused: {}", b, why);
        return SQLITE_DENY;
      }
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
  return (c->cancelled && *c->cancelled) || std::chrono::steady_clock::now() > c->deadline ? 1 : 0;
}

// The largest field width or precision a printf() format asks for, reading `*` from the
// arguments as SQLite does; the precision of a string conversion (at most that many
// characters) does not count.
int64_t largest_field(const char* f, int argc, sqlite3_value** argv) {
  int arg = 1;
  int64_t most = 0;
  for (const char* p = f; *p; p++) {
    if (*p != '%') continue;
    if (*++p == '%') continue;
    while (*p && std::strchr("-+ #!0,", *p)) p++;
    auto number = [&] {
      int64_t v = 0;
      if (*p == '*') {
        v = arg < argc ? sqlite3_value_int64(argv[arg++]) : 0;
        p++;
      } else {
        for (; std::isdigit((unsigned char)*p); p++) v = std::min<int64_t>(v * 10 + (*p - '0'), int64_t(1) << 40);
      }
      return v == INT64_MIN ? INT64_MAX : std::abs(v);
    };
    const int64_t width = number();
    int64_t precision = 0;
    if (*p == '.') p++, precision = number();
    while (*p == 'l') p++;
    if (!*p) break;
    most = std::max(most, width);
    if (!std::strchr("sqQwz", *p)) most = std::max(most, precision);
    arg++;
  }
  return most;
}

// printf() and format(): a `%.1000000000c` (a character repeated by its precision) loops that
// many times inside one step of SQLite 3.40, long after the value passed its length limit and
// past any timeout. A width or precision beyond kMaxValueBytes cannot give a value allowed
// here, so it is refused at once; any other call goes to SQLite's own printf().
void printf_checked(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  auto* c = static_cast<Connection*>(sqlite3_user_data(ctx));
  const auto* fmt = argc > 0 ? sqlite3_value_text(argv[0]) : nullptr;
  if (fmt && largest_field(reinterpret_cast<const char*>(fmt), argc, argv) > kMaxValueBytes) {
    sqlite3_result_error_toobig(ctx);
    return;
  }
  PlainPrintf& p = c->plain;
  if (!p.db) {
    if (sqlite3_open_v2(":memory:", &p.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
      sqlite3_result_error_nomem(ctx);
      return;
    }
    sqlite3_limit(p.db, SQLITE_LIMIT_LENGTH, kMaxValueBytes);
  }
  sqlite3_stmt*& st = p.stmts[argc];
  if (!st) {
    std::string sql = "SELECT printf(";
    for (int i = 1; i <= argc; i++) sql += (i > 1 ? ", ?" : "?") + std::to_string(i);
    if (sqlite3_prepare_v2(p.db, (sql + ")").c_str(), -1, &st, nullptr) != SQLITE_OK) {
      sqlite3_result_error(ctx, sqlite3_errmsg(p.db), -1);
      return;
    }
  }
  for (int i = 0; i < argc; i++) sqlite3_bind_value(st, i + 1, argv[i]);
  const int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    sqlite3_result_value(ctx, sqlite3_column_value(st, 0));
  } else {
    sqlite3_result_error(ctx, sqlite3_errmsg(p.db), -1);
    sqlite3_result_error_code(ctx, rc);
  }
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
}

// ltrun_number(x): x as a number when it is one (an integer, a real, or a text that is a whole
// finite number: "3e-4", " 12 "), else NULL. The results table sorts params (stored as text)
// by it, so that "10" sorts after "9".
void number_of(sqlite3_context* ctx, int, sqlite3_value** argv) {
  switch (sqlite3_value_type(argv[0])) {
    case SQLITE_INTEGER: case SQLITE_FLOAT: sqlite3_result_value(ctx, argv[0]); return;
    case SQLITE_TEXT: {
      const char* t = reinterpret_cast<const char*>(sqlite3_value_text(argv[0]));
      const int n = sqlite3_value_bytes(argv[0]);
      if (!t || n == 0 || n > 64 || int(std::strlen(t)) != n) break;
      char* end = nullptr;
      const double v = std::strtod(t, &end);
      while (end && std::isspace((unsigned char)*end)) end++;
      if (end != t && *end == '\0' && std::isfinite(v)) {
        sqlite3_result_double(ctx, v);
        return;
      }
      break;
    }
    default: break;
  }
  sqlite3_result_null(ctx);
}

// Opens `path` read-only, as the store's readers do, with serve's own checks and limits.
std::unique_ptr<Connection> open_read_only(const std::string& path) {
  auto c = std::make_unique<Connection>();
  c->db = store::open_readonly_connection(path);
  sqlite3_limit(c->db, SQLITE_LIMIT_LENGTH, kMaxValueBytes);
  for (const char* name : {"printf", "format"})
    sqlite3_create_function_v2(c->db, name, -1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, c.get(), printf_checked,
                               nullptr, nullptr, nullptr);
  sqlite3_create_function_v2(c->db, "ltrun_number", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nullptr, number_of,
                             nullptr, nullptr, nullptr);
  sqlite3_set_authorizer(c->db, authorize, c.get());
  sqlite3_progress_handler(c->db, 10000, progress, c.get());
  return c;
}

[[noreturn]] void fail_step(sqlite3* db, int rc, int timeout_ms) {
  if (rc == SQLITE_INTERRUPT) fail("the query ran past {} ms and was stopped", timeout_ms);
  if (rc == SQLITE_TOOBIG)
    fail("a value would be longer than {} MB, the longest string or blob a query may build here ({})",
         kMaxValueBytes >> 20, sqlite3_errmsg(db));
  if (rc == SQLITE_NOMEM) {
    const int64_t cap = sqlite3_hard_heap_limit64(-1);
    if (cap > 0) fail("the query needs more memory than SQLite may take here ({} MB in all)", cap >> 20);
  }
  throw Error(sqlite3_errmsg(db));
}

}  // namespace

int64_t limit_sqlite_heap(int64_t bytes) { return sqlite3_hard_heap_limit64(bytes); }

Reader::Reader(std::string path) : path_(file_exists(path) ? absolute_path(path) : path) {
  {
    auto c = open_read_only(path_);
    c->cancelled = cancelled_;
    release(std::move(c));
  }
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
  if (cancelled()) fail("the server is stopping");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
  }
  auto c = open_read_only(path_);
  c->cancelled = cancelled_;
  return c;
}

void Reader::cancel() { *cancelled_ = true; }
bool Reader::cancelled() const { return *cancelled_; }

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
    if (c->denied.rfind("the SQL function ", 0) == 0) throw Refused(c->denied);
    if (!c->denied.empty() || rc == SQLITE_AUTH)
      throw Refused("the connection is read-only: " + (c->denied.empty() ? "this statement" : c->denied) +
                    " is refused (only SELECT and reading PRAGMAs)");
    fail_step(db, rc, timeout_ms);
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
  if (rc != SQLITE_DONE) fail_step(db, rc, timeout_ms);
}  // finalizing the statement ends the read transaction, so the writer can checkpoint the WAL

size_t row_bytes(const std::vector<store::Value>& row) {
  constexpr size_t kMalloc = 16;  // glibc's header, and its rounding to 16 bytes
  auto alloc = [](size_t n) { return (n + kMalloc + 15) / 16 * 16; };
  size_t bytes = sizeof(row) + alloc(row.size() * sizeof(store::Value));
  for (const auto& v : row)
    if (const auto* s = std::get_if<std::string>(&v); s && s->capacity() > 15) bytes += alloc(s->capacity() + 1);
  return bytes;
}

namespace {

// charges a meter every kMeterChunk bytes (and at the end), counting what was read in all
constexpr size_t kMeterChunk = 64 * 1024;
struct Metering {
  const Meter* meter;
  std::atomic<uint64_t>& total;
  size_t pending = 0;
  void add(size_t n) {
    total += n;
    pending += n;
    if (pending >= kMeterChunk) flush();
  }
  void flush() {
    const size_t n = pending;
    pending = 0;
    if (meter && meter->charge && n) meter->charge(n);
  }
};

}  // namespace

Reader::Result Reader::query(const std::string& sql, const std::vector<store::Value>& binds,
                             size_t max_rows, int timeout_ms, size_t max_bytes, const Meter* meter) {
  Result r;
  size_t bytes = 0;
  Metering m{meter, bytes_read_};
  const size_t extra = meter ? meter->row_extra : 0;
  auto columns = [&](sqlite3_stmt* st) {
    for (int i = 0; i < sqlite3_column_count(st); i++) r.table.columns.push_back(sqlite3_column_name(st, i));
  };
  auto too_large = [&] {
    return TooLarge(fmt::format("the result passed {} MB after {} rows; select fewer or shorter columns, or fewer "
                                "rows (LIMIT)", max_bytes >> 20, r.table.rows.size()));
  };
  each_row(sql, binds, timeout_ms, [&](sqlite3_stmt* st) {
    const int n = sqlite3_column_count(st);
    if (r.table.rows.size() >= max_rows) {
      r.truncated = true;
      return false;
    }
    std::vector<store::Value> row(n);
    size_t strings = 0;  // checked before each is copied: one long value is refused unread
    for (int i = 0; i < n; i++) {
      switch (sqlite3_column_type(st, i)) {
        case SQLITE_INTEGER: row[i] = int64_t(sqlite3_column_int64(st, i)); break;
        case SQLITE_FLOAT: row[i] = sqlite3_column_double(st, i); break;
        case SQLITE_NULL: break;
        default: {
          const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(st, i));
          if (!t) {  // NULL: out of memory, or an empty blob
            const int ec = sqlite3_errcode(sqlite3_db_handle(st));
            if (ec == SQLITE_NOMEM || ec == SQLITE_TOOBIG) fail_step(sqlite3_db_handle(st), ec, timeout_ms);
          }
          const size_t len = size_t(sqlite3_column_bytes(st, i));
          strings += len;
          if (bytes + strings > max_bytes) throw too_large();
          row[i] = t ? std::string(t, len) : std::string();
        }
      }
    }
    const size_t held = row_bytes(row) + extra;
    if ((bytes += held) > max_bytes) throw too_large();
    r.table.rows.push_back(std::move(row));
    m.add(held);
    return true;
  }, columns);
  m.flush();
  r.bytes = bytes;
  return r;
}

std::vector<std::vector<double>> Reader::numeric_columns(const std::string& sql,
                                                         const std::vector<store::Value>& binds,
                                                         int timeout_ms, size_t max_cells, size_t reserve_rows,
                                                         const Meter* meter) {
  std::vector<std::vector<double>> cols;
  size_t cells = 0;
  Metering m{meter, bytes_read_};
  auto columns = [&](sqlite3_stmt* st) {
    cols.resize(size_t(sqlite3_column_count(st)));
    for (auto& c : cols) c.reserve(std::min(reserve_rows, max_cells / std::max<size_t>(cols.size(), 1)));
  };
  each_row(sql, binds, timeout_ms, [&](sqlite3_stmt* st) {
    const int n = int(cols.size());
    if ((cells += size_t(n)) > max_cells)
      throw TooLarge(fmt::format("the series passed {} values after {} rows", max_cells, cols.empty() ? 0 : cols[0].size()));
    for (int i = 0; i < n; i++)
      cols[size_t(i)].push_back(sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i));
    m.add(size_t(n) * sizeof(double));
    return true;
  }, columns);
  m.flush();
  return cols;
}

}  // namespace ltrun::serve
