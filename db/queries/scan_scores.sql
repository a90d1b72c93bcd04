-- scan_scores: the reported score S of each ok run of one scan (its jobs carry param
-- scan_key = ?), oldest first, so that a later run of a job comes after an earlier one.
SELECT r.name, m.value FROM runs r JOIN params p ON p.run_id = r.id
   AND p.key = 'scan_key' AND p.value = ? JOIN metrics m ON m.run_id = r.id AND m.name = 'score'
 WHERE r.status = 'ok' ORDER BY r.id, m.step;
