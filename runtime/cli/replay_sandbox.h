// runtime/cli/replay_sandbox.h: `ltrun rerun --sandbox`: a run from someone else is untrusted
// code, so its replay runs inside bubblewrap and sees nothing of this machine but what it
// needs: the system's program and library folders, ltrun itself and its Lua library, and the
// inputs the run declares (read-only: a data file, or exactly the files of a model folder its
// hash covers; never a folder that holds a home or key material); a fresh, empty working
// folder (a size-capped tmpfs) and a store of its own (writable); no network, no home, no other
// host path. It is bounded as a reward program is (runtime/sandbox/bounded.h: memory,
// processes, disk, wall clock), and says which bound ended it. The store it writes is a private
// file seeded with just the run to replay; afterwards ltrun (outside) merges only the new
// run's rows into the user's store and compares them. What it mounts is printed first.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/sandbox/bounded.h"
#include "runtime/store/store.h"

namespace ltrun::cli {

// One input the run read, as the rerun's checks found it here.
struct ReplayInput {
  std::string kind;     // model | data
  std::string name;     // "models:tiny", or the recorded path
  std::string root;     // models | data | workdir | "" (the recorded absolute path)
  std::string found_at;  // where it lies here, as rerun looked for it ("" when missing)
  bool same = false;     // its content hashes as recorded
  std::string read_from;  // its restored copy (STORE.inputs/...) when it is not at found_at
};

struct ReplayPlan {
  std::string db;      // the user's store
  int64_t run = 0;     // the run to replay, its id in `db`
  std::string device;  // --device
  std::optional<uint64_t> seed;       // --seed, when given
  std::string models, data;           // rerun's --models / --data, as given ("" when not)
  std::vector<std::string> rerun_args;  // rerun's arguments after the run (--sources=..., --key=value)
  std::vector<ReplayInput> inputs;
  bool allow_changed = false;  // --allow-changed-inputs: changed inputs below models/data are mounted too
  double tolerance = 0;
  sandbox::CommandBounds bounds;  // --memory-mb, --nproc, --disk-mb, --timeout
};

// The line a rerun ends with: how the new run compares with the original, or, when the replay
// did not end ok, that it failed (its metrics stop midway: no "reproduced: 0 of N").
std::string replay_line(store::Store& st, int64_t orig, int64_t new_run, double tol);

// Prints the mounts, runs the replay in bubblewrap, merges its new run into plan.db and
// prints how it compares with the original. Returns the replay's exit code.
int rerun_sandboxed(const ReplayPlan& plan);

}  // namespace ltrun::cli
