// runtime/store/views.cpp: see views.h.
#include "runtime/store/views.h"

#include "runtime/core/error.h"

namespace ltrun::store {
namespace {
constexpr const char* kSecs =
    "round((julianday(coalesce(finished_at, strftime('%Y-%m-%d %H:%M:%f','now'))) - julianday(started_at)) * 86400, 1)";
}

Query query_of(Store& st) {
  return [&st](const std::string& sql, const std::vector<Value>& binds) { return st.query(sql, binds); };
}

RunSummary run_summary(const Query& q, int64_t id) {
  const std::vector<Value> bind{Value(id)};
  RunSummary s;
  s.run = q(fmt::format(
      "SELECT id, parent_id, rerun_of, name, status, error, script_path, script_sha256, "
      "length(script_text) AS script_bytes, args_json, seed, device, torch_version, ltrun_version, git_rev, host, "
      "pid, workdir, started_at, finished_at, {} AS secs FROM runs WHERE id = ?", kSecs), bind);
  LT_CHECK(!s.run.rows.empty(), "no run with id {}", id);
  s.params = q("SELECT key, value FROM params WHERE run_id = ? ORDER BY key", bind);
  s.metrics = q(
      "SELECT name, count(*) AS points, min(step) AS first_step, max(step) AS last_step, "
      "(SELECT value FROM metrics l WHERE l.run_id = m.run_id AND l.name = m.name ORDER BY step DESC, rowid DESC LIMIT 1) "
      "AS last, min(value) AS min, max(value) AS max, min(t) AS t0, max(t) AS t1 "
      // in step order, so a long series is read in the order it was written: through
      // metrics_run_name_value (db/migrations/0007) the rows came in value order, a random
      // read each (1M points: 4.6 s instead of 1.1 s)
      "FROM metrics m INDEXED BY metrics_run_name WHERE run_id = ? "
      "GROUP BY name ORDER BY name", bind);
  s.layer_metrics = q(
      "SELECT name, count(DISTINCT grp) AS groups, count(DISTINCT layer) AS layers, min(layer) AS first_layer, "
      "max(layer) AS last_layer, count(DISTINCT step) AS steps, count(*) AS rows, min(value) AS min, max(value) AS max "
      "FROM layer_metrics WHERE run_id = ? GROUP BY name ORDER BY min(rowid)", bind);
  s.eval = q(
      "SELECT bench, protocol, coalesce(category, '') AS category, count(*) AS items, sum(correct) AS correct, "
      "avg(correct) AS accuracy FROM eval_items WHERE run_id = ? GROUP BY bench, protocol, category "
      "ORDER BY bench, protocol, category", bind);
  s.artifacts = q("SELECT kind, path, sha256, t FROM artifacts WHERE run_id = ? ORDER BY rowid", bind);
  s.children = q(fmt::format("SELECT id, name, status, started_at, finished_at, {} AS secs FROM runs "
                                    "WHERE parent_id = ? ORDER BY id", kSecs), bind);
  return s;
}

int64_t root_run(const Query& q, int64_t id) {
  int64_t root = id;
  for (int guard = 0; guard < 64; guard++) {  // a parent cycle (a hand-edited store) ends here
    const Table t = q("SELECT parent_id FROM runs WHERE id = ?", {Value(root)});
    if (t.rows.empty() || !std::holds_alternative<int64_t>(t.rows[0][0])) break;
    root = std::get<int64_t>(t.rows[0][0]);
  }
  return root;
}

}  // namespace ltrun::store
