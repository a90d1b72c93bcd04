-- 0005_leases: which process holds a job of a keyed set of runs (a layer scan's `job` under its
-- scan key), so that a scan started again (`--resume=true`) while a worker of an earlier
-- scheduler still runs never starts that job beside it. The holder is judged alive as a
-- `running` run is (host, boot id, pid and process start time; Store::take_lease). Not merged
-- by `ltrun db merge` (no run_id column: a lease means something only on its own machine).
CREATE TABLE IF NOT EXISTS leases (
  key TEXT NOT NULL,
  job TEXT NOT NULL,
  holder_run INTEGER,          -- the run that took it (the scan), for messages
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,        -- the process that holds it (the scheduler, then its worker)
  machine_id TEXT,
  boot_id TEXT,
  process_start INTEGER,
  taken_at TEXT NOT NULL,
  PRIMARY KEY (key, job)
);
