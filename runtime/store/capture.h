// runtime/store/capture.h: what a run executed and read (db/migrations/0006_sources.sql).
// Every Lua source the run loads goes through find_source (the interpreter's `require`
// searcher, bindings/interp.cpp), which reads it from disk, or in a replay serves the
// stored text, and records it by content hash with the run; the files the run reads
// (runtime/core/inputs.h) are hashed (once per path, size and mtime: input_hashes) and
// recorded too. One Capture per process, for its top run.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runtime/store/store.h"

namespace ltrun::store {

struct SourceFile {
  std::string name, kind = "module", origin, rel, path, sha256, text;
  bool stored = false;  // served from the run store (a replay), not read from `path`
};

// A file's or a model folder's content hash with its size. A folder: its regular files (not
// hidden ones or *.lock), each by name, size and sha256. `cache` (may be null): the store
// whose input_hashes keeps each file's hash by path, size and mtime.
struct InputHash {
  std::string sha256;
  int64_t size = 0;
  int64_t newest_mtime_ns = 0;
  int64_t files_hashed = 0;  // files actually read (not from the cache)
};
InputHash hash_input(const std::string& kind, const std::string& path, Store* cache);
// What a folder's hash is the sha256 of: a line "NAME\tSIZE\tSHA256\n" per regular file, by
// name (export --with-inputs carries a model folder as this text and its files' bytes).
std::string folder_manifest(const std::string& path, Store* cache, InputHash* h = nullptr);

// The folders paths are recorded relative to: $LTRUN_MODELS (default ./models), $LTRUN_DATA,
// the folder the run started in. root and rel are empty when the path is under none of them.
struct RootedPath {
  std::string root, rel;
};
RootedPath rooted(const std::string& abs_path);

class Capture {
 public:
  // Records into `store` under run `run`; lib_dir: LTRUN_LIB (origin 'lib'); script_path: the
  // script (modules beside it are origin 'script_dir').
  Capture(std::shared_ptr<Store> store, int64_t run, const std::string& script_path, const std::string& lib_dir);
  ~Capture();
  // The script itself (kind 'script').
  void script(const std::string& name, const std::string& text);
  // Replay: modules are served from these texts by name, before any file on disk.
  void serve(std::map<std::string, SourceFile> stored, int64_t from_run);
  std::optional<SourceFile> module(const std::string& name, const std::string& package_path, std::string& tried);
  void input(const std::string& kind, const std::string& path);
  // seconds spent capturing so far (searching, reading, hashing, recording), files hashed
  double seconds() const { return ns_ * 1e-9; }
  int64_t files_hashed() const { return files_hashed_; }

 private:
  void record(const SourceFile& f);
  std::shared_ptr<Store> store_;
  int64_t run_;
  std::string script_dir_, lib_dir_;
  int64_t seq_ = 0;
  int64_t started_ns_;
  std::map<std::string, SourceFile> stored_;
  int64_t stored_from_ = 0;
  std::mutex mu_;
  std::set<std::string> inputs_seen_;
  int64_t ns_ = 0, files_hashed_ = 0;
};

// The searcher's entry point: the current Capture's module() when one is active, else the
// first file of package.path's templates, unrecorded.
std::optional<SourceFile> find_source(const std::string& name, const std::string& package_path, std::string& tried);
void set_current_capture(Capture* c);

// The stored sources of a run (its root's), each text checked against its sha256: a text
// that does not match is an error naming the module and both hashes.
std::vector<SourceFile> stored_sources(Store& st, int64_t run);

}  // namespace ltrun::store
