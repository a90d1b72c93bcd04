// runtime/store/artifact.h: which files are a run's artifacts, for registering one
// (lt.run.artifact) and for reading one back (ltrun serve). An artifact is a regular file
// that lies, symlinks resolved, under one of the run's folders: the folder the run started in
// (runs.workdir, recorded by Store::begin_run) or the folder of its run store. Its absolute
// resolved path and sha256 are stored; a reader serves it only while the file still lies
// under those folders and still has that sha256. (A file registered from elsewhere is
// recorded with a warning, and never served.)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ltrun::store {

class Store;

// The run's folders, resolved (realpath): `workdir` (empty for runs stored before
// db/migrations/0004) and the folder holding the store file `db_path`. A folder that does not
// exist (any more) is left out.
std::vector<std::string> artifact_roots(const std::string& workdir, const std::string& db_path);

// An artifact file opened for reading, or why not. Opening never blocks (a FIFO, a device)
// and never follows a path out of the roots: the check is on the path of the opened file.
struct ArtifactFile {
  enum class Problem { none, missing, unreadable, not_regular, outside };
  Problem problem = Problem::none;
  std::string error;     // names the path; empty when problem == none
  int fd = -1;           // open for reading when problem == none
  std::string resolved;  // absolute, symlinks resolved
  uint64_t size = 0;

  ArtifactFile() = default;
  ArtifactFile(ArtifactFile&& o) noexcept;
  ArtifactFile& operator=(ArtifactFile&&) = delete;
  ~ArtifactFile();
  std::string sha256() const;      // of the opened file, read in chunks
  std::string read_all() const;    // its bytes (the caller bounds `size` first)
};

// `what` starts the error messages ("lt.run.artifact", "artifact 0 of run 3").
ArtifactFile open_artifact(const std::string& path, const std::vector<std::string>& roots,
                           const std::string& what);

// Registers `path` as an artifact of `run` with its sha256; kind defaults to the file
// extension. Returns the path stored (absolute, resolved). A path that is not a regular file
// (missing, a folder, a FIFO, a device) is an ltrun::Error naming it. A regular file outside
// the run's folders is recorded with a warning on stderr naming it, its resolved path and the
// folders: ltrun serve will not serve it (a study that writes to --out=/elsewhere still ends).
std::string register_artifact(Store& store, int64_t run, const std::string& path, std::string kind = "");

}  // namespace ltrun::store
