// runtime/store/share.h: one run as one file (`ltrun export`, `ltrun import`). An export is
// a run store (SQLite, rollback journal, one file) holding the run (and with `children` every
// run under it) with its params, metrics, layer metrics, eval items, artifacts rows, sources
// and inputs (db/migrations/0006), and with `artifacts` the artifact files themselves up to a
// size limit. An import checks the whole file first (complete, undamaged, a schema this ltrun
// knows, every script and source text matching its hash), then merges it as `ltrun db merge`
// does (new ids, nothing lost) in one transaction: it applies completely or not at all.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/store/merge.h"

namespace ltrun::store {

// The bytes of the inputs runs read travel with `with_inputs` in a table of the export
// (input_files: sha256, size, data; not a table of the store schema: a store never holds it):
// a data file as its bytes, a model folder as its manifest (capture.h: folder_manifest, whose
// sha256 is the folder's) and its files' bytes. An import restores them, named by content only,
// to <store>.inputs/sha256/ab/<sha256> (a file, read-only) and <store>.inputs/models/<sha256>/
// (a folder of read-only files), where `ltrun rerun` reads an input that is not at its place.
constexpr int64_t kMaxInputBytes = int64_t(256) << 20;  // default cap, all input files together
std::string input_store_dir(const std::string& db);  // <db>.inputs (absolute)
// The restored copy of the input of `kind` (data, model) with content `sha256`; "" when the
// hash is not 64 lowercase hex digits.
std::string input_copy_path(const std::string& db, const std::string& kind, const std::string& sha256);

struct ExportOptions {
  bool children = false;
  bool artifacts = false;
  int64_t max_artifact_bytes = int64_t(256) << 20;  // all artifact files together
  bool with_inputs = false;
  int64_t max_input_bytes = kMaxInputBytes;  // all input files together: past it, no export
};
struct ExportResult {
  int64_t runs = 0, sources = 0, inputs = 0, artifact_files = 0, artifact_bytes = 0, bytes = 0;
  int64_t input_files = 0, input_bytes = 0;
  std::vector<std::string> notes;  // artifacts left out, and why
};
// Errors name the run (missing, still running) or the output (exists: never overwritten). With
// with_inputs, every input the runs read (not made by them) goes in, each from the store's
// restored copy or, for a run made on this machine, from its recorded path, its bytes checked
// against the recorded sha256; one that cannot be carried, or a total past max_input_bytes
// (naming the biggest), is an error and nothing is written.
ExportResult export_run(const std::string& db, int64_t run, const std::string& out, const ExportOptions& o);

// Refuses a file that is truncated, damaged, of a newer schema, or whose script or source texts
// do not match their hashes, or whose carried input files do not match theirs or together
// exceed max_input_bytes, naming what is wrong.
void check_export(const std::string& file, int64_t max_input_bytes = kMaxInputBytes);
// Also refused, naming the run and the field: runs whose parent links are not a tree (a run
// its own parent, a cycle), an args_json that is not a JSON array of strings, a seed or
// parent_id that is not an integer, a source or input row not as ltrun writes it (an input's
// rel must be a clean relative path: a bundle never names files outside its roots).
// Stored strings in its errors are quoted as they are: a CLI escapes them for a terminal.
// check_export, then merge_stores(db, {file}), then the carried input files named by a data
// input of the file's runs restored into input_store_dir(db) (a note says how many).
MergeInput import_file(const std::string& db, const std::string& file, int64_t max_input_bytes = kMaxInputBytes);
// The id in `db` of run `run_in_file` of `file` (by uuid), after an import.
int64_t imported_id(const std::string& db, const std::string& file, int64_t run_in_file);
// The uuid of run `run_in_file` of `file`; an error naming both when it is not there.
std::string export_run_uuid(const std::string& file, int64_t run_in_file);
// A path below a root: not empty, not absolute, no empty, "." or ".." part, no NUL.
bool is_clean_relative_path(const std::string& rel);
// The file's one top-level run (an export of one run): its id in the file.
int64_t export_top_run(const std::string& file);

}  // namespace ltrun::store
