-- children: the child runs of a run (? = its id; without one, the newest top-level run's):
-- id, name, status, in the order they ran.
SELECT id, name, status FROM runs
 WHERE parent_id = coalesce(?, (SELECT max(id) FROM runs WHERE parent_id IS NULL)) ORDER BY id;
