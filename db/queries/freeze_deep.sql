-- freeze_deep: the latest experiments/freeze_deep.lua run, one row per plan (and the base):
-- trainable parameters, wall time, training tokens/s, last training loss, validation loss and
-- benchmark accuracy under the logit and generate protocols.
WITH study AS (SELECT max(parent_id) AS id FROM runs WHERE name = 'train_shallow' AND parent_id IS NOT NULL),
plans AS (SELECT id, name FROM runs WHERE parent_id = (SELECT id FROM study)
          AND name IN ('base', 'full', 'train_shallow', 'train_deep'))
SELECT (SELECT id FROM study) AS study, p.name AS plan,
       CAST((SELECT value FROM params WHERE run_id = p.id AND key = 'trainable_params') AS INTEGER) AS trainable,
       round((SELECT value FROM metrics WHERE run_id = p.id AND name = 'wall_s_total' ORDER BY step DESC LIMIT 1), 1) AS wall_s,
       round((SELECT avg(value) FROM metrics WHERE run_id = p.id AND name = 'tokens_per_s'), 0) AS tokens_per_s,
       round((SELECT value FROM metrics WHERE run_id = p.id AND name = 'loss' ORDER BY step DESC LIMIT 1), 4) AS train_loss,
       round(coalesce((SELECT value FROM metrics WHERE run_id = p.id AND name = 'final_val_loss' ORDER BY step DESC LIMIT 1),
                      (SELECT CAST(value AS REAL) FROM params WHERE run_id = (SELECT id FROM study) AND key = 'base_val_loss')), 4) AS val_loss,
       round((SELECT value FROM metrics WHERE run_id = p.id AND name LIKE '%/logit/acc'), 3) AS acc_logit,
       round((SELECT value FROM metrics WHERE run_id = p.id AND name LIKE '%/generate/acc'), 3) AS acc_generate
FROM plans p ORDER BY p.name;
