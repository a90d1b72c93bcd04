-- runs: the latest runs, children indented under their parents' ids.
SELECT id, parent_id AS parent, name, status, started_at,
       round((julianday(coalesce(finished_at, strftime('%Y-%m-%d %H:%M:%f','now'))) - julianday(started_at)) * 86400, 1) AS secs,
       device, seed
FROM runs ORDER BY id DESC LIMIT 50;
