-- metrics: per run and metric name, the number of points and the first, last, min and max value.
SELECT m.run_id, r.name AS run, m.name, count(*) AS points,
       (SELECT value FROM metrics f WHERE f.run_id = m.run_id AND f.name = m.name ORDER BY step LIMIT 1) AS first,
       (SELECT value FROM metrics l WHERE l.run_id = m.run_id AND l.name = m.name ORDER BY step DESC LIMIT 1) AS last,
       min(m.value) AS min, max(m.value) AS max
FROM metrics m JOIN runs r ON r.id = m.run_id
GROUP BY m.run_id, m.name ORDER BY m.run_id DESC, m.name;
