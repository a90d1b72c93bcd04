-- freeze_deep: the latest experiments/freeze_deep/freeze_deep.lua run (study_run: its run id), one row
-- per plan (and the base) and benchmark, every column (the study prints the key ones; the web
-- view and `--csv` show them all): trainable parameters (Table 7), whether embeddings / final norm + LM head were
-- frozen, wall time and training tokens/s (Table 7: train_tokens_per_s, the run's rate, as the study prints it), last training loss; the gain on the new
-- domain (new_loss: held-out loss on the new corpus; gain = base's new_loss - plan's) and the
-- cost on the base's own domain (old_loss: held-out loss there; old_delta = plan's - base's);
-- task_acc (the antonym task in the paper's format on fresh prompts, top-1 first token);
-- benchmark accuracy under the study's headline protocol (`protocol`: the first of its
-- --protocols; retention = plan's / base's) and under each protocol: cloze, logit (micro and
-- macro over categories), generate (first-letter rule, inclusion rule).
WITH study AS (SELECT max(parent_id) AS id FROM runs WHERE name = 'train_shallow' AND parent_id IS NOT NULL),
plans AS (SELECT id, name FROM runs WHERE parent_id = (SELECT id FROM study)
          AND name IN ('base', 'full', 'train_shallow', 'train_deep')),
last AS (SELECT m.run_id, m.name, m.value FROM metrics m JOIN plans p ON p.id = m.run_id
         WHERE m.step = (SELECT max(step) FROM metrics WHERE run_id = m.run_id AND name = m.name)),
headline AS (SELECT coalesce((SELECT substr(value || ',', 1, instr(value || ',', ',') - 1) FROM params
                               WHERE run_id = (SELECT id FROM study) AND key = 'protocols'), 'logit') AS p),
benches AS (SELECT DISTINCT substr(name, 1, length(name) - length(h.p) - 5) AS bench FROM last, headline h
            WHERE name LIKE '%/' || h.p || '/acc'),
base AS (SELECT id FROM plans WHERE name = 'base'),
v AS (SELECT p.id, p.name AS plan, b.bench,
        (SELECT value FROM last WHERE run_id = p.id AND name = 'new_loss') AS new_loss,
        (SELECT value FROM last WHERE run_id = p.id AND name = 'old_loss') AS old_loss,
        (SELECT value FROM last WHERE run_id = p.id AND name = b.bench || '/' || (SELECT p FROM headline) || '/acc') AS acc
      FROM plans p CROSS JOIN benches b)
SELECT (SELECT id FROM study) AS study_run, v.plan, v.bench,
       coalesce(CAST((SELECT value FROM params WHERE run_id = v.id AND key = 'trainable_params') AS INTEGER), 0) AS trainable,
       (SELECT value FROM params WHERE run_id = (SELECT id FROM study) AND key = 'freeze_embeddings') AS freeze_emb,
       (SELECT value FROM params WHERE run_id = (SELECT id FROM study) AND key = 'freeze_head') AS freeze_head,
       round(coalesce((SELECT value FROM last WHERE run_id = v.id AND name = 'wall_s_total'), 0), 1) AS wall_s,
       round(coalesce((SELECT value FROM last WHERE run_id = v.id AND name = 'train_tokens_per_s'), 0), 0) AS tokens_per_s,
       round((SELECT value FROM last WHERE run_id = v.id AND name = 'loss'), 4) AS train_loss,
       round(v.new_loss, 4) AS new_loss,
       round((SELECT new_loss FROM v b WHERE b.plan = 'base' AND b.bench = v.bench) - v.new_loss, 4) AS gain,
       round(v.old_loss, 4) AS old_loss,
       round(v.old_loss - (SELECT old_loss FROM v b WHERE b.plan = 'base' AND b.bench = v.bench), 4) AS old_delta,
       round((SELECT value FROM last WHERE run_id = v.id AND name = 'task_acc'), 3) AS task_acc,
       (SELECT p FROM headline) AS protocol,
       round(v.acc, 3) AS acc,
       round(v.acc / nullif((SELECT acc FROM v b WHERE b.plan = 'base' AND b.bench = v.bench), 0), 3) AS retention,
       round((SELECT value FROM last WHERE run_id = v.id AND name = v.bench || '/cloze/acc'), 3) AS acc_cloze,
       round((SELECT value FROM last WHERE run_id = v.id AND name = v.bench || '/logit/acc'), 3) AS acc_logit,
       round((SELECT value FROM last WHERE run_id = v.id AND name = v.bench || '/logit/acc_macro'), 3) AS acc_macro,
       round((SELECT value FROM last WHERE run_id = v.id AND name = v.bench || '/generate/acc'), 3) AS acc_generate,
       round((SELECT value FROM last WHERE run_id = v.id AND name = v.bench || '/generate_contains/acc'), 3) AS acc_contains
FROM v ORDER BY v.bench, v.plan;
