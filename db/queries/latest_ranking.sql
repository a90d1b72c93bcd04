-- latest_ranking: the latest finished layer scan (the newest run with a `ranking` param) and its
-- ranking, best block first.
SELECT run_id AS id, value AS ranking FROM params WHERE key = 'ranking' ORDER BY run_id DESC LIMIT 1;
