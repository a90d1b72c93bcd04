# tests/cli/layer_scan_lr.sh: experiments/layer_lr/layer_lr.lua (A.7, Table 12) on a finished scan of a
# random 3-block model: the top and bottom block retrained alone at 3 x the scan's rate in worker
# processes with the scan's seed; Table 12 printed with each block's C at both rates, the higher
# rate's C = (S_l - S_base)/(S_full - S_base) on the scan's own S_base and S_full.
root=$(realpath "$(dirname "$0")/../..")
source "$(dirname "$0")/common.bash"
"$LTRUN" model new --layers 3 --hidden 32 --heads 2 --kv-heads 1 --vocab 400 m >/dev/null 2>&1
opts=(--algo=causal_lm --model=m --steps=8 --lr=0.01 --seq_len=32 --micro_batch=4 --bench_limit=24 --workers=2 --min_gap=0)
"$LTRUN" --seed 5 "$root/experiments/layer_scan/layer_scan.lua" "${opts[@]}" >scan.out 2>scan.err
check "the scan exits 0" equals "$?" "0"
scan=$(sql1 "select max(id) from runs where name='layer_scan'")
top=$(sql1 "select substr(value, 1, 1) from params where run_id=$scan and key='ranking'")
bottom=$(sql1 "select substr(value, -1, 1) from params where run_id=$scan and key='ranking'")

out=$("$LTRUN" --seed 9 "$root/experiments/layer_lr/layer_lr.lua" --k=1 --factor=3 --workers=2 2>err.txt); rc=$?
check "layer_lr exits 0" equals "$rc" "0"
[ "$rc" = 0 ] || { cat err.txt >&2; echo "$out" >&2; }
t12=$(sql1 "select max(id) from runs where name='layer_lr'")
check "the top and the bottom block, each alone at 3 x 0.01, with the scan's seed" equals "$(sql1 "
  select group_concat(v, ' ') from (select r.name || ':' || round(cast(p.value as real), 6) || ':' || (r.seed = s.seed) v
    from runs r join params p on p.run_id=r.id and p.key='job_lr' join runs s on s.id=$scan
   where r.parent_id=$t12 and r.status='ok' order by r.name)")" \
  "$(printf '%s\n' "layer_$top:0.03:1" "layer_$bottom:0.03:1" | sort | paste -sd' ')"
check "Table 12 printed, one row per block" contains "$out" "Table 12 (scan run $scan"
check "its rows" equals "$(grep -cE '^(top|bottom)-1 ' <<<"$out")" "2"
# C at the higher rate recomputed from the stored scores, on the scan's S_base and S_full
check "C at the higher rate = (S_l - S_base)/(S_full - S_base)" equals "$(sql1 "
  with b as (select m.value v from runs r join metrics m on m.run_id=r.id and m.name='score' where r.parent_id=$scan and r.name='base'),
       f as (select m.value v from runs r join metrics m on m.run_id=r.id and m.name='score' where r.parent_id=$scan and r.name='full')
  select count(*) from layer_metrics lm join runs r on r.parent_id=$t12 and r.name='layer_'||lm.layer
    join metrics m on m.run_id=r.id and m.name='score'
   where lm.run_id=$t12 and lm.name='contribution_boosted' and
     abs(lm.value - (m.value - (select v from b)) / ((select v from f) - (select v from b))) < 1e-9")" "2"
# the first column is the scan's own C of the block
c_top=$(sql1 "select printf('%.3f', value) from layer_metrics where run_id=$scan and name='contribution' and grp='' and layer=$top")
check "the scan's C at its own rate, beside it" contains "$(grep -E '^top-1 ' <<<"$out")" "$c_top"
finish
