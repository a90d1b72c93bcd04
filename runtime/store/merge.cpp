// runtime/store/merge.cpp: `ltrun db merge` (see merge.h): each input is attached to OUT's
// connection and copied in one transaction, through a map of input run id → OUT run id.
#include "runtime/store/merge.h"

#include <fmt/ranges.h>
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>

#include "runtime/core/env.h"
#include "runtime/core/error.h"
#include "runtime/store/store.h"

namespace ltrun::store {
namespace {

constexpr int kBusyTimeoutMs = 120000;

// A raw connection to OUT with the few helpers the merge needs; errors name OUT and the input.
struct Db {
  sqlite3* db = nullptr;
  std::string path, input;

  explicit Db(const std::string& p) : path(p) {
    if (sqlite3_open_v2(p.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK)
      fail("{}: cannot open for merging: {}", p, db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_busy_timeout(db, kBusyTimeoutMs);
    exec("PRAGMA foreign_keys=ON");
  }
  ~Db() { sqlite3_close_v2(db); }
  [[noreturn]] void fail_sql(const std::string& what) {
    fail("merging {} into {}: {} failed: {}", input, path, what, sqlite3_errmsg(db));
  }
  void exec(const std::string& sql) {
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) fail_sql("`" + sql + "`");
  }
  sqlite3_stmt* prepare(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) fail_sql("preparing `" + sql + "`");
    return st;
  }
  void done(sqlite3_stmt* st, const std::string& what) {
    const int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) fail_sql(what);
  }
  std::vector<std::string> columns(const std::string& schema, const std::string& table) {
    std::vector<std::string> cols;
    sqlite3_stmt* st = prepare(fmt::format("PRAGMA \"{}\".table_info(\"{}\")", schema, table));
    while (sqlite3_step(st) == SQLITE_ROW) cols.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 1)));
    sqlite3_finalize(st);
    return cols;
  }
  // columns both schemas have, without `skip`, as a quoted list
  std::vector<std::string> common(const std::string& table, const std::vector<std::string>& skip) {
    const auto dst = columns("main", table);
    std::vector<std::string> out;
    for (const auto& c : columns("src", table))
      if (std::find(dst.begin(), dst.end(), c) != dst.end() && std::find(skip.begin(), skip.end(), c) == skip.end())
        out.push_back("\"" + c + "\"");
    return out;
  }
};

std::optional<int64_t> opt_int(sqlite3_stmt* st, int col) {
  if (sqlite3_column_type(st, col) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_int64(st, col);
}
std::string text(sqlite3_stmt* st, int col) {
  const auto* p = sqlite3_column_text(st, col);
  return p ? reinterpret_cast<const char*>(p) : "";
}

MergeInput merge_one(Db& out, const std::string& in) {
  MergeInput r;
  r.path = in;
  out.input = in;
  {
    sqlite3_stmt* st = out.prepare("ATTACH DATABASE ? AS src");
    sqlite3_bind_text(st, 1, in.c_str(), -1, SQLITE_TRANSIENT);
    out.done(st, "attaching the input");
    sqlite3_finalize(st);
  }
  out.exec("BEGIN IMMEDIATE");
  try {
    const auto run_cols = out.common("runs", {"id", "parent_id", "rerun_of"});
    LT_CHECK(std::find(run_cols.begin(), run_cols.end(), "\"uuid\"") != run_cols.end(),
             "{}: runs have no uuid column (schema older than db/migrations/0003)", in);
    const std::string cols = fmt::format("{}", fmt::join(run_cols, ", "));
    sqlite3_stmt* find = out.prepare("SELECT id, status FROM main.runs WHERE uuid = ?");
    sqlite3_stmt* copy = out.prepare(fmt::format("INSERT INTO main.runs({0}) SELECT {0} FROM src.runs WHERE id = ?", cols));
    sqlite3_stmt* list = out.prepare("SELECT id, uuid, status, parent_id, rerun_of, name FROM src.runs ORDER BY id");
    struct Links { int64_t dst; std::optional<int64_t> parent, rerun; };
    std::map<int64_t, int64_t> id_map;   // input id → OUT id, for every input run
    std::map<int64_t, Links> fresh;      // runs copied now
    while (sqlite3_step(list) == SQLITE_ROW) {
      r.runs++;
      const int64_t src_id = sqlite3_column_int64(list, 0);
      const std::string uuid = text(list, 1), status = text(list, 2), name = text(list, 5);
      sqlite3_bind_text(find, 1, uuid.c_str(), -1, SQLITE_TRANSIENT);
      if (sqlite3_step(find) == SQLITE_ROW) {
        const int64_t dst = sqlite3_column_int64(find, 0);
        const std::string have = text(find, 1);
        sqlite3_reset(find);
        id_map[src_id] = dst;
        r.already++;
        if (have != status)
          r.notes.push_back(fmt::format("run {} ({}, uuid {}) is already in {} as run {} with status {}; "
                                        "kept that one, not this copy's status {}",
                                        src_id, name, uuid, out.path, dst, have, status));
        continue;
      }
      sqlite3_reset(find);
      sqlite3_bind_int64(copy, 1, src_id);
      out.done(copy, fmt::format("copying run {}", src_id));
      const int64_t dst = sqlite3_last_insert_rowid(out.db);
      id_map[src_id] = dst;
      fresh[src_id] = {dst, opt_int(list, 3), opt_int(list, 4)};
      if (!r.first_id) r.first_id = dst;
      r.last_id = dst;
      r.added++;
    }
    sqlite3_finalize(list);
    sqlite3_finalize(find);
    sqlite3_finalize(copy);

    // parent and rerun links, through the map (a parent may itself have been merged before)
    sqlite3_stmt* link = out.prepare("UPDATE main.runs SET parent_id = ?, rerun_of = ? WHERE id = ?");
    for (const auto& [src_id, l] : fresh) {
      auto mapped = [&](const std::optional<int64_t>& v, const char* what) -> std::optional<int64_t> {
        if (!v) return std::nullopt;
        auto it = id_map.find(*v);
        if (it != id_map.end()) return it->second;
        r.notes.push_back(fmt::format("run {}: its {} {} is not in {}; the link is dropped", src_id, what, *v, in));
        return std::nullopt;
      };
      const auto parent = mapped(l.parent, "parent"), rerun = mapped(l.rerun, "rerun_of run");
      if (parent) sqlite3_bind_int64(link, 1, *parent); else sqlite3_bind_null(link, 1);
      if (rerun) sqlite3_bind_int64(link, 2, *rerun); else sqlite3_bind_null(link, 2);
      sqlite3_bind_int64(link, 3, l.dst);
      out.done(link, fmt::format("linking run {}", l.dst));
    }
    sqlite3_finalize(link);

    // every other table with a run_id: rows of the runs copied now, run_id mapped
    out.exec("CREATE TEMP TABLE IF NOT EXISTS merge_ids(src INTEGER PRIMARY KEY, dst INTEGER NOT NULL)");
    out.exec("DELETE FROM temp.merge_ids");
    sqlite3_stmt* ins = out.prepare("INSERT INTO temp.merge_ids(src, dst) VALUES (?, ?)");
    for (const auto& [src_id, l] : fresh) {
      sqlite3_bind_int64(ins, 1, src_id);
      sqlite3_bind_int64(ins, 2, l.dst);
      out.done(ins, "mapping run ids");
    }
    sqlite3_finalize(ins);
    std::vector<std::string> tables;
    sqlite3_stmt* tl = out.prepare("SELECT name FROM src.sqlite_master WHERE type = 'table' AND name <> 'runs' "
                                   "AND name NOT LIKE 'sqlite_%' ORDER BY name");
    while (sqlite3_step(tl) == SQLITE_ROW) tables.push_back(text(tl, 0));
    sqlite3_finalize(tl);
    for (const auto& t : tables) {
      const auto src_cols = out.columns("src", t), dst_cols = out.columns("main", t);
      const bool has_run = std::find(src_cols.begin(), src_cols.end(), "run_id") != src_cols.end();
      if (!has_run) continue;
      LT_CHECK(std::find(dst_cols.begin(), dst_cols.end(), "run_id") != dst_cols.end(),
               "{}: table {} (with run_id) is missing from {}, or has no run_id there", in, t, out.path);
      const auto c = out.common(t, {"run_id"});
      std::vector<std::string> sel;
      for (const auto& x : c) sel.push_back("s." + x);
      out.exec(fmt::format("INSERT INTO main.\"{0}\"(run_id{1}{2}) SELECT m.dst{1}{3} FROM src.\"{0}\" s "
                           "JOIN temp.merge_ids m ON m.src = s.run_id",
                           t, c.empty() ? "" : ", ", fmt::join(c, ", "), fmt::join(sel, ", ")));
      r.rows += sqlite3_changes(out.db);
    }
    out.exec("COMMIT");
  } catch (...) {
    sqlite3_exec(out.db, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_exec(out.db, "DETACH DATABASE src", nullptr, nullptr, nullptr);
    throw;
  }
  out.exec("DETACH DATABASE src");
  return r;
}

}  // namespace

std::vector<MergeInput> merge_stores(const std::string& out, const std::vector<std::string>& inputs,
                                     const std::function<void(size_t, size_t)>& progress) {
  LT_CHECK(!inputs.empty(), "db merge: no input stores given (ltrun db merge OUT.db IN.db ...)");
  for (const auto& in : inputs) {
    LT_CHECK(file_exists(in), "db merge: input {} does not exist", in);
    std::error_code ec;
    LT_CHECK(!(file_exists(out) && std::filesystem::equivalent(in, out, ec)),
             "db merge: input {} is the output store {} itself", in, out);
  }
  Store::open(out);  // create or migrate OUT (then closed: the merge writes through its own connection)
  std::vector<MergeInput> report;
  for (size_t i = 0; i < inputs.size(); i++) {
    Store::open(inputs[i]);  // migrate: older stores get the uuid column, kept in the input
    Db db(out);
    report.push_back(merge_one(db, inputs[i]));
    if (progress) progress(i + 1, inputs.size());
  }
  return report;
}

}  // namespace ltrun::store
