-- 0004_run_workdir: the folder a run started in (absolute, symlinks resolved). A run registers
-- as artifacts only regular files under it or under its run store's folder, and `ltrun serve`
-- serves only those (runtime/store/artifact.h). NULL in rows written before this migration:
-- their artifacts are served from under the run store's folder only.
ALTER TABLE runs ADD COLUMN workdir TEXT;
