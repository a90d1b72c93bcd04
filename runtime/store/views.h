// runtime/store/views.h: read-only views over the run store that several readers share. One
// run's summary is built here once, for `ltrun show` (runtime/cli/commands.cpp) and for
// `ltrun serve`'s /api/runs/ID (runtime/serve/api.cpp), so both show the same fields.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/store/store.h"

namespace ltrun::store {

struct RunSummary {
  // id, parent_id, rerun_of, name, status, error, script_path, script_sha256, script_bytes,
  // args_json, seed, device, torch_version, ltrun_version, git_rev, host, pid, workdir,
  // started_at, finished_at, secs (wall time so far for a running run)
  Table run;
  Table params;         // key, value (by key)
  Table metrics;        // name, points, first_step, last_step, last, min, max, t0, t1 (by name)
  Table layer_metrics;  // name, groups, layers, first_layer, last_layer, steps, rows, min, max (first logged first)
  Table eval;           // bench, protocol, category ('' when none), items, correct, accuracy
  Table artifacts;      // kind, path, sha256, t (in the order registered)
  Table children;       // id, name, status, started_at, finished_at, secs
};

// How a view reads: Store::query, or serve's Reader (read-only, with limits).
using Query = std::function<Table(const std::string& sql, const std::vector<Value>& binds)>;
Query query_of(Store& st);

// The summary of run `id`; an error "no run with id ID" when there is none.
RunSummary run_summary(const Query& q, int64_t id);

// The top of run `id`'s family (following parent_id; the run itself when it has no parent).
int64_t root_run(const Query& q, int64_t id);

}  // namespace ltrun::store
