// runtime/cli/commands.cpp: `ltrun runs | show | sql | rerun`, reading the run store.
#include <nlohmann/json.hpp>

#include <cstdio>

#include "runtime/cli/cli.h"
#include "runtime/core/env.h"
#include "runtime/core/error.h"

namespace ltrun::cli {
namespace {

int64_t parse_run_id(const std::string& s) {
  LT_CHECK(!s.empty() && s.find_first_not_of("0123456789") == std::string::npos,
           "expected a run id (a number), got '{}'", s);
  return std::stoll(s);
}

void print_section(store::Store& st, const char* title, const std::string& sql, int64_t id) {
  store::Table t = st.query(sql, {store::Value(id)});
  if (t.rows.empty()) return;
  std::printf("\n%s\n%s", title, format_table(t, TableFormat::aligned).c_str());
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
  LT_CHECK(!v.empty() && v.find_first_not_of("0123456789") == std::string::npos,
           "{}: {} expects a non-negative integer, got '{}'", command_, key_, v);
  return std::stoll(v);
}

int cmd_runs(const Globals& g, const std::vector<std::string>& args) {
  int64_t limit = 20;
  ArgReader a(args, 0, "runs");
  while (a.next()) {
    if (a.key() == "--limit") limit = a.integer();
    else fail("runs: unknown argument '{}' (usage: ltrun runs [--limit N])", a.key());
  }
  auto st = store::Store::open(g.db);
  store::Table t = st->query(
      "SELECT id, parent_id AS parent, name, status, started_at, "
      "round((julianday(coalesce(finished_at, strftime('%Y-%m-%d %H:%M:%f','now'))) - julianday(started_at)) * 86400, 1) AS secs, "
      "device, seed, substr(replace(coalesce(error, ''), char(10), ' '), 1, 60) AS error "
      "FROM runs ORDER BY id DESC LIMIT ?", {store::Value(limit)});
  std::fputs(format_table(t, TableFormat::aligned).c_str(), stdout);
  return kExitOk;
}

int cmd_show(const Globals& g, const std::vector<std::string>& args) {
  LT_CHECK(args.size() == 1, "usage: ltrun show RUN");
  const int64_t id = parse_run_id(args[0]);
  auto st = store::Store::open(g.db);
  store::Table run = st->query(
      "SELECT id, parent_id, rerun_of, name, status, script_path, script_sha256, args_json, seed, device, "
      "torch_version, ltrun_version, git_rev, host, pid, started_at, finished_at, "
      "length(script_text) AS script_bytes FROM runs WHERE id = ?", {store::Value(id)});
  LT_CHECK(!run.rows.empty(), "{}: no run with id {}", g.db, id);
  for (size_t c = 0; c < run.columns.size(); c++) {
    const std::string v = store::to_text(run.rows[0][c]);
    if (!v.empty()) std::printf("%-14s %s\n", run.columns[c].c_str(), v.c_str());
  }
  print_section(*st, "params", "SELECT key, value FROM params WHERE run_id = ? ORDER BY key", id);
  print_section(*st, "metrics",
      "SELECT name, count(*) AS points, min(step) AS first_step, max(step) AS last_step, "
      "(SELECT value FROM metrics l WHERE l.run_id = m.run_id AND l.name = m.name ORDER BY step DESC, rowid DESC LIMIT 1) AS last, "
      "min(value) AS min, max(value) AS max FROM metrics m WHERE run_id = ? GROUP BY name ORDER BY name", id);
  print_section(*st, "layer metrics",
      "SELECT name, grp, count(*) AS rows, min(layer) AS first_layer, max(layer) AS last_layer, "
      "min(value) AS min, max(value) AS max FROM layer_metrics WHERE run_id = ? GROUP BY name, grp ORDER BY name, grp", id);
  print_section(*st, "evaluation",
      "SELECT bench, protocol, count(*) AS items, avg(correct) AS accuracy FROM eval_items "
      "WHERE run_id = ? GROUP BY bench, protocol ORDER BY bench, protocol", id);
  print_section(*st, "artifacts", "SELECT kind, path, sha256 FROM artifacts WHERE run_id = ? ORDER BY rowid", id);
  print_section(*st, "children", "SELECT id, name, status, started_at, finished_at FROM runs WHERE parent_id = ? ORDER BY id", id);
  store::Table err = st->query("SELECT error FROM runs WHERE id = ? AND error IS NOT NULL", {store::Value(id)});
  if (!err.rows.empty()) std::printf("\nerror\n%s\n", store::to_text(err.rows[0][0]).c_str());
  return kExitOk;
}

int cmd_sql(const Globals& g, const std::vector<std::string>& args) {
  TableFormat f = TableFormat::aligned;
  std::string sql;
  for (const auto& a : args) {
    if (a == "--csv") f = TableFormat::csv;
    else if (a == "--json") f = TableFormat::json;
    else if (sql.empty()) sql = a;
    else fail("sql: one query at a time (got a second argument '{}'); quote the query", a);
  }
  LT_CHECK(!sql.empty(), "usage: ltrun sql \"SELECT ...\" | ltrun sql @NAME  [--csv|--json]");
  if (sql[0] == '@') sql = store::named_query(sql.substr(1));
  auto st = store::Store::open(g.db);
  store::Table t = st->query(sql);
  if (!t.columns.empty()) std::fputs(format_table(t, f).c_str(), stdout);
  return kExitOk;
}

int cmd_rerun(const Globals& g, const std::vector<std::string>& args) {
  LT_CHECK(!args.empty(), "usage: ltrun rerun RUN [--key=value ...]");
  const int64_t id = parse_run_id(args[0]);
  ScriptRun r;
  {
    auto st = store::Store::open(g.db);
    store::Table t = st->query(
        "SELECT name, script_path, script_text, args_json, seed, parent_id FROM runs WHERE id = ?",
        {store::Value(id)});
    LT_CHECK(!t.rows.empty(), "{}: no run with id {}", g.db, id);
    const auto& row = t.rows[0];
    if (!std::holds_alternative<std::monostate>(row[5]))
      fail("run {} is a child run of run {}: rerun {} instead", id, store::to_text(row[5]),
           store::to_text(row[5]));
    LT_CHECK(std::holds_alternative<std::string>(row[2]), "run {} has no stored script text", id);
    r.name = store::to_text(row[0]);
    r.script_path = store::to_text(row[1]);
    r.code = std::get<std::string>(row[2]);
    r.chunk_name = r.script_path.empty() ? "=(rerun " + std::to_string(id) + ")" : "@" + r.script_path;
    r.args = nlohmann::json::parse(store::to_text(row[3])).get<std::vector<std::string>>();
    if (std::holds_alternative<int64_t>(row[4])) r.seed = uint64_t(std::get<int64_t>(row[4]));
    r.rerun_of = id;
  }
  // extra arguments come after the stored ones, so --key=value overrides
  r.args.insert(r.args.end(), args.begin() + 1, args.end());
  std::fprintf(stderr, "ltrun: rerunning run %lld (%s) with its stored script and args\n", (long long)id,
               r.name.c_str());
  return run_script(g, r);
}

}  // namespace ltrun::cli
