// runtime/cli/commands.cpp: `ltrun runs | show | sql | rerun`, reading the run store. All of
// them open it read-only (Store::open_readonly); `sql --write` is the one way to change it.
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <cstdio>
#include <iostream>

#include "runtime/cli/cli.h"
#include "runtime/core/env.h"
#include "runtime/core/error.h"
#include "runtime/core/sha256.h"
#include "runtime/store/compare.h"
#include "runtime/store/merge.h"
#include "runtime/store/run_admin.h"
#include "runtime/store/store.h"
#include "runtime/store/views.h"

namespace ltrun::cli {
namespace {

// `ltrun sql`'s aligned table fits 100 columns (a study's query can have 20 columns or more);
// --wide prints every column, --csv and --json always do
constexpr size_t kSqlWidth = 100;

}  // namespace

int64_t parse_run_id(const std::string& s) {
  LT_CHECK(!s.empty() && s.size() <= 18 && s.find_first_not_of("0123456789") == std::string::npos,
           "expected a run id (a number), got '{}'", s);
  return std::stoll(s);
}

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
  const char* usage = "usage: ltrun runs [--name TEXT] [--status S[,S...]] [--parent RUN | --all] [--limit N]";
  int64_t limit = 20;
  std::optional<int64_t> parent;
  std::string name;
  std::vector<std::string> statuses;
  bool all = false;
  ArgReader a(args, 0, "runs");
  while (a.next()) {
    if (a.key() == "--limit") limit = a.integer();
    else if (a.key() == "--name") name = a.value();
    else if (a.key() == "--parent") parent = parse_run_id(a.value());
    else if (a.key() == "--all") all = true;
    else if (a.key() == "--status") {
      const std::string v = a.value();
      for (size_t at = 0; at <= v.size();) {
        const size_t comma = std::min(v.find(',', at), v.size());
        const std::string s = v.substr(at, comma - at);
        LT_CHECK(store::parse_status(s), "runs: --status {}: '{}' is not a status ({})", v, s, store::status_names());
        statuses.push_back(s);
        at = comma + 1;
      }
    } else fail("runs: unknown argument '{}' ({})", a.key(), usage);
  }
  LT_CHECK(!(parent && all), "runs: --parent and --all together: --parent RUN lists RUN's children, --all every run");
  // which runs: the top-level ones (a sweep's children are counted, not listed), RUN's children
  // (--parent), or every run (--all); then the filters
  std::string where = parent ? "parent_id = ?1" : all ? "1" : "parent_id IS NULL";
  std::vector<store::Value> binds = {parent ? store::Value(*parent) : store::Value(std::monostate{})};
  if (!name.empty()) {  // a glob when it has * ? [, else a part of the name
    const bool glob = name.find_first_of("*?[") != std::string::npos;
    where += glob ? " AND name GLOB ?2" : " AND instr(name, ?2) > 0";
  }
  binds.push_back(name);
  if (!statuses.empty()) {
    where += " AND status IN (";
    for (size_t i = 0; i < statuses.size(); i++) {
      where += fmt::format("{}?{}", i ? ", " : "", binds.size() + 1);
      binds.push_back(statuses[i]);
    }
    where += ")";
  }
  auto st = store::Store::open_readonly(g.db);
  std::vector<store::Value> with_limit = binds;
  with_limit.push_back(limit > 0 ? limit : int64_t(-1));
  store::Table t = st->query(
      std::string("SELECT id, ") + (all ? "parent_id AS parent, " : "") +
          "name, status, started_at, "
          "round((julianday(coalesce(finished_at, strftime('%Y-%m-%d %H:%M:%f','now'))) - julianday(started_at)) * 86400, 1) AS secs, "
          "(SELECT count(*) FROM runs c WHERE c.parent_id = r.id) AS children, "
          "device, seed, substr(replace(coalesce(error, ''), char(10), ' '), 1, 60) AS error "
          "FROM runs r WHERE " + where + fmt::format(" ORDER BY id DESC LIMIT ?{}", with_limit.size()),
      with_limit);
  const size_t status_col = all ? 3 : 2, secs_col = status_col + 2;
  // a `running` row whose process is gone, judged as the next writer judges it before marking
  // it crashed (store::judge_running): said so, its seconds up to its last logged point
  for (auto& row : t.rows) {
    if (store::to_text(row[status_col]) != "running") continue;
    const store::Value id = row[0];
    if (store::run_liveness(*st, std::get<int64_t>(id)).state != store::Liveness::dead) continue;
    row[status_col] = std::string("running (process gone)");
    row[secs_col] = st->query("SELECT round(max(t) - (julianday(r.started_at) - 2440587.5) * 86400, 1) "
                              "FROM runs r LEFT JOIN metrics m ON m.run_id = r.id WHERE r.id = ?",
                              {id}).rows.at(0).at(0);
  }
  std::fputs(format_table(t, TableFormat::aligned).c_str(), stdout);
  const auto shown = int64_t(t.rows.size());
  const auto total = std::get<int64_t>(st->query("SELECT count(*) FROM runs r WHERE " + where, binds).rows.at(0).at(0));
  if (total > shown)
    std::printf("%lld more (older): --limit N shows N, --limit 0 every one\n", (long long)(total - shown));
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

namespace {

std::string date_text(double unix_seconds) {  // "YYYY-MM-DD HH:MM:SS", UTC
  const auto secs = static_cast<time_t>(std::floor(unix_seconds));
  struct tm tm {};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04d}-{:02d}-{:02d} {:02d}:{:02d}:{:02d}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec);
}

// t's columns named as the keys of `names` (unix seconds) as dates, under the new names
void dates_for(store::Table& t, const std::vector<std::pair<std::string, std::string>>& names) {
  for (const auto& [from, to] : names) {
    const auto c = std::find(t.columns.begin(), t.columns.end(), from);
    if (c == t.columns.end()) continue;
    const size_t i = size_t(c - t.columns.begin());
    *c = to;
    for (auto& row : t.rows)
      if (std::holds_alternative<double>(row[i])) row[i] = date_text(std::get<double>(row[i]));
  }
}

// One line of block characters (U+2581..U+2588) from low to high: the values in at most
// kCurveWidth groups in step order, each group's mean one character; a flat curve is a row of
// middle blocks.
constexpr int kCurveWidth = 20;
std::string sparkline(const std::vector<double>& v) {
  static const char* const kBlocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  if (v.empty()) return "";
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  std::string out;
  for (const double x : v)
    out += kBlocks[*hi > *lo ? std::lround((x - *lo) / (*hi - *lo) * 7) : 3];
  return out;
}

// a `curve` column after the metric's name: its logged values as a sparkline
void add_curves(store::Store& st, int64_t run, store::Table& metrics) {
  if (metrics.rows.empty()) return;
  metrics.columns.insert(metrics.columns.begin() + 1, "curve");
  for (auto& row : metrics.rows) {
    std::vector<double> means;
    for (const auto& r : st.query("SELECT avg(value) FROM (SELECT value, ntile(?3) OVER (ORDER BY step, rowid) AS b "
                                  "FROM metrics WHERE run_id = ?1 AND name = ?2 AND value IS NOT NULL) "
                                  "GROUP BY b ORDER BY b",
                                  {store::Value(run), row[0], store::Value(int64_t(kCurveWidth))}).rows)
      if (std::holds_alternative<double>(r[0]) && std::isfinite(std::get<double>(r[0])))
        means.push_back(std::get<double>(r[0]));
    row.insert(row.begin() + 1, sparkline(means));
  }
}

}  // namespace

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
  // times as dates (UTC, as started_at), not as unix seconds; on a terminal, each metric's curve
  dates_for(sum.metrics, {{"t0", "first_at"}, {"t1", "last_at"}});
  dates_for(sum.artifacts, {{"t", "at"}});
  if (isatty(STDOUT_FILENO)) add_curves(st, id, sum.metrics);
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
