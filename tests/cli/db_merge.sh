# tests/cli/db_merge.sh: `ltrun db merge` on two stores written by two processes at once
# (overlapping run ids 1..3 in each): ids remapped, parent/rerun links, params, metrics,
# layer metrics, eval items and artifacts follow; a store merged twice adds nothing; errors.
source "$(dirname "$0")/common.bash"

cat > shard.lua <<'L'
local exp = require "lt.experiment"
local cfg = exp.args{ shard = "x" }
lt.run.log("loss", 1.5)
lt.run.child("layer_" .. cfg.shard, function()
  lt.run.log("score", cfg.shard == "a" and 0.25 or 0.75)
  lt.run.log_layers("contribution", { 0.1, 0.2 })
  lt.run.child("grandchild", function() lt.run.param("depth", 2) end)
end)
local f = io.open("art_" .. cfg.shard .. ".txt", "w"); f:write(cfg.shard); f:close()
lt.run.artifact("art_" .. cfg.shard .. ".txt")
L
"$LTRUN" --db a.db shard.lua --shard=a >/dev/null 2>a.err & pa=$!
"$LTRUN" --db b.db shard.lua --shard=b >/dev/null 2>b.err & pb=$!
wait $pa; wait $pb
"$LTRUN" --db b.db rerun 1 --yes >/dev/null 2>rerun.err  # run 4 in b.db: rerun_of 1
check "shards ran" equals "$(cat a.err b.err)" ""
check "overlapping ids" equals "$(sqlite3 a.db 'select group_concat(id) from runs')|$(sqlite3 b.db 'select group_concat(id) from runs where id<4')" "1,2,3|1,2,3"

out=$("$LTRUN" db merge all.db a.db b.db 2>&1); rc=$?
check "merge exits 0" equals "$rc" "0"
check "merge reports b's runs with new ids" contains "$out" "b.db: 6 of 6 runs added as runs 4..9"
q() { sqlite3 all.db "$1"; }
check "7 + 2 runs" equals "$(q 'select count(*) from runs')" "9"
check "uuids kept" equals "$(q 'select count(distinct uuid) from runs')" "9"
check "parents follow the new ids (b's run and its rerun)" equals \
  "$(q "select group_concat(c.id||'<'||p.id||':'||(select value from params where run_id=p.id and key='shard')) from runs c join runs p on p.id=c.parent_id where c.name='layer_b'")" "5<4:b,8<7:b"
check "grandchildren under b's children" equals \
  "$(q "select group_concat(g.id||'<'||c.id) from runs g join runs c on c.id=g.parent_id where g.name='grandchild' and c.name='layer_b'")" "6<5,9<8"
check "rerun link follows" equals \
  "$(q "select r.id||'->'||o.id from runs r join runs o on o.id=r.rerun_of")" "7->4"
check "metrics per run" equals "$(q "select group_concat(x, ' ') from (select r.name||'='||m.value as x from metrics m join runs r on r.id=m.run_id where m.name='score' order by r.id)")" "layer_a=0.25 layer_b=0.75 layer_b=0.75"
check "layer metrics copied" equals "$(q "select count(*) from layer_metrics")" "6"
check "artifacts copied" equals "$(q "select count(*) from artifacts a join runs r on r.id=a.run_id where a.path like '%art_b.txt' and r.name='shard'")" "2"
check "params copied" equals "$(q "select count(*) from params where key='depth'")" "3"
check "merged store opens" contains "$("$LTRUN" --db all.db runs 2>&1)" "layer_b"

out=$("$LTRUN" db merge all.db b.db 2>&1)
check "merged twice: detected" contains "$out" "none of 6 runs added, 6 already in all.db"
check "merged twice: nothing duplicated" equals "$(q 'select count(*) from runs')|$(q 'select count(*) from metrics')" "9|6"

# a later run in b.db: only it is added; the ids it links to are the merged ones
"$LTRUN" --db b.db -e 'lt.run.log("late", 1)' >/dev/null 2>&1
out=$("$LTRUN" db merge all.db b.db 2>&1)
check "only the new run is added" contains "$out" "1 of 7 runs added as runs 10..10"

out=$("$LTRUN" db merge all.db all.db 2>&1); rc=$?
check "OUT as input is an error" equals "$rc|$(contains "$out" "is the output store" && echo y)" "2|y"
out=$("$LTRUN" db merge all.db nope.db 2>&1); rc=$?
check "missing input named" equals "$rc|$(contains "$out" "nope.db does not exist" && echo y)" "2|y"
echo "not a db" > junk.db
out=$("$LTRUN" db merge all.db junk.db 2>&1); rc=$?
check "not a store is an error naming it" equals "$rc|$(contains "$out" "junk.db" && echo y)" "2|y"
check "failed merges left all.db as it was" equals "$(q 'select count(*) from runs')" "10"
out=$("$LTRUN" db merge 2>&1); rc=$?
check "usage without arguments" equals "$rc|$(contains "$out" "db merge OUT.db" && echo y)" "2|y"
finish
