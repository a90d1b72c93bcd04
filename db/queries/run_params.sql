-- run_params: the params of one run (? = its id; the newest run without one), key by key.
SELECT key, value FROM params WHERE run_id = coalesce(?, (SELECT max(id) FROM runs)) ORDER BY key;
