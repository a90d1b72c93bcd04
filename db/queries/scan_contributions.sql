-- scan_contributions: the contributions C_l of one layer-scan run (? = the run id): one row per
-- block, the mean-score contribution (grp ''); `ltrun sql @scan_contributions` without an id
-- shows those of the latest scan.
SELECT layer, value FROM layer_metrics
 WHERE name = 'contribution' AND grp = ''
   AND run_id = coalesce(?, (SELECT max(run_id) FROM layer_metrics WHERE name = 'contribution'))
 ORDER BY layer;
