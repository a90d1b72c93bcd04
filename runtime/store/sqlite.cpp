// runtime/store/sqlite.cpp: see sqlite.h.
#include "runtime/store/sqlite.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "runtime/core/error.h"
#include "runtime/store/embedded.h"

namespace ltrun::store {

std::vector<Migration> migrations() {
  std::vector<Migration> out;
  const std::string prefix = "db/migrations/";
  for (const auto& f : embedded_sql()) {
    const std::string p = f.path;
    if (p.rfind(prefix, 0) != 0) continue;
    const std::string file = p.substr(prefix.size());
    out.push_back({std::stoi(file.substr(0, 4)), file, f.text});
  }
  std::sort(out.begin(), out.end(), [](const Migration& a, const Migration& b) { return a.version < b.version; });
  return out;
}

int latest_schema() {
  const auto all = migrations();
  return all.empty() ? 0 : all.back().version;
}

void Db::distrust_schema() { sqlite3_db_config(db_, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr); }

Db Db::writer(const std::string& path, bool create, int busy_ms, bool uri) {
  harden_all_connections();
  sqlite3* db = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX | (create ? SQLITE_OPEN_CREATE : 0) |
                    (uri ? SQLITE_OPEN_URI : 0);
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  Db d(db, path);
  if (rc != SQLITE_OK) d.fail_sql(rc, "opening the run store");
  sqlite3_busy_timeout(db, busy_ms);
  return d;
}

Db Db::reader(const std::string& path) { return Db(open_readonly_connection(path), path); }

Db::Db(Db&& o) noexcept : context(std::move(o.context)), db_(o.db_), path_(std::move(o.path_)) { o.db_ = nullptr; }
Db& Db::operator=(Db&& o) noexcept {
  if (this != &o) {
    sqlite3_close_v2(db_);
    db_ = o.db_;
    o.db_ = nullptr;
    path_ = std::move(o.path_);
    context = std::move(o.context);
  }
  return *this;
}
Db::~Db() { sqlite3_close_v2(db_); }

void Db::fail_sql(int rc, const std::string& what) const {
  const std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  const std::string where = context.empty() ? path_ : context;
  if ((rc & 0xff) == SQLITE_NOTADB)
    fail("{}: not an ltrun run store ({}); pass another --db or move the file away", where, msg);
  if ((rc & 0xff) == SQLITE_TOOBIG && db_)
    fail("{}: a value in it is longer than the {} bytes one field may hold here ({})", where,
         sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, -1), what);
  if ((rc & 0xff) == SQLITE_CORRUPT) fail("{}: the run store is corrupt ({}) while {}; restore it from a copy", where, msg, what);
  fail("{}: {} failed: {}", where, what, msg);
}

void Db::exec(const std::string& sql, const std::string& what) {
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) fail_sql(rc, what.empty() ? "`" + sql + "`" : what);
}

sqlite3_stmt* Db::prepare(const std::string& sql, bool persistent) {
  sqlite3_stmt* st = nullptr;
  const int rc = sqlite3_prepare_v3(db_, sql.c_str(), -1, persistent ? SQLITE_PREPARE_PERSISTENT : 0, &st, nullptr);
  if (rc != SQLITE_OK) fail_sql(rc, "preparing `" + sql + "`");
  return st;
}

void Db::step_done(sqlite3_stmt* st, const std::string& what) {
  const int rc = sqlite3_step(st);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) fail_sql(rc, what);
}

void bind_values(sqlite3_stmt* st, const std::vector<Value>& binds) {
  for (size_t i = 0; i < binds.size() && i < size_t(sqlite3_bind_parameter_count(st)); i++) {
    const int k = int(i + 1);
    if (const auto* n = std::get_if<int64_t>(&binds[i])) sqlite3_bind_int64(st, k, *n);
    else if (const auto* d = std::get_if<double>(&binds[i])) sqlite3_bind_double(st, k, *d);
    else if (const auto* t = std::get_if<std::string>(&binds[i]))
      sqlite3_bind_text(st, k, t->data(), int(t->size()), SQLITE_TRANSIENT);
    else sqlite3_bind_null(st, k);
  }
}

int64_t Db::int_query(const std::string& sql, const std::vector<Value>& binds) {
  sqlite3_stmt* st = prepare(sql);
  bind_values(st, binds);
  const int rc = sqlite3_step(st);
  const int64_t v = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) fail_sql(rc, "`" + sql + "`");
  return v;
}

void Db::each(const std::string& sql, const std::vector<Value>& binds, const std::function<void(const Row&)>& f) {
  sqlite3_stmt* st = prepare(sql);
  struct Finalize {
    sqlite3_stmt* s;
    ~Finalize() { sqlite3_finalize(s); }
  } finalize{st};
  bind_values(st, binds);
  int rc;
  Row row;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    row.clear();
    for (int c = 0; c < sqlite3_column_count(st); c++) {
      const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st, c));
      row.push_back(p ? std::optional<std::string>(std::string(p, size_t(sqlite3_column_bytes(st, c))))
                      : std::nullopt);
    }
    f(row);
  }
  if (rc != SQLITE_DONE) fail_sql(rc, "reading (`" + sql + "`)");
}

std::vector<Db::Row> Db::rows(const std::string& sql, const std::vector<Value>& binds) {
  std::vector<Row> out;
  each(sql, binds, [&](const Row& r) { out.push_back(r); });
  return out;
}

bool Db::has_table(const std::string& name, const std::string& schema) {
  return int_query(fmt::format("SELECT count(*) FROM \"{}\".sqlite_master WHERE type='table' AND name=?", schema),
                   {Value(name)}) > 0;
}

std::vector<std::string> Db::columns(const std::string& schema, const std::string& table) {
  std::vector<std::string> cols;
  each("SELECT name FROM pragma_table_info(?, ?)", {Value(table), Value(schema)},
       [&](const Row& r) { cols.push_back(r[0].value_or("")); });
  return cols;
}

namespace {
// `sql` without its comments (-- to the end of the line, /* */), its white space collapsed to one
// space; quoted strings and names kept as they are
std::string normalized_sql(const std::string& sql) {
  std::string out;
  bool space = false;
  for (size_t i = 0; i < sql.size();) {
    const char c = sql[i];
    if (c == '\'' || c == '"' || c == '`' || c == '[') {  // a string or a quoted name, to its end
      const char end = c == '[' ? ']' : c;
      size_t j = i + 1;
      while (j < sql.size() && sql[j] != end) j++;
      if (space && !out.empty()) out += ' ';
      space = false;
      out += sql.substr(i, j + 1 - i);
      i = j + 1;
    } else if (c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {
      i = std::min(sql.find('\n', i), sql.size());
      space = true;
    } else if (c == '/' && i + 1 < sql.size() && sql[i + 1] == '*') {
      i = std::min(sql.find("*/", i + 2), sql.size() - 2) + 2;
      space = true;
    } else if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      space = true;
      i++;
    } else {
      if (space && !out.empty() && out.back() != '(' && c != ')' && c != ',') out += ' ';
      space = false;
      out += c;
      i++;
    }
  }
  return out;
}
}  // namespace

std::vector<std::string> schema_of(Db& db, const std::string& schema) {
  std::vector<std::string> out;
  const auto objects = db.rows(fmt::format("SELECT type, name, tbl_name, sql FROM \"{}\".sqlite_master ORDER BY type, "
                                           "name", schema));
  for (const auto& o : objects) {
    const std::string type = o[0].value_or("?"), name = o[1].value_or("?");
    std::string line = type + " " + name;
    if (type == "table") {
      // the pragmas read the declared schema; nothing of a column's expression runs
      db.each("SELECT name, type, \"notnull\", coalesce(dflt_value, ''), pk, hidden FROM pragma_table_xinfo(?, ?)",
              {Value(name), Value(schema)}, [&](const Db::Row& c) {
                line += fmt::format(" | {} {}{}{}{}{}", c[0].value_or(""), c[1].value_or(""),
                                    c[2] == "1" ? " NOT NULL" : "", c[3]->empty() ? "" : " DEFAULT " + *c[3],
                                    c[4] != "0" ? " KEY " + c[4].value_or("") : "",
                                    c[5] != "0" ? " GENERATED" : "");
              });
    } else if (type == "index") {
      line += " ON " + o[2].value_or("?");
      db.each("SELECT \"unique\", origin, partial FROM pragma_index_list(?, ?) WHERE name = ?",
              {Value(o[2].value_or("")), Value(schema), Value(name)}, [&](const Db::Row& c) {
                line += fmt::format(" unique={} origin={} partial={}", c[0].value_or(""), c[1].value_or(""),
                                    c[2].value_or(""));
              });
      db.each("SELECT cid, coalesce(name, '<expression>'), \"desc\", coll, key FROM pragma_index_xinfo(?, ?)",
              {Value(name), Value(schema)}, [&](const Db::Row& c) {
                line += fmt::format(" | {} {} {} {} {}", c[0].value_or(""), c[1].value_or(""), c[2].value_or(""),
                                    c[3].value_or(""), c[4].value_or(""));
              });
    }
    // and its statement, comments dropped and white space collapsed: what a CHECK, a DEFAULT or
    // a trigger's body says (the pragmas above do not show it) is compared too
    line += " :: " + normalized_sql(o[3].value_or(""));
    out.push_back(line);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> expected_schema(int version, const std::vector<std::string>& extra_tables) {
  static std::mutex mu;
  static std::map<std::pair<int, std::vector<std::string>>, std::vector<std::string>> cache;
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_pair(version, extra_tables);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  Db mem = Db::writer(":memory:", true, 0);
  for (const auto& m : migrations())
    if (m.version <= version) mem.exec(m.sql, "applying migration db/migrations/" + m.name);
  for (const auto& t : extra_tables) mem.exec(t);
  return cache[key] = schema_of(mem);
}

std::string schema_difference(const std::vector<std::string>& have, const std::vector<std::string>& want) {
  auto name_of = [](const std::string& line) { return line.substr(0, line.find(" |")); };
  // what runs code when read first (a view, a generated column, a trigger), then the rest
  std::vector<std::string> order;
  for (int pass = 0; pass < 4; pass++)
    for (const auto& h : have) {
      const bool view = h.rfind("view ", 0) == 0, gen = h.rfind("table ", 0) == 0 && h.find(" GENERATED") != std::string::npos,
                 trig = h.rfind("trigger ", 0) == 0;
      if ((pass == 0 && view) || (pass == 1 && gen) || (pass == 2 && trig) || (pass == 3 && !view && !gen && !trig))
        order.push_back(h);
    }
  for (const auto& h : order) {
    if (std::find(want.begin(), want.end(), h) != want.end()) continue;
    const std::string type = h.substr(0, h.find(' ')), rest = h.substr(h.find(' ') + 1);
    const std::string name = rest.substr(0, rest.find_first_of(" |:"));
    if (type == "view") return fmt::format("it has a view {} (a store holds tables, never views)", name);
    if (type == "table" && h.find(" GENERATED") != std::string::npos) {
      std::string col;
      for (size_t at = 0; (at = h.find(" | ", at)) != std::string::npos; at += 3) {
        const std::string c = h.substr(at + 3, h.find(" | ", at + 3) - at - 3);
        if (c.find(" GENERATED") != std::string::npos) {
          col = c.substr(0, c.find(' '));
          break;
        }
      }
      return fmt::format("table {} has a generated column {} (a store's columns hold values, never expressions)",
                         name, col);
    }
    bool known = false;  // an object of that name is expected, but not as it is here
    for (const auto& w : want) known = known || name_of(w).rfind(type + " " + name + " ", 0) == 0 ||
                                       name_of(w) == type + " " + name;
    if (known) return fmt::format("its {} {} is not as the store's schema defines it", type, name);
    return fmt::format("it has {} {} {} that the store's schema does not", type == "index" ? "an" : "a", type, name);
  }
  for (const auto& w : want)
    if (std::find(have.begin(), have.end(), w) == have.end()) {
      const std::string type = w.substr(0, w.find(' ')), rest = w.substr(w.find(' ') + 1);
      return fmt::format("it lacks the store's {} {}", type, rest.substr(0, rest.find_first_of(" |:")));
    }
  return "";
}

Db open_as_data(const std::string& file, const std::string& what, int64_t max_value_bytes,
                const std::vector<std::string>& extra_tables, const std::string& tail) {
  Db db = Db::reader(file);
  db.context = what;
  db.distrust_schema();
  // a value longer than this is an error when read ("string or blob too big"), never an
  // allocation of that size; large blobs are read in pieces (sqlite3_blob_open)
  sqlite3_limit(db.get(), SQLITE_LIMIT_LENGTH, int(std::min<int64_t>(max_value_bytes, 1000000000)));
  check_as_data(db, "main", what, int(db.int_query("PRAGMA user_version")), extra_tables, tail);
  return db;
}

void check_as_data(Db& db, const std::string& schema, const std::string& what, int v,
                   const std::vector<std::string>& extra_tables, const std::string& tail) {
  LT_CHECK(v > 0, "{}: a SQLite database but not an ltrun store (user_version 0){}", what, tail);
  LT_CHECK(v <= latest_schema(), "{}: schema version {} is newer than this ltrun knows ({}); update ltrun{}", what, v,
           latest_schema(), tail);
  LT_CHECK(v >= 3, "{}: schema version {} has no run uuids (db/migrations/0003): not written by an ltrun that "
           "exports{}", what, v, tail);
  // the extra tables may be there or not (input_files: only with --with-inputs)
  const auto want = expected_schema(v), with_extra = expected_schema(v, extra_tables);
  std::vector<std::string> have;
  for (auto& line : schema_of(db, schema))
    if (std::find(want.begin(), want.end(), line) != want.end() ||
        std::find(with_extra.begin(), with_extra.end(), line) == with_extra.end())
      have.push_back(std::move(line));
  const std::string diff = schema_difference(have, want);
  LT_CHECK(diff.empty(), "{}: not an ltrun store as ltrun writes it: {} (schema version {}){}", what, diff, v, tail);
}

}  // namespace ltrun::store
