-- latest_scans: the runs that logged layer contributions (finished layer scans), newest first,
-- at most ? of them (all without a number).
SELECT DISTINCT run_id FROM layer_metrics WHERE name = 'contribution' AND grp = ''
 ORDER BY run_id DESC LIMIT coalesce(?, -1);
