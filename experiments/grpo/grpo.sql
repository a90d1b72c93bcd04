-- grpo: the latest experiments/grpo/grpo.lua run: its settings, base and final held-out accuracy
-- (greedy, and sampled avg@k where measured),
-- and per step reward, accuracy on the rollouts, held-out accuracy where evaluated, response
-- length, entropy, clip fraction, approximate KL, pg loss, grad norm and rollout tokens/s.
WITH run AS (SELECT max(run_id) AS id FROM metrics WHERE name = 'final_accuracy'),
steps AS (SELECT DISTINCT step FROM metrics WHERE run_id = (SELECT id FROM run) AND name = 'loss')
SELECT (SELECT id FROM run) AS run, s.step,
       (SELECT value FROM params WHERE run_id = (SELECT id FROM run) AND key = 'algo') AS algo,
       round((SELECT value FROM metrics WHERE run_id = (SELECT id FROM run) AND name = 'base_accuracy'), 3) AS base_acc,
       round((SELECT value FROM metrics WHERE run_id = (SELECT id FROM run) AND name = 'final_accuracy'), 3) AS final_acc,
       round((SELECT value FROM metrics WHERE run_id = (SELECT id FROM run) AND name = 'base_sampled_accuracy'), 3) AS base_sampled,
       round((SELECT value FROM metrics WHERE run_id = (SELECT id FROM run) AND name = 'final_sampled_accuracy'), 3) AS final_sampled,
       round(max(CASE WHEN m.name = 'reward_mean' THEN m.value END), 3) AS reward,
       round(max(CASE WHEN m.name = 'accuracy' THEN m.value END), 3) AS rollout_acc,
       round(max(CASE WHEN m.name = 'heldout_accuracy' THEN m.value END), 3) AS heldout_acc,
       round(max(CASE WHEN m.name = 'response_len' THEN m.value END), 1) AS resp_len,
       round(max(CASE WHEN m.name = 'entropy' THEN m.value END), 3) AS entropy,
       round(max(CASE WHEN m.name = 'clip_frac' THEN m.value END), 3) AS clip_frac,
       round(max(CASE WHEN m.name = 'approx_kl' THEN m.value END), 5) AS approx_kl,
       round(max(CASE WHEN m.name = 'pg_loss' THEN m.value END), 4) AS pg_loss,
       round(max(CASE WHEN m.name = 'grad_norm' THEN m.value END), 3) AS grad_norm,
       round(max(CASE WHEN m.name = 'rollout_tokens_per_s' THEN m.value END), 0) AS rollout_tok_s
FROM steps s JOIN metrics m ON m.run_id = (SELECT id FROM run) AND m.step = s.step
GROUP BY s.step ORDER BY s.step;
