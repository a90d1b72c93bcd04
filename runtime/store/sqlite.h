// runtime/store/sqlite.h: the run store's one SQLite connection type (Db), what the store,
// a merge, an export and an import open; the newest schema version this ltrun knows; and a
// file from someone else (an export, a replay's store) opened as data, its schema checked.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/store/store.h"

struct sqlite3;
struct sqlite3_stmt;

namespace ltrun::store {

// The migrations compiled into this ltrun (db/migrations/NNNN_name.sql), in order.
struct Migration {
  int version;
  std::string name, sql;
};
std::vector<Migration> migrations();
// The newest db/migrations version compiled into this ltrun.
int latest_schema();

// One connection, closed with the object. Errors name the file (and `context`, when set: what
// the connection was doing, e.g. "merging IN into OUT"). Every connection is hardened
// (store.h: harden_connection); one that reads a file from elsewhere (open_as_data, a merge)
// also has trusted_schema off (distrust_schema): its views, triggers and defaults never call a
// function that is not innocuous.
class Db {
 public:
  // Read-write; `create` also makes the file. busy_ms: how long a writer waits for a lock.
  // uri: `path` may be a file: URI.
  static Db writer(const std::string& path, bool create, int busy_ms, bool uri = false);
  // As Store::open_readonly reads a store: read-only, query_only, never a lock that blocks a
  // writer (store.h: open_readonly_connection).
  static Db reader(const std::string& path);

  Db(Db&& o) noexcept;
  Db& operator=(Db&& o) noexcept;
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  ~Db();

  sqlite3* get() const { return db_; }
  void distrust_schema();
  const std::string& path() const { return path_; }
  std::string context;  // "" or what the errors say this connection was doing

  // "PATH: WHAT failed: SQLite's message" (a file that is not a database, or is damaged, said so)
  [[noreturn]] void fail_sql(int rc, const std::string& what) const;
  void exec(const std::string& sql, const std::string& what = "");
  sqlite3_stmt* prepare(const std::string& sql, bool persistent = false);
  // steps once and resets; an error unless it answered a row or done
  void step_done(sqlite3_stmt* st, const std::string& what);
  int64_t int_query(const std::string& sql, const std::vector<Value>& binds = {});

  // Rows as text (NULL: nullopt), every value bound, never spliced into the SQL.
  using Row = std::vector<std::optional<std::string>>;
  // Row by row, nothing held but the current one.
  void each(const std::string& sql, const std::vector<Value>& binds, const std::function<void(const Row&)>& f);
  std::vector<Row> rows(const std::string& sql, const std::vector<Value>& binds = {});
  bool has_table(const std::string& name, const std::string& schema = "main");
  std::vector<std::string> columns(const std::string& schema, const std::string& table);

 private:
  Db(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_ = nullptr;
  std::string path_;
};

void bind_values(sqlite3_stmt* st, const std::vector<Value>& binds);

// The tables, indexes and triggers a store of schema `version` has (db/migrations up to it), and
// optionally `extra_tables` (CREATE TABLE statements an export adds: input_files), as one line
// per object: a table by its columns (name, type, not null, default, key, generated or not), an
// index by its table, columns and uniqueness, a trigger by its SQL. Compared with a file's own,
// a view, a trigger, a generated column, an index on an expression or any other object of its
// own shows.
std::vector<std::string> expected_schema(int version, const std::vector<std::string>& extra_tables = {});
std::vector<std::string> schema_of(Db& db, const std::string& schema = "main");
// The first difference between a file's schema and the expected one, as a phrase ("it has a
// view runs", "table runs has a generated column x"); "" when they are the same.
std::string schema_difference(const std::vector<std::string>& have, const std::vector<std::string>& want);

// A file from someone else (an export, the store a replay wrote) opened as data: read-only,
// trusted_schema off, every value read at most max_value_bytes (a longer one is an error, not
// an allocation of its size), then check_as_data. Errors: one line naming `what` (e.g.
// "import: FILE") and what is wrong, then `tail` ("; nothing imported").
Db open_as_data(const std::string& file, const std::string& what, int64_t max_value_bytes,
                const std::vector<std::string>& extra_tables, const std::string& tail);
// Schema `schema` of `db` (user_version `version`, read by the caller) checked before anything
// else of it is read: a version between 3 (run uuids) and latest_schema(), and exactly what
// db/migrations make of that version, with or without each of `extra_tables`: tables, indexes
// and the store's trigger as ltrun writes them; no view, no trigger or generated column of its
// own, which would run an expression when read.
void check_as_data(Db& db, const std::string& schema, const std::string& what, int version,
                   const std::vector<std::string>& extra_tables, const std::string& tail);

}  // namespace ltrun::store
