# tests/cli/layer_scan.sh: experiments/layer_scan/layer_scan.lua end to end on a random 3-block model
# with 8 training steps per job: child runs base/full/layer_0..2 made by worker processes,
# contributions consistent with the jobs' scores, @layer_scan, the figures; a resumed scan
# runs nothing; two shards into two DBs, merged, then analysed, give the same scores.
root=$(realpath "$(dirname "$0")/../..")
source "$(dirname "$0")/common.bash"
"$LTRUN" model new --layers 3 --hidden 32 --heads 2 --kv-heads 1 --vocab 400 m >/dev/null 2>&1
opts=(--algo=causal_lm --model=m --steps=8 --lr=0.01 --seq_len=32 --micro_batch=4 --bench_limit=24 --workers=2 --min_gap=0)

out=$("$LTRUN" --seed 5 "$root/experiments/layer_scan/layer_scan.lua" "${opts[@]}" 2>err.txt); rc=$?
check "scan exits 0" equals "$rc" "0"
[ "$rc" = 0 ] || { cat err.txt >&2; echo "$out" >&2; }
check "5 job runs, ok, children of the scan" equals \
  "$(sql1 "select count(*) from runs c join runs s on s.id=c.parent_id where s.name='layer_scan' and c.status='ok' and c.name in ('base','full','layer_0','layer_1','layer_2')")" "5"
check "job runs came from other processes" equals \
  "$(sql1 "select count(distinct c.pid) > 1 from runs c join runs s on s.id=c.parent_id where s.name='layer_scan' and c.pid<>s.pid")" "1"
# C_l recomputed here from the stored scores (independent of the script's arithmetic)
check "contributions = (S_l - S_base)/(S_full - S_base)" equals "$(sql1 "
  with sc as (select r.name, m.value v from runs r join metrics m on m.run_id=r.id and m.name='score'),
       b as (select v from sc where name='base'), f as (select v from sc where name='full')
  select count(*) from layer_metrics lm join sc on sc.name='layer_'||lm.layer
   where lm.name='contribution' and lm.grp='' and
     abs(lm.value - (sc.v-(select v from b))/((select v from f)-(select v from b))) < 1e-9")" "3"
check "summary printed" contains "$out" "Table 7: best C"
table=$("$LTRUN" sql @layer_scan --csv)
check "@layer_scan: one row per block" equals "$(tail -n +2 <<<"$table" | wc -l)" "3"
check "@layer_scan columns" contains "$(head -1 <<<"$table")" "layer,s_l,contribution,rank,s_base,s_full,weight_change,run"
check "figures recorded" equals "$(sqlite3 runs.db "select group_concat(kind) from (select kind from artifacts order by kind)")" "figure2,figure8,figure9"
check "figure files exist" equals "$(ls m.layer_scan/figures/*.svg | wc -l)" "3"
check "weight change only in the trained block" equals "$(sql1 "
  select count(*) from layer_metrics lm join runs r on r.id=lm.run_id
   where lm.name='weight_change' and r.name like 'layer_%' and lm.layer <> cast(substr(r.name,7) as int) and lm.value <> 0")" "0"

out=$("$LTRUN" --seed 5 "$root/experiments/layer_scan/layer_scan.lua" "${opts[@]}" --resume=true 2>err2.txt); rc=$?  # the scan key holds the seed
check "resume exits 0" equals "$rc" "0"
check "resume skipped all 5" contains "$(cat err2.txt)" "5 job(s) already have an ok run"
check "resume ran no job" equals "$(sql1 "select count(*) from runs where name glob 'layer_[0-9]*'")" "3"

# two shards of a job array, each into its own DB, merged and analysed
for i in 0 1; do
  SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_TASK_COUNT=2 "$LTRUN" --db s$i.db --seed 5 "$root/experiments/layer_scan/layer_scan.lua" \
    "${opts[@]}" >s$i.out 2>s$i.err || { echo "shard $i failed" >&2; cat s$i.err >&2; }
done
check "shard 0 ran base, layer_0, layer_2" equals "$(sqlite3 s0.db "select group_concat(name) from (select name from runs where parent_id is not null order by name)")" "base,layer_0,layer_2"
check "shard 1 ran full, layer_1" equals "$(sqlite3 s1.db "select group_concat(name) from (select name from runs where parent_id is not null order by name)")" "full,layer_1"
check "a shard says what is missing" contains "$(cat s0.out)" "no ok run yet for full, layer_1"
"$LTRUN" db merge all.db s0.db s1.db >/dev/null
out=$("$LTRUN" --db all.db --seed 5 "$root/experiments/layer_scan/layer_scan.lua" "${opts[@]}" --analyze=true 2>&1); rc=$?
check "analysis of the merged store" equals "$rc" "0"
check "merged analysis has 3 contributions" equals "$(sqlite3 all.db "select count(*) from layer_metrics where name='contribution' and grp=''")" "3"
check "same scores as the single-store scan (same seed)" equals \
  "$(sqlite3 all.db "select group_concat(v) from (select round(m.value,6) v from runs r join metrics m on m.run_id=r.id and m.name='score' where r.name in ('base','full','layer_0','layer_1','layer_2') order by r.name)")" \
  "$(sqlite3 runs.db "select group_concat(v) from (select round(m.value,6) v from runs r join metrics m on m.run_id=r.id and m.name='score' where r.name in ('base','full','layer_0','layer_1','layer_2') order by r.name)")"

# --layer_lr: the blocks at their own learning rate; S_full is the full run of the first scan
# above (same settings and seed), not trained again, so C's normaliser stays that run
full=$(sql1 "select id from runs where name='full'")
out=$("$LTRUN" --seed 5 "$root/experiments/layer_scan/layer_scan.lua" "${opts[@]}" --layer_lr=0.003 2>err3.txt); rc=$?
check "--layer_lr scan exits 0" equals "$rc" "0"
[ "$rc" = 0 ] || cat err3.txt >&2
check "it reuses the full run" contains "$out" "S_full: run $full "
check "no second full run" equals "$(sql1 "select count(*) from runs where name='full'")" "1"
scan2=$(sql1 "select max(id) from runs where name='layer_scan'")
check "the blocks trained at --layer_lr, the base ran again" equals "$(sql1 "
  select count(*) from runs r join params p on p.run_id=r.id and p.key='job_lr' and cast(p.value as real)=0.003
   where r.parent_id=$scan2 and r.name glob 'layer_[0-9]*'")|$(sql1 "select count(*) from runs where parent_id=$scan2 and name='base'")" "3|1"
check "C_l = (S_l - S_base) / (S_full - S_base) with the reused S_full" equals "$(sql1 "
  with sc as (select r.name, m.value v from runs r join metrics m on m.run_id=r.id and m.name='score'
               where r.parent_id=$scan2 or r.id=$full)
  select count(*) from layer_metrics lm join sc on sc.name='layer_'||lm.layer
   where lm.run_id=$scan2 and lm.name='contribution' and lm.grp='' and
     abs(lm.value - (sc.v-(select v from sc where name='base'))/((select v from sc where name='full')-(select v from sc where name='base'))) < 1e-9")" "3"
finish
