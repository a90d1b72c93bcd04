-- layer_tracer: the latest LayerTracer run, one row per layer (decoder block, residual after it):
-- P_t, Ratio, JS and ΔJS averaged over task groups, the normalised TP / LS profiles, and the
-- split score S(b) of a split after this layer's block count (b = layer + 1), where logged.
WITH run AS (SELECT max(run_id) AS id FROM layer_metrics WHERE name = 'ls_djs'),
per_layer AS (
  SELECT layer,
         avg(CASE WHEN name = 'p_target' THEN value END) AS p_target,
         avg(CASE WHEN name = 'tp_ratio' THEN value END) AS tp_ratio,
         avg(CASE WHEN name = 'js' THEN value END) AS js,
         avg(CASE WHEN name = 'ls_djs' THEN value END) AS ls_djs,
         max(CASE WHEN name = 'tp_profile' THEN value END) AS tp,
         max(CASE WHEN name = 'ls_profile' THEN value END) AS ls,
         count(DISTINCT CASE WHEN grp <> '' THEN grp END) AS groups
  FROM layer_metrics WHERE run_id = (SELECT id FROM run)
  GROUP BY layer)
SELECT (SELECT id FROM run) AS run_id, p.layer,
       round(p.p_target, 6) AS p_target, round(p.tp_ratio, 4) AS tp_ratio, round(p.js, 6) AS js,
       round(p.ls_djs, 4) AS ls_djs, round(p.tp, 3) AS tp, round(p.ls, 3) AS ls,
       (SELECT round(value, 4) FROM metrics m WHERE m.run_id = (SELECT id FROM run)
          AND m.name = 'split_score' AND m.step = p.layer + 1) AS split_score_after,
       p.groups
FROM per_layer p ORDER BY p.layer;
