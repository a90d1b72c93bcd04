-- scan_describe: what a layer scan run (? = its id; the latest scan without one) trained: its
-- model, task, algorithm, benchmarks and data params.
SELECT key, value FROM params
 WHERE run_id = coalesce(?, (SELECT max(run_id) FROM layer_metrics WHERE name = 'contribution'))
   AND key IN ('model', 'task', 'algo', 'bench', 'data') ORDER BY key;
