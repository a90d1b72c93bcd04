-- layer_scan: the latest experiments/layer_scan/layer_scan.lua analysis, one row per scanned block:
-- S_l (mean benchmark score of the model with only that block trained), the contribution
-- C_l = (S_l − S_base)/(S_full − S_base) (NULL when undefined), its rank (1 = best), the
-- block's own weight change, and the job run that trained it. S_base and S_full repeat on
-- every row. Works on a store merged from shards (`ltrun db merge`).
WITH scan AS (SELECT max(run_id) AS id FROM layer_metrics WHERE name = 'score'
              AND run_id IN (SELECT id FROM runs WHERE script_path LIKE '%layer_scan.lua' OR name = 'layer_scan')),
key AS (SELECT value FROM params WHERE run_id = (SELECT id FROM scan) AND key = 'scan_key'),
job AS (SELECT r.name, max(r.id) AS id FROM runs r JOIN params p ON p.run_id = r.id AND p.key = 'scan_key'
        WHERE p.value = (SELECT value FROM key) AND r.status = 'ok' GROUP BY r.name),
s AS (SELECT layer, value FROM layer_metrics WHERE run_id = (SELECT id FROM scan) AND name = 'score' AND grp = ''),
c AS (SELECT layer, value FROM layer_metrics WHERE run_id = (SELECT id FROM scan) AND name = 'contribution' AND grp = '')
SELECT (SELECT id FROM scan) AS scan, s.layer,
       round(s.value, 4) AS s_l,
       round(c.value, 3) AS contribution,
       (SELECT count(*) + 1 FROM c c2 WHERE c2.value > c.value OR (c2.value = c.value AND c2.layer < c.layer)) AS rank,
       round((SELECT m.value FROM metrics m WHERE m.run_id = (SELECT id FROM job WHERE name = 'base') AND m.name = 'score'), 4) AS s_base,
       round((SELECT m.value FROM metrics m WHERE m.run_id = (SELECT id FROM job WHERE name = 'full') AND m.name = 'score'), 4) AS s_full,
       round((SELECT lm.value FROM layer_metrics lm WHERE lm.run_id = j.id AND lm.name = 'weight_change' AND lm.layer = s.layer), 4) AS weight_change,
       j.id AS run
FROM s LEFT JOIN c ON c.layer = s.layer
       LEFT JOIN job j ON j.name = 'layer_' || s.layer
ORDER BY s.layer;
