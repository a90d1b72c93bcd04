-- status: how many runs ended in each state.
SELECT status, count(*) AS runs FROM runs GROUP BY status ORDER BY runs DESC;
