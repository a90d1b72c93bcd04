-- hybrid: the latest experiments/hybrid/hybrid.lua run, one row per model (the two hybrids and, with
-- --donors=true, the donors), each trained shallow / frozen deep under freeze_deep.lua's setup:
-- trainable parameters and training wall time (Table 7), tokens/s, held-out loss on the new
-- domain before and after (gain = before - after), on the old domain (old_delta = after -
-- before), the antonym task before and after.
WITH study AS (SELECT max(parent_id) AS id FROM runs WHERE name = 'qwen3_nemotron' AND parent_id IS NOT NULL),
m AS (SELECT name, value FROM metrics WHERE run_id = (SELECT id FROM study)),
models AS (SELECT DISTINCT substr(name, 1, instr(name, '/') - 1) AS model FROM m
           WHERE name LIKE '%/trainable_params')
SELECT (SELECT id FROM study) AS study, model,
       CAST((SELECT value FROM m WHERE name = model || '/trainable_params') AS INTEGER) AS trainable,
       round((SELECT value FROM m WHERE name = model || '/wall_s'), 1) AS wall_s,
       round((SELECT value FROM m WHERE name = model || '/tokens_per_s'), 0) AS tokens_per_s,
       round((SELECT value FROM m WHERE name = model || '/base_new_loss'), 4) AS new_loss_before,
       round((SELECT value FROM m WHERE name = model || '/new_loss'), 4) AS new_loss,
       round((SELECT value FROM m WHERE name = model || '/base_new_loss')
             - (SELECT value FROM m WHERE name = model || '/new_loss'), 4) AS gain,
       round((SELECT value FROM m WHERE name = model || '/base_old_loss'), 4) AS old_loss_before,
       round((SELECT value FROM m WHERE name = model || '/old_loss'), 4) AS old_loss,
       round((SELECT value FROM m WHERE name = model || '/old_loss')
             - (SELECT value FROM m WHERE name = model || '/base_old_loss'), 4) AS old_delta,
       round((SELECT value FROM m WHERE name = model || '/base_task_acc'), 3) AS task_acc_before,
       round((SELECT value FROM m WHERE name = model || '/task_acc'), 3) AS task_acc
FROM models ORDER BY model;
