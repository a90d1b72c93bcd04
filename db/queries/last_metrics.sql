-- last_metrics: each metric of a run (? = its id; the newest run without one) at its last step:
-- name, step, value.
SELECT m.name, m.step, m.value FROM metrics m
 WHERE m.run_id = coalesce(?, (SELECT max(id) FROM runs))
   AND m.step = (SELECT max(step) FROM metrics WHERE run_id = m.run_id AND name = m.name)
 ORDER BY m.name;
