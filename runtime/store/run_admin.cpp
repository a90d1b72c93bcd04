// runtime/store/run_admin.cpp: a run's family, its liveness, its status by hand, its removal
// (runtime/store/run_admin.h).
#include "runtime/store/run_admin.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "runtime/core/env.h"
#include "runtime/core/error.h"

namespace ltrun::store {

namespace {
constexpr Status kAll[] = {Status::running, Status::ok, Status::failed, Status::interrupted, Status::crashed};
}  // namespace

std::optional<Status> parse_status(const std::string& name) {
  for (Status s : kAll)
    if (name == status_name(s)) return s;
  return std::nullopt;
}

std::string status_names() {
  std::string out;
  for (Status s : kAll) out += (out.empty() ? "" : ", ") + std::string(status_name(s));
  return out;
}

std::vector<int64_t> run_family(Store& st, const std::vector<int64_t>& ids) {
  std::vector<int64_t> out;
  std::set<int64_t> seen;
  for (const int64_t id : ids) {
    LT_CHECK(!st.query("SELECT 1 FROM runs WHERE id = ?", {Value(id)}).rows.empty(), "{}: no run with id {}",
             st.path(), id);
    if (seen.insert(id).second) out.push_back(id);
  }
  std::vector<int64_t> frontier = out, under;
  while (!frontier.empty()) {
    const Table t = st.query(
        fmt::format("SELECT id FROM runs WHERE parent_id IN ({}) ORDER BY id", fmt::join(frontier, ",")));
    frontier.clear();
    for (const auto& row : t.rows) {
      const int64_t id = std::get<int64_t>(row[0]);
      if (seen.insert(id).second) {
        frontier.push_back(id);
        under.push_back(id);
      }
    }
  }
  std::sort(under.begin(), under.end());
  out.insert(out.end(), under.begin(), under.end());
  return out;
}

Liveness run_liveness(Store& st, int64_t run) {
  Table p;
  try {
    p = st.query("SELECT host, pid, boot_id, machine_id, process_start FROM runs WHERE id = ?", {Value(run)});
  } catch (const Error&) {  // a store from before db/migrations/0002
    p = st.query("SELECT host, pid, NULL, NULL, NULL FROM runs WHERE id = ?", {Value(run)});
  }
  if (p.rows.empty() || !std::holds_alternative<int64_t>(p.rows[0][1]))
    return {Liveness::unknown, fmt::format("run {} records no process", run)};
  const auto& r = p.rows[0];
  RunProcess proc{to_text(r[0]), std::get<int64_t>(r[1]), std::nullopt, std::nullopt, std::nullopt};
  if (std::holds_alternative<std::string>(r[2])) proc.boot_id = std::get<std::string>(r[2]);
  if (std::holds_alternative<std::string>(r[3])) proc.machine_id = std::get<std::string>(r[3]);
  if (std::holds_alternative<int64_t>(r[4])) proc.process_start = std::get<int64_t>(r[4]);
  return judge_running(proc);
}

void mark_run(Store& st, int64_t run, Status s, const std::string& note) {
  st.query("UPDATE runs SET status = ?1, finished_at = coalesce(finished_at, ?2), error = coalesce(error, ?3) "
           "WHERE id = ?4",
           {Value(std::string(status_name(s))), Value(utc_timestamp()),
            note.empty() ? Value(std::monostate{}) : Value(note), Value(run)});
}

std::vector<std::string> remove_runs(Store& st, const std::vector<int64_t>& ids) {
  if (ids.empty()) return {};
  const std::string in = fmt::format("({})", fmt::join(ids, ","));
  std::vector<std::string> artifacts;  // their sha256, before the rows go
  for (const auto& row : st.query("SELECT DISTINCT sha256 FROM artifacts WHERE run_id IN " + in).rows)
    artifacts.push_back(to_text(row[0]));
  std::string sql = "BEGIN IMMEDIATE;";
  for (const auto& row : st.query("SELECT m.name FROM sqlite_master m, pragma_table_info(m.name) p "
                                  "WHERE m.type = 'table' AND p.name = 'run_id' ORDER BY m.name").rows)
    sql += fmt::format("DELETE FROM \"{}\" WHERE run_id IN {};", to_text(row[0]), in);
  sql += fmt::format("UPDATE runs SET rerun_of = NULL WHERE rerun_of IN {0} AND id NOT IN {0};", in);
  sql += "DELETE FROM runs WHERE id IN " + in + ";";
  sql += "COMMIT;";
  try {
    st.query(sql);
  } catch (const std::exception&) {
    try {
      st.query("ROLLBACK");
    } catch (const std::exception&) {  // (no transaction was open)
    }
    throw;
  }
  std::vector<std::string> gone;
  for (const auto& h : artifacts)
    if (st.query("SELECT 1 FROM artifacts WHERE sha256 = ? LIMIT 1", {Value(h)}).rows.empty()) gone.push_back(h);
  return gone;
}

}  // namespace ltrun::store
