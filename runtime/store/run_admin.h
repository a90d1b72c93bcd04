// runtime/store/run_admin.h: changing runs after they ran (`ltrun rm`, `ltrun mark`, and a
// script stopped by a mistake in its args): a run's family, whether its process still runs,
// its status set by hand, and runs removed with every row that names them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/store/store.h"

namespace ltrun::store {

// The status named `name` ("ok", "failed", ...), or nothing when none is; status_names():
// "running, ok, ..." for a message.
std::optional<Status> parse_status(const std::string& name);
std::string status_names();

// Runs `ids` and every run under them (parent_id, any depth; a cycle of parents, a store
// edited by hand, ends the walk), each once, ids first in the order given, then by id. A
// missing id is an error naming it and the store.
std::vector<int64_t> run_family(Store& st, const std::vector<int64_t>& ids);

// Whether the process of run `run` still runs (judge_running on its recorded host, pid, boot
// and start time); `unknown` for a row without a pid. Only meaningful for a `running` row.
Liveness run_liveness(Store& st, int64_t run);

// Sets run `run`'s status by hand (ltrun mark): finished_at stays when it was set (else now),
// error stays when it was set (else `note`).
void mark_run(Store& st, int64_t run, Status s, const std::string& note);

// Removes runs `ids` with the rows of every table that has a run_id column, in one
// transaction; another run's rerun_of link to one of them is cleared. Stored source texts stay
// (shared by content; a writer adds a text before the row that names it). Returns the sha256 of the artifacts whose last row went (their
// copies beside the store, artifact_copy_path, are the caller's to remove).
std::vector<std::string> remove_runs(Store& st, const std::vector<int64_t>& ids);

}  // namespace ltrun::store
