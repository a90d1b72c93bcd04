// runtime/store/merge.h: merging run stores (`ltrun db merge OUT IN...`): the shards of a
// scan that ran as a job array, each with its own DB, become one file for the queries and
// figures. Runs get new ids in OUT; parent, rerun and every run_id column (params, metrics,
// layer_metrics, eval_items, artifacts, and any later table with a run_id) follow the new
// ids. A run whose uuid OUT already holds (merged before, or the same input twice) is not
// copied again and is reported.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ltrun::store {

struct MergeInput {
  std::string path;
  int64_t runs = 0;          // runs in the input
  int64_t added = 0;         // copied into OUT, with new ids
  int64_t already = 0;       // skipped: their uuid was already in OUT
  int64_t first_id = 0, last_id = 0;  // ids the added runs got in OUT (0 when none)
  int64_t rows = 0;          // rows of the run_id tables copied
  std::vector<std::string> notes;  // skipped runs whose status differs from OUT's, ...
};

// Inputs are opened as stores first (migrated to the current schema, so older files get
// their uuids, stored back in the input so a second merge recognises them). Each input is
// merged in one transaction: an error leaves OUT as it was before that input. Errors name
// the file: OUT given as an input, a missing input, a file that is not a run store.
// `progress(i, n)` is called after each input.
std::vector<MergeInput> merge_stores(const std::string& out, const std::vector<std::string>& inputs,
                                     const std::function<void(size_t, size_t)>& progress = {});

}  // namespace ltrun::store
