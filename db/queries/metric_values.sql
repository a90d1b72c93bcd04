-- metric_values: one metric of one run by step (? = the run id, ? = the metric name; without
-- them, the newest run's `loss`).
SELECT step, value FROM metrics
 WHERE run_id = coalesce(?, (SELECT max(id) FROM runs)) AND name = coalesce(?, 'loss') ORDER BY step;
