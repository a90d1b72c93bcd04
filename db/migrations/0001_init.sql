-- 0001_init: the run store. One row per script execution (and per child run), with what it
-- logged. Later changes are new numbered files; PRAGMA user_version = the last one applied.
CREATE TABLE runs (
  id            INTEGER PRIMARY KEY,
  parent_id     INTEGER REFERENCES runs(id),
  rerun_of      INTEGER REFERENCES runs(id),
  name          TEXT NOT NULL,
  script_path   TEXT,
  script_sha256 TEXT,
  script_text   TEXT,
  args_json     TEXT NOT NULL DEFAULT '[]',
  status        TEXT NOT NULL DEFAULT 'running'
                CHECK (status IN ('running', 'ok', 'failed', 'interrupted', 'crashed')),
  error         TEXT,
  git_rev       TEXT,
  host          TEXT,
  pid           INTEGER,
  device        TEXT,
  torch_version TEXT,
  ltrun_version TEXT,
  seed          INTEGER,
  started_at    TEXT NOT NULL,
  finished_at   TEXT
);
CREATE INDEX runs_parent ON runs(parent_id);
CREATE INDEX runs_status ON runs(status);

CREATE TABLE params (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  key    TEXT NOT NULL,
  value  TEXT,
  PRIMARY KEY (run_id, key)
);

CREATE TABLE metrics (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  name   TEXT NOT NULL,
  step   INTEGER NOT NULL,
  value  REAL,
  t      REAL NOT NULL          -- unix time (seconds) when logged
);
CREATE INDEX metrics_run_name ON metrics(run_id, name, step);

CREATE TABLE layer_metrics (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  name   TEXT NOT NULL,
  layer  INTEGER NOT NULL,      -- 0 = first decoder block, as in model.layers.0
  grp    TEXT NOT NULL DEFAULT '',
  value  REAL,
  step   INTEGER
);
CREATE INDEX layer_metrics_run_name ON layer_metrics(run_id, name, grp, layer);

CREATE TABLE eval_items (
  run_id     INTEGER NOT NULL REFERENCES runs(id),
  bench      TEXT NOT NULL,
  item_id    TEXT NOT NULL,
  category   TEXT,
  protocol   TEXT NOT NULL,
  prediction TEXT,
  answer     TEXT,
  correct    INTEGER
);
CREATE INDEX eval_items_run ON eval_items(run_id, bench, protocol);

CREATE TABLE artifacts (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  kind   TEXT NOT NULL,
  path   TEXT NOT NULL,
  sha256 TEXT,
  t      REAL NOT NULL
);
CREATE INDEX artifacts_run ON artifacts(run_id);
