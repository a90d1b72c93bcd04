-- 0007_metric_value_index: the results table of `ltrun serve` (/api/table) sorts runs by the
-- min or max of a metric. With (run_id, name, value) indexed, min(value) and max(value) of one
-- run's metric are one index seek each (SQLite's min/max optimisation), not a scan of its
-- points, so sorting 2,000 runs of 1,500 points each reads a few thousand index entries
-- rather than 3M rows. The last value already comes from metrics_run_name (by step).
CREATE INDEX IF NOT EXISTS metrics_run_name_value ON metrics(run_id, name, value);
