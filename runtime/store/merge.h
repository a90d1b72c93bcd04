// runtime/store/merge.h: merging run stores (`ltrun db merge OUT IN...`): the shards of a
// scan that ran as a job array, each with its own DB, become one file for the queries and
// figures. Runs get new ids in OUT; parent, rerun and every run_id column (params, metrics,
// layer_metrics, eval_items, artifacts, and any later table with a run_id) follow the new
// ids. A run is the same run in every store by its uuid (db/migrations/0003_run_uuid.sql).
//
// Inputs are only read, never changed: no migration, no journal-mode switch, no -wal or -shm
// file created beside them, so a store on a read-only file or folder merges too. How:
//  - a rollback-journal store: opened read-only (mode=ro), with SQLite's locks;
//  - a WAL store with no -wal file (nobody has it open): read as an immutable file, and read
//    again should the file change meanwhile (a writer that started and checkpointed);
//  - a WAL store with -wal and -shm that another process has open (a live writer): opened
//    read-only beside it, so the -wal's frames are read; only SQLite's shared index (-shm),
//    which the writer changes anyway, gets this reader's read mark;
//  - the same left by a writer that died (frames not yet checkpointed): read with the -shm
//    opened read-only too (readonly_shm), so nothing beside it changes;
//  - a -wal without its -shm (a copied shard), or a store the read-only opening fails on:
//    db and -wal copied into a private temporary folder, read there, removed after.
//
// Runs still `running` in an input are judged as Store::open judges them (judge_running); a
// run of another host counts as live while another process has the input open (WAL lock),
// else as gone. A live run, with every run under it, is not copied unless include_running;
// a gone one is copied as `crashed` (what Store::open would mark it). A run OUT holds as an
// unfinished copy (`running` or `crashed`) whose input row has since moved on (other status
// or other row count) is completed: its OUT id kept, its row and rows replaced by the input's.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ltrun::store {

struct MergeOptions {
  bool include_running = false;  // copy live runs as they are now (a partial copy, said so)
  std::set<int64_t> only_runs;   // input ids to copy (`ltrun export`); empty: every run
  // An input from elsewhere (an export, a replay's store): read only once its schema is the
  // store's own for its version, tables only, plus `extra_tables` (sqlite.h: check_as_data).
  bool as_data = false;
  std::vector<std::string> extra_tables;
};

struct MergeInput {
  std::string path;
  std::string read_as;       // how the input was read (see above)
  int64_t runs = 0;          // runs in the input
  int64_t added = 0;         // copied into OUT, with new ids
  int64_t completed = 0;     // an unfinished copy in OUT brought up to the input's row
  int64_t already = 0;       // skipped: their uuid was already in OUT, as complete as here
  int64_t running = 0;       // not copied: still running (with the runs under them)
  int64_t crashed = 0;       // left `running` by a process that is gone: copied as `crashed`
  int64_t partial = 0;       // copied while running (include_running)
  int64_t first_id = 0, last_id = 0;  // ids the added runs got in OUT (0 when none)
  int64_t rows = 0;          // rows of the run_id tables copied
  std::vector<std::string> still_running;  // one line per live run not copied (top of its subtree)
  std::vector<std::string> notes;          // a run whose status differs from OUT's, a dropped link
};

// The merging process must not have an input open itself: reading a file's header, copying
// it and probing its -shm lock open and close the file, and closing any descriptor of a file
// drops the POSIX locks the process holds on it (SQLite's among them). `ltrun db merge` runs
// in a process of its own.
// The Lua sources the copied runs name (db/migrations/0006) are copied too, each text checked
// against its sha256 first: a text that does not match, or one missing, is an error naming the
// source and the input, and nothing of that input is merged.
// Each input is merged in one transaction: an error leaves OUT as it was before that input.
// Errors name the file: OUT given as an input, a missing input, a file that is not a run
// store, a store older than db/migrations/0003 (no run uuids: it has to be upgraded, which
// writes to it) or newer than this ltrun. `progress(i, n)` is called after each input.
// Parent links (run id -> parent_id) must form a forest: no run its own parent, no cycle. The
// first cycle found (each run's parent is the next, the last's is the first), empty when none;
// a parent that is not in `parents` ends a chain. Bounded: each run is visited once.
std::vector<int64_t> find_parent_cycle(const std::map<int64_t, std::optional<int64_t>>& parents);
// "run 3 is its own parent (parent_id = id)" / "runs 1 -> 2 -> 1 form a cycle of parents"
std::string parent_cycle_text(const std::vector<int64_t>& cycle);

// An input whose runs' parent links are not a forest (a store edited by hand) is refused,
// naming the runs, before anything of it is merged.
std::vector<MergeInput> merge_stores(const std::string& out, const std::vector<std::string>& inputs,
                                     const MergeOptions& options = {},
                                     const std::function<void(size_t, size_t)>& progress = {});

}  // namespace ltrun::store
