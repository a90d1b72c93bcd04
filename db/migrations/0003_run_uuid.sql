-- 0003_run_uuid: a stable identity for every run, so that `ltrun db merge` (run stores of
-- shards, nodes or colleagues merged into one file) recognises a run it has merged before.
-- 32 hex digits (128 random bits), given to existing rows here and to new rows by the
-- trigger, so that every writer of the store (any ltrun version with this schema) sets it.
ALTER TABLE runs ADD COLUMN uuid TEXT;
UPDATE runs SET uuid = lower(hex(randomblob(16))) WHERE uuid IS NULL;
CREATE UNIQUE INDEX runs_uuid ON runs(uuid);
CREATE TRIGGER runs_uuid_default AFTER INSERT ON runs FOR EACH ROW WHEN NEW.uuid IS NULL
BEGIN
  UPDATE runs SET uuid = lower(hex(randomblob(16))) WHERE id = NEW.id;
END;
