// runtime/cli/commands.cpp: `ltrun runs | show | sql | rerun`, reading the run store. All of
// them open it read-only (Store::open_readonly); `sql --write` is the one way to change it.
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "runtime/cli/cli.h"
#include "runtime/core/env.h"
#include "runtime/core/error.h"
#include "runtime/core/sha256.h"
#include "runtime/store/compare.h"
#include "runtime/store/merge.h"
#include "runtime/store/store.h"
#include "runtime/store/views.h"

namespace ltrun::cli {
namespace {

// `ltrun sql`'s aligned table fits 100 columns (a study's query can have 20 columns or more);
// --wide prints every column, --csv and --json always do
constexpr size_t kSqlWidth = 100;

int64_t parse_run_id(const std::string& s) {
  LT_CHECK(!s.empty() && s.find_first_not_of("0123456789") == std::string::npos,
           "expected a run id (a number), got '{}'", s);
  return std::stoll(s);
}


}  // namespace

bool ArgReader::next() {
  if (i_ >= args_.size()) return false;
  key_ = args_[i_++];
  has_inline_ = false;
  const auto eq = key_.find('=');
  if (is_option() && eq != std::string::npos) {
    inline_value_ = key_.substr(eq + 1);
    key_.resize(eq);
    has_inline_ = true;
  }
  return true;
}

std::string ArgReader::value() {
  if (has_inline_) return inline_value_;
  LT_CHECK(i_ < args_.size(), "{}: {} needs a value", command_, key_);
  return args_[i_++];
}

int64_t ArgReader::integer() {
  const std::string v = value();
  // (18 digits at most: past them stoll threw, and the message was "stoll")
  LT_CHECK(!v.empty() && v.size() <= 18 && v.find_first_not_of("0123456789") == std::string::npos,
           "{}: {} expects a non-negative integer (at most 18 digits), got '{}'", command_, key_, v);
  return std::stoll(v);
}

int cmd_runs(const Globals& g, const std::vector<std::string>& args) {
  int64_t limit = 20;
  ArgReader a(args, 0, "runs");
  while (a.next()) {
    if (a.key() == "--limit") limit = a.integer();
    else fail("runs: unknown argument '{}' (usage: ltrun runs [--limit N])", a.key());
  }
  auto st = store::Store::open_readonly(g.db);
  store::Table t = st->query(
      "SELECT id, parent_id AS parent, name, status, started_at, "
      "round((julianday(coalesce(finished_at, strftime('%Y-%m-%d %H:%M:%f','now'))) - julianday(started_at)) * 86400, 1) AS secs, "
      "device, seed, substr(replace(coalesce(error, ''), char(10), ' '), 1, 60) AS error "
      "FROM runs ORDER BY id DESC LIMIT ?", {store::Value(limit)});
  // a `running` row whose process is gone, judged as the next writer judges it before marking
  // it crashed (store::judge_running): said so, its seconds up to its last logged point
  for (auto& row : t.rows) {
    if (store::to_text(row[3]) != "running") continue;
    const store::Value id = row[0];
    store::Table p;
    try {
      p = st->query("SELECT host, pid, boot_id, machine_id, process_start FROM runs WHERE id = ?", {id});
    } catch (const Error&) {  // a store from before db/migrations/0002
      p = st->query("SELECT host, pid, NULL, NULL, NULL FROM runs WHERE id = ?", {id});
    }
    if (p.rows.empty() || !std::holds_alternative<int64_t>(p.rows[0][1])) continue;
    const auto& r = p.rows[0];
    store::RunProcess proc{store::to_text(r[0]), std::get<int64_t>(r[1]), std::nullopt, std::nullopt, std::nullopt};
    if (std::holds_alternative<std::string>(r[2])) proc.boot_id = std::get<std::string>(r[2]);
    if (std::holds_alternative<std::string>(r[3])) proc.machine_id = std::get<std::string>(r[3]);
    if (std::holds_alternative<int64_t>(r[4])) proc.process_start = std::get<int64_t>(r[4]);
    if (store::judge_running(proc).state != store::Liveness::dead) continue;
    row[3] = std::string("running (process gone)");
    row[5] = st->query("SELECT round(max(t) - (julianday(r.started_at) - 2440587.5) * 86400, 1) "
                       "FROM runs r LEFT JOIN metrics m ON m.run_id = r.id WHERE r.id = ?", {id}).rows.at(0).at(0);
  }
  std::fputs(format_table(t, TableFormat::aligned).c_str(), stdout);
  return kExitOk;
}

int show_run(store::Store& st, const std::string& db, int64_t id);

// The stored script of a run: its own text, or (a child run) its root run's.
std::string stored_script(store::Store& st, const std::string& db, int64_t id) {
  int64_t at = id;
  std::vector<int64_t> chain;  // each run once: a cycle of parents (a store edited by hand) is named
  for (;;) {
    store::Table t = st.query("SELECT script_text, parent_id FROM runs WHERE id = ?", {store::Value(at)});
    LT_CHECK(!t.rows.empty(), "{}: no run with id {}", db, at);
    if (std::holds_alternative<std::string>(t.rows[0][0])) return std::get<std::string>(t.rows[0][0]);
    chain.push_back(at);
    if (!std::holds_alternative<int64_t>(t.rows[0][1])) break;
    at = std::get<int64_t>(t.rows[0][1]);
    if (const auto c = std::find(chain.begin(), chain.end(), at); c != chain.end())
      fail("{}: {} (a store edited by hand?): no top run holds a script", db,
           store::parent_cycle_text(std::vector<int64_t>(c, chain.end())));
  }
  fail("{}: run {} has no stored script text", db, id);
}

int cmd_show(const Globals& g, const std::vector<std::string>& args) {
  std::optional<int64_t> id;
  bool script = false, sources = false;
  ArgReader a(args, 0, "show");
  while (a.next()) {
    if (a.key() == "--script") script = true;
    else if (a.key() == "--sources") sources = true;
    else if (!a.is_option() && !id) id = parse_run_id(a.key());
    else fail("show: unexpected argument '{}' (usage: ltrun show RUN [--script|--sources])", a.key());
  }
  LT_CHECK(id, "usage: ltrun show RUN [--script|--sources]");
  auto st = store::Store::open_readonly(g.db);
  if (sources) return show_sources(*st, *id);
  if (script) {
    // exactly the stored text into a file or pipe; on a terminal, control characters escaped
    const std::string text = stored_script(*st, g.db, *id);
    std::fputs(isatty(STDOUT_FILENO) ? escape_controls(text, true).c_str() : text.c_str(), stdout);
    return kExitOk;
  }
  return show_run(*st, g.db, *id);
}

int show_run(store::Store& st, const std::string& db, int64_t id) {
  store::RunSummary sum;
  try {
    sum = store::run_summary(store::query_of(st), id);  // the same view as /api/runs/ID
  } catch (const Error& e) {
    fail("{}: {}", db, e.what());
  }
  std::string error;
  for (size_t c = 0; c < sum.run.columns.size(); c++) {
    const std::string v = store::to_text(sum.run.rows[0][c]);
    if (sum.run.columns[c] == "error") error = v;
    else if (!v.empty()) std::printf("%-14s %s\n", sum.run.columns[c].c_str(), escape_controls(v, false).c_str());
  }
  const std::pair<const char*, const store::Table*> sections[] = {
      {"params", &sum.params}, {"metrics", &sum.metrics}, {"layer metrics", &sum.layer_metrics},
      {"evaluation", &sum.eval}, {"artifacts", &sum.artifacts}, {"children", &sum.children}};
  for (const auto& [title, t] : sections)
    if (!t->rows.empty()) std::printf("\n%s\n%s", title, format_table(*t, TableFormat::aligned).c_str());
  if (!error.empty()) std::printf("\nerror\n%s\n", escape_controls(error, true).c_str());
  try {
    store::top_run(store::query_of(st), id);
  } catch (const Error& e) {  // a store edited by hand: said, the run shown all the same
    std::printf("\nwarning: %s\n", escape_controls(e.what(), false).c_str());
  }
  return kExitOk;
}

int cmd_sql(const Globals& g, const std::vector<std::string>& args) {
  const char* usage =
      "usage: ltrun sql \"SELECT ...\" | ltrun sql @NAME  [--csv|--json|--wide] [--queries DIR] [--write]";
  TableFormat f = TableFormat::aligned;
  size_t max_width = kSqlWidth;  // the aligned table's width; --wide: every column
  std::string sql;
  std::vector<std::string> dirs;
  bool write = false;
  ArgReader a(args, 0, "sql");
  while (a.next()) {
    if (a.key() == "--csv") f = TableFormat::csv;
    else if (a.key() == "--json") f = TableFormat::json;
    else if (a.key() == "--wide") max_width = 0;
    else if (a.key() == "--write") write = true;
    else if (a.key() == "--queries") dirs.push_back(a.value());
    else if (a.is_option()) fail("sql: unknown option '{}' ({})", a.key(), usage);
    else if (sql.empty()) sql = a.key();
    else fail("sql: one query at a time (got a second argument '{}'); quote the query", a.key());
  }
  LT_CHECK(!sql.empty(), "{}", usage);
  if (sql[0] == '@') sql = store::named_query(sql.substr(1), dirs);
  auto st = write ? store::Store::open(g.db) : store::Store::open_readonly(g.db);
  store::Table t;
  try {
    t = st->query(sql);
  } catch (const std::exception& e) {
    if (write || std::string(e.what()).find("opened read-only") == std::string::npos) throw;
    fail("{}\n(ltrun sql reads only; pass --write to change the store)", e.what());
  }
  if (!t.columns.empty()) std::fputs(format_table(t, f, max_width).c_str(), stdout);
  return kExitOk;
}

}  // namespace ltrun::cli
