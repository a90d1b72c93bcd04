-- run_metrics: one run's metrics, one row per name and step; the run is the query's parameter
-- (lt.run.query("@run_metrics", id)), the latest run when none is given (ltrun sql @run_metrics).
SELECT m.run_id, m.name, m.step, m.value
FROM metrics m
WHERE m.run_id = coalesce(?1, (SELECT max(id) FROM runs))
ORDER BY m.name, m.step;
