# tests/cli/layer_scan_agent.sh: experiments/layer_scan/layer_scan.lua --task=agent end to end at a toy size
# (*Is One Layer Enough?* Figure 5 in miniature): a 2-block random policy on 5x5 Sokoban, one
# batch of episodes per job, with GiGPO (the task's default algorithm) and with GRPO on episodes.
# What a random policy plays decides the scores, so the checks are structural and identities in
# the store: the jobs ran ok as children of the scan, each training one batch of the scan's
# prompts x group episodes (its rows = the episodes' steps) with GiGPO's omega or 0, S = a share
# of the held-out episodes (seeds 1..3, one sampled episode each), and C_l logged for each
# block exactly when |S_full - S_base| reaches --min_gap. Refusals of the agent task's inputs.
root=$(realpath "$(dirname "$0")/../..")
source "$(dirname "$0")/common.bash"
command -v sqlite3 >/dev/null || { echo "sqlite3 missing"; exit 77; }
export LTRUN_MODELS=$SCRATCH/models

"$LTRUN" -e 'local f = assert(io.open("c.txt", "w"))
  for i = 1, 50 do f:write("#####\n#P.B#\n#..T#\nAction: ", ({ "up", "down", "left", "right" })[i % 4 + 1], "\n%\n") end
  f:close()
  lt.model.new{ out = "agent", layers = 2, hidden = 32, heads = 2, kv_heads = 1, vocab = 300, seed = 3, corpus = { "c.txt" } }' \
  >/dev/null 2>&1
refuse() {  # refuse DESCRIPTION EXPECTED ARGS...: the scan fails naming the input and runs no job
  local what=$1 want=$2; shift 2
  "$LTRUN" "$root/experiments/layer_scan/layer_scan.lua" --task=agent --model=agent "$@" >/dev/null 2>err.txt
  check "$what: fails" test $? -ne 0
  check "$what: says why" contains "$(cat err.txt)" "$want"
}
refuse "training and scoring in two environments" "--data=household --bench=sokoban: expected the same environment" \
  --bench=sokoban --data=household
refuse "training data that is no environment" "--data=math: the agent task trains and scores in one environment" --data=math
refuse "--algo=causal_lm" "--task=agent --algo=causal_lm: the agent task trains with gigpo or grpo only" --algo=causal_lm
check "no job ran" equals "$(sql1 "select count(*) from runs where name in ('base','full') or name glob 'layer_[0-9]*'")" "0"

common=(--task=agent --model=agent --steps=1 --prompts=2 --group_size=2 --bench_limit=3 --score_samples=1 --workers=2)
out=$("$LTRUN" "$root/experiments/layer_scan/layer_scan.lua" "${common[@]}" --min_gap=0.3 2>err.txt); rc=$?
check "GiGPO scan exits 0" equals "$rc" "0"
[ "$rc" = 0 ] || { cat err.txt >&2; echo "$out" >&2; }
out2=$("$LTRUN" "$root/experiments/layer_scan/layer_scan.lua" "${common[@]}" --algo=grpo --layers=1 --min_gap=0 2>err2.txt); rc=$?
check "GRPO scan exits 0" equals "$rc" "0"
[ "$rc" = 0 ] || { cat err2.txt >&2; echo "$out2" >&2; }
g=$(sql1 "select min(id) from runs where name='layer_scan' and status='ok'")
r=$(sql1 "select max(id) from runs where name='layer_scan' and status='ok'")
check "the scans log task and algorithm (gigpo: the task's default)" equals "$(sql1 "
  select group_concat(run_id || ':' || key || '=' || value, ' ') from (select run_id, key, value from params
   where run_id in ($g, $r) and key in ('task','algo','bench','data') order by run_id, key)")" \
  "$g:algo=gigpo $g:bench=sokoban $g:data=sokoban $g:task=agent $r:algo=grpo $r:bench=sokoban $r:data=sokoban $r:task=agent"
check "the jobs ran ok, children of their scan" equals "$(sql1 "select group_concat(parent_id || ':' || name, ' ') from
  (select parent_id, name from runs where parent_id in ($g, $r) and status='ok' order by parent_id, name)")" \
  "$g:base $g:full $g:layer_0 $g:layer_1 $r:base $r:full $r:layer_1"
check "each training: one batch of 2 seeds x 2 episodes, a row per step, omega 1 (GiGPO) or 0 (GRPO)" equals "$(sql1 "
  select group_concat(parent_id || ':' || name || ':' || om, ' ') from (select r.parent_id, r.name, p.value om from runs r
    join params p on p.run_id=r.id and p.key='agent_omega'
   where r.parent_id in ($g, $r) and r.name <> 'base' and
     (select count(*) from metrics m where m.run_id=r.id and m.name='rows')=1 and
     (select value from metrics m where m.run_id=r.id and m.name='rows') =
       4 * (select value from metrics m where m.run_id=r.id and m.name='turns')
   order by r.parent_id, r.name)")" "$g:full:1 $g:layer_0:1 $g:layer_1:1 $r:full:0 $r:layer_1:0"
check "S = a share of the 3 held-out episodes, logged as score/sokoban, in every job" equals "$(sql1 "
  select count(*) from runs r where r.parent_id in ($g, $r) and
    (select value * 3 from metrics where run_id=r.id and name='score') in (0, 1, 2, 3) and
    (select value from metrics where run_id=r.id and name='score') = (select value from metrics where run_id=r.id and name='score/sokoban')")" "7"
check "a block trained alone leaves the other block unchanged" equals "$(sql1 "
  select count(*) from layer_metrics lm join runs r on r.id=lm.run_id
   where r.parent_id in ($g, $r) and lm.name='weight_change' and r.name glob 'layer_[0-9]*' and
     lm.layer <> cast(substr(r.name,7) as int) and lm.value <> 0")" "0"
s() { sql1 "select value from metrics m join runs r on r.id=m.run_id where r.parent_id=$1 and r.name='$2' and m.name='score'"; }
for x in "$g 0.3 2" "$r 0 1"; do
  set -- $x
  scan=$1 gap=$2 n=$3
  if [ "$(sql1 "select abs($(s $scan full) - $(s $scan base)) >= $gap and $(s $scan full) <> $(s $scan base)")" = 1 ]; then
    check "scan $scan: C_l logged per block, = (S_l - S_base)/(S_full - S_base)" equals "$(sql1 "
      select count(*) from layer_metrics lm where lm.run_id=$scan and lm.name='contribution' and lm.grp='' and
        abs(lm.value - ((select value from metrics m join runs r on r.id=m.run_id where r.parent_id=$scan
                          and r.name='layer_'||lm.layer and m.name='score') - $(s $scan base)) / ($(s $scan full) - $(s $scan base))) < 1e-12")" "$n"
  else
    check "scan $scan: |S_full - S_base| below --min_gap: C undefined, none logged" equals "$(sql1 "
      select count(*) from layer_metrics where run_id=$scan and name='contribution'")|$(sql1 "
      select substr(value, 1, 9) from params where run_id=$scan and key='contribution'")" "0|undefined"
  fi
  check "scan $scan: S_l logged per block" equals "$(sql1 "select count(*) from layer_metrics where run_id=$scan and name='score'")" "$n"
done
# --lr_sweep (A.2): the full job at each rate, scored as S; the best reported S is the scan's --lr
out=$("$LTRUN" --seed 7 "$root/experiments/layer_scan/layer_scan.lua" "${common[@]}" --layers=0 --min_gap=0 --lr_sweep=1e-4,1e-3 2>err5.txt); rc=$?
check "agent lr sweep exits 0" equals "$rc" "0"
[ "$rc" = 0 ] || { cat err5.txt >&2; echo "$out" >&2; }
sw=$(sql1 "select max(id) from runs where name='layer_scan'")
best=$(sql1 "select cast(p.value as real) from runs r join metrics m on m.run_id=r.id and m.name='score'
               join params p on p.run_id=r.id and p.key='job_lr'
              where r.parent_id=$sw and r.name like 'sweep_%' order by m.value desc, r.name limit 1")
check "agent sweep: two rates scored, the best chosen" equals "$(sql1 "
  select count(*) from runs where parent_id=$sw and name like 'sweep_%' and status='ok'")|$(sql1 "
  select cast(value as real) from params where run_id=$sw and key='lr_chosen'")" "2|$best"
# the household environment (the ALFWorld stand-in): a scan of one block on it
out=$("$LTRUN" "$root/experiments/layer_scan/layer_scan.lua" "${common[@]}" --data=household --bench=household --layers=0 --min_gap=0 \
  2>err6.txt); rc=$?
check "household scan exits 0" equals "$rc" "0"
[ "$rc" = 0 ] || { cat err6.txt >&2; echo "$out" >&2; }
hh=$(sql1 "select max(id) from runs where name='layer_scan'")
check "household: S logged as score/household in base, full and layer_0" equals "$(sql1 "
  select count(*) from runs r join metrics m on m.run_id=r.id and m.name='score/household'
   where r.parent_id=$hh and r.status='ok'")" "3"
finish
