// runtime/serve/reader.h: a read-only connection to the run store for `ltrun serve`. It never
// migrates and never takes the write lock, so a study can keep writing the same file (WAL);
// writes, ATTACH, setting-changing PRAGMAs and the functions store::refused_sql_function
// names (fts3_tokenizer, load_extension) are refused by an authorizer with a message.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/store/store.h"

struct sqlite3_stmt;

namespace ltrun::serve {

// A statement refused because the connection is read-only (a write, ATTACH, a PRAGMA that sets).
struct Refused : Error {
  using Error::Error;
};

// A result past the `max_bytes` its caller gave (Reader::query).
struct TooLarge : Error {
  using Error::Error;
};

struct Connection;  // one sqlite3 handle, opened SQLITE_OPEN_READONLY with query_only=1

constexpr int kMaxValueBytes = 16 << 20;  // the longest string or blob a query may build

// What the rows a query has read hold in this process, told as it reads (ltrun serve's request
// and server budgets, api.h): charge(bytes) is called with the bytes read since its last call,
// every 64 KB and at the end; it throws to stop the read. row_extra: bytes the caller keeps per
// row besides the row itself (the points a comparison builds from them), charged with it.
struct Meter {
  std::function<void(size_t bytes)> charge;
  size_t row_extra = 0;
};

// Caps the memory SQLite may take in this process (sqlite3_hard_heap_limit64; 0: no cap); a
// query that needs more fails with an error naming the cap. `ltrun serve` sets it (its
// process only reads). Returns the previous cap.
int64_t limit_sqlite_heap(int64_t bytes);

// A small pool of read-only connections (one per concurrent request).
class Reader {
 public:
  // The file must exist and be an ltrun run store (user_version >= 1); error names the file.
  explicit Reader(std::string path);
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  const std::string& path() const { return path_; }
  int schema_version() const { return schema_version_; }

  // One statement (a trailing ';' is fine). At most max_rows rows are returned; `truncated`
  // says whether more existed. A statement running past timeout_ms is interrupted; a result
  // past max_bytes (what its rows hold in memory: `bytes`, row_bytes) is TooLarge, a value
  // longer than kMaxValueBytes (SQLITE_LIMIT_LENGTH: randomblob(1e9) fails at once instead of
  // building it) and a query that needs more memory than limit_sqlite_heap allows. A meter
  // is charged as the rows are read. Errors (syntax, a write, a second statement, the limits)
  // are ltrun::Error.
  struct Result {
    store::Table table;
    bool truncated = false;
    size_t bytes = 0;  // what the rows hold (row_bytes each), as max_bytes counts them
  };
  Result query(const std::string& sql, const std::vector<store::Value>& binds = {},
               size_t max_rows = SIZE_MAX, int timeout_ms = 10000, size_t max_bytes = SIZE_MAX,
               const Meter* meter = nullptr);

  // The numeric columns of a query, column by column (NULL → NaN): metric series without a
  // Value per cell. More than max_cells cells in all: TooLarge. reserve_rows: the rows
  // expected (a count made before), so that the columns do not grow by doubling; the meter
  // is charged 8 bytes a cell as they are read.
  std::vector<std::vector<double>> numeric_columns(const std::string& sql,
                                                   const std::vector<store::Value>& binds,
                                                   int timeout_ms = 10000, size_t max_cells = SIZE_MAX,
                                                   size_t reserve_rows = 0, const Meter* meter = nullptr);

  // What the rows read by this reader's queries held, in all since it opened (as `bytes` and
  // the meters count): a request that is refused before reading adds only its counts.
  uint64_t bytes_read() const { return bytes_read_; }

  // From now on every statement of this reader stops at its next progress check (an error):
  // the server is stopping and waits for no query.
  void cancel();
  bool cancelled() const;

 private:
  std::unique_ptr<Connection> acquire();
  void release(std::unique_ptr<Connection> c);
  // Prepares and binds `sql` on a pooled connection, calls prepared(stmt) once, then row(stmt)
  // for each row until it returns false; the connection goes back to the pool after.
  void each_row(const std::string& sql, const std::vector<store::Value>& binds, int timeout_ms,
                const std::function<bool(sqlite3_stmt*)>& row,
                const std::function<void(sqlite3_stmt*)>& prepared);

  std::string path_;
  int schema_version_ = 0;
  std::mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_;
  std::shared_ptr<std::atomic<bool>> cancelled_ = std::make_shared<std::atomic<bool>>(false);
  std::atomic<uint64_t> bytes_read_{0};
};

// What one row of a Result holds in memory: its vector with the Values, and each string past
// the short-string buffer with its allocation (malloc's 16 bytes and rounding included).
size_t row_bytes(const std::vector<store::Value>& row);

}  // namespace ltrun::serve
