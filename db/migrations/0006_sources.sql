-- 0006_sources: what a run executed and read, so that it can travel as one file and be
-- replayed with its own code (`ltrun export`, `ltrun import`, `ltrun rerun`, `ltrun compare`).
-- `sources`: every Lua source text by its sha256, stored once however many runs executed it
-- (no run_id: `db merge` copies the texts the merged runs name, checking each hash).
-- `run_sources`: the sources of a run (its root run: modules load once per process): the
-- script, each `require`d module (lib/lt's, the user's own, studies called as children).
-- `origin`: where it was found: 'script' (the script), 'lib' (under LTRUN_LIB, `rel` below it),
-- 'script_dir' (beside the script, `rel` below its folder), 'path' (elsewhere: `path`).
-- `run_inputs`: model folders and data files a run read: content hash, size, and `rel` below
-- `root` ('models': $LTRUN_MODELS; 'data': $LTRUN_DATA; 'workdir': the folder it ran in) when
-- it lay there; `made` = 1 when the run itself wrote it (newer than the run's start).
-- `input_hashes`: a cache of file hashes by path, size and mtime (local: never merged), so a
-- model is hashed once per version of its files.
CREATE TABLE sources (
  sha256 TEXT PRIMARY KEY,
  text   TEXT NOT NULL
);
CREATE TABLE run_sources (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  name   TEXT NOT NULL,          -- module name ('lt.experiment'), or the script's file name
  kind   TEXT NOT NULL CHECK (kind IN ('script', 'module')),
  origin TEXT NOT NULL,
  rel    TEXT,
  path   TEXT,
  sha256 TEXT NOT NULL,
  seq    INTEGER NOT NULL        -- load order
);
CREATE INDEX run_sources_run ON run_sources(run_id);
CREATE TABLE run_inputs (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  kind   TEXT NOT NULL,          -- 'model' (a folder) | 'data' (a file)
  path   TEXT NOT NULL,          -- absolute, as read
  root   TEXT,                   -- 'models' | 'data' | 'workdir' | NULL
  rel    TEXT,
  size   INTEGER,
  sha256 TEXT NOT NULL,
  made   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX run_inputs_run ON run_inputs(run_id);
CREATE TABLE input_hashes (
  path     TEXT PRIMARY KEY,
  size     INTEGER NOT NULL,
  mtime_ns INTEGER NOT NULL,
  sha256   TEXT NOT NULL
);
-- `artifact_files`: artifact files carried inside an export (`ltrun export --artifacts`), up to
-- a size limit; the artifacts rows keep naming them by path and sha256.
CREATE TABLE artifact_files (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  path   TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  size   INTEGER NOT NULL,
  data   BLOB NOT NULL
);
CREATE INDEX artifact_files_run ON artifact_files(run_id);
