# tests/cli/layer_scan_grpo.sh: experiments/layer_scan/layer_scan.lua with --algo=grpo end to end, in
# seconds: a 2-block math model made by experiments/pretrain_math/pretrain_math.lua at a toy size, then the
# scan's 4 jobs (base, full, layer_0, layer_1) trained by lt.rl.grpo in worker processes.
# Checked against the store, independently of the script's arithmetic: every training ran
# GRPO (its metrics, param algo), S = the share of correct sampled held-out eval_items (avg@k;
# the greedy score beside it = the share of correct greedy ones), a block trained
# alone leaves every other block unchanged, C_l from the stored scores, and the full model's
# self-consistency = the majority of its k sampled answers per item, recomputed in SQL.
root=$(realpath "$(dirname "$0")/../..")
source "$(dirname "$0")/common.bash"
command -v sqlite3 >/dev/null || { echo "sqlite3 missing"; exit 77; }

"$LTRUN" "$root/experiments/pretrain_math/pretrain_math.lua" --out=models/math --layers=2 --hidden=64 --heads=2 --kv_heads=1 \
  --vocab=300 --steps=150 --docs=2000 --rl_prompts=40 --test=12 --eval_every=0 --micro_batch=8 >pre.out 2>pre.err
check "pretrain_math at a toy size" equals "$?" "0"
check "it writes the prompt sets" equals "$(cat models/math/train.jsonl | wc -l),$(cat models/math/test.jsonl | wc -l)" "40,12"
# a toy model this small answers a few numbers whatever the question: half of the held-out
# answers are set to the commonest of them, so that scores and votes are not all 0
common=$("$LTRUN" -e '
  local m = lt.model.load("models/math")
  local items = lt.rl.prompts("models/math/test.jsonl")
  local ps = {}
  for i, it in ipairs(items) do ps[i] = lt.rl.format_prompt(it.question, "Question: {question}\nAnswer:") end
  local g = lt.rl.rollout(m, ps, { group_size = 4, max_response = 20, temperature = 1, seed = 1 })
  local n, best = {}, nil
  for _, t in ipairs(g.texts) do
    local a = lt.eval.extract_math(t)
    if a and a ~= "" then n[a] = (n[a] or 0) + 1; if not best or n[a] > n[best] then best = a end end
  end
  print(best or "0")' 2>/dev/null | tail -1)
awk -v a="$common" 'NR % 2 == 1 { sub(/#### [0-9]+/, "#### " a) } { print }' models/math/test.jsonl >t.jsonl && mv t.jsonl models/math/test.jsonl

k=5
opts=(--algo=grpo --model=models/math --layers=0,1 --steps=2 --prompts=2 --group_size=4 --max_response=20
      --bench_limit=12 --sc=$k --sc_temperature=1 --score_samples=3 --workers=2 --min_gap=0
      --preset=qwen3-grpo --epochs=2)
out=$("$LTRUN" --seed 3 "$root/experiments/layer_scan/layer_scan.lua" "${opts[@]}" 2>err.txt); rc=$?
check "GRPO scan exits 0" equals "$rc" "0"
[ "$rc" = 0 ] || { cat err.txt >&2; echo "$out" >&2; }
check "4 job runs, ok, children of the scan" equals \
  "$(sql1 "select count(*) from runs c join runs s on s.id=c.parent_id where s.name='layer_scan' and c.status='ok' and c.name in ('base','full','layer_0','layer_1')")" "4"
# the paper's GRPO reaches every job: --preset=qwen3-grpo (Table 8: mini_batches 4, kl 0.001; agg
# paper) and --epochs=2 over it make 2 batches x 2 epochs x 4 mini-batches = 16 optimizer
# steps, each logging the PPO clip fraction; the scan logs what `paper` and -1 resolved to
check "paper preset and --epochs reach the jobs: 16 optimizer steps each" equals "$(sql1 "
  select count(*) from runs r join params p on p.run_id=r.id and p.key='epochs' and p.value='2'
    join params q on q.run_id=r.id and q.key='mini_batches' and q.value='4'
   where r.name in ('full','layer_0','layer_1') and
     (select count(*) from metrics m where m.run_id=r.id and m.name='clip_frac')=16")" "3"
check "the scan logs the resolved GRPO settings" equals "$(sql1 "
  select group_concat(key || '=' || value, ' ') from (select key, value from params p join runs r on r.id=p.run_id
   where r.name='layer_scan' and key in ('grpo_agg','grpo_kl','preset') order by key)")" \
  "grpo_agg=seq-mean-token-mean grpo_kl=0.001 preset=qwen3-grpo"
check "the preset is printed with its sources, the replaced values named" contains "$out" \
  "  --epochs=4  (Table 8: Epochs 4 (read as PPO epochs over each batch)) — replaced by the given --epochs=2"
check "the 3 trainings ran GRPO, 2 steps each" equals "$(sql1 "
  select count(*) from runs r join params p on p.run_id=r.id and p.key='algo' and p.value='grpo'
   where r.name in ('full','layer_0','layer_1') and
     (select count(*) from metrics m where m.run_id=r.id and m.name='reward_mean')=2")" "3"
check "S = share of correct sampled held-out answers (avg@3), per job" equals "$(sql1 "
  select count(*) from runs r join metrics m on m.run_id=r.id and m.name='score'
   where r.name in ('base','full','layer_0','layer_1') and
     abs(m.value - (select avg(correct) from eval_items e where e.run_id=r.id and e.bench='math_heldout_avg')) < 1e-9 and
     (select count(*) from eval_items e where e.run_id=r.id and e.bench='math_heldout_avg')=36")" "4"
check "the greedy score = share of correct greedy answers, per job" equals "$(sql1 "
  select count(*) from runs r join metrics m on m.run_id=r.id and m.name='score/math_heldout/greedy'
   where r.name in ('base','full','layer_0','layer_1') and
     abs(m.value - (select avg(correct) from eval_items e where e.run_id=r.id and e.bench='math_heldout')) < 1e-9 and
     (select count(*) from eval_items e where e.run_id=r.id and e.bench='math_heldout')=12")" "4"
check "a block trained alone leaves the other blocks unchanged" equals "$(sql1 "
  select count(*) from layer_metrics lm join runs r on r.id=lm.run_id
   where lm.name='weight_change' and r.name like 'layer_%' and lm.layer <> cast(substr(r.name,7) as int) and lm.value <> 0")" "0"
# The trained block moves when some group's rewards differed (a nonzero advantage); with the
# math reward on a toy model that depends on what is sampled (all-wrong groups are flat), so
# the check is the implication, per job: a step with flat_group_frac < 1 -> the block changed
check "a job with a group of differing rewards changed its trained block" equals "$(sql1 "
  select count(*) from runs r
   where r.name like 'layer_%' and
     (select min(value) from metrics m where m.run_id=r.id and m.name='flat_group_frac') < 1 and
     not exists (select 1 from layer_metrics lm where lm.run_id=r.id and lm.name='weight_change' and
                 lm.layer = cast(substr(r.name,7) as int) and lm.value > 0)")" "0"
check "each layer job logged flat_group_frac" equals "$(sql1 "
  select count(distinct r.id) from runs r join metrics m on m.run_id=r.id and m.name='flat_group_frac'
   where r.name like 'layer_%'")" "2"

gap=$(sql1 "select (select m.value from runs r join metrics m on m.run_id=r.id and m.name='score' where r.name='full')
              - (select m.value from runs r join metrics m on m.run_id=r.id and m.name='score' where r.name='base') as gap")
if [ "$(sql1 "select abs($gap) > 0 as moved")" = 1 ]; then
  check "contributions = (S_l - S_base)/(S_full - S_base)" equals "$(sql1 "
    with sc as (select r.name, m.value v from runs r join metrics m on m.run_id=r.id and m.name='score'),
         b as (select v from sc where name='base'), f as (select v from sc where name='full')
    select count(*) from layer_metrics lm join sc on sc.name='layer_'||lm.layer
     where lm.name='contribution' and lm.grp='' and
       abs(lm.value - (sc.v-(select v from b))/((select v from f)-(select v from b))) < 1e-9")" "2"
  check "Figure 8 shows self-consistency" contains "$out" "self-consistency (full, k=$k)"
  check "figures recorded" equals "$(sqlite3 runs.db "select group_concat(kind) from (select kind from artifacts where kind like 'figure%' order by kind)")" "figure2,figure8,figure9"
else
  check "S_full = S_base: C reported undefined" contains "$out" "is undefined"
fi

# self-consistency: k samples per item in one call, the majority answer (ties: the earliest
# sample among the tied answers; empty answers abstain) against the item's answer
check "k samples per item" equals "$(sql1 "select count(*) from eval_items e join runs r on r.id=e.run_id
  where r.name='full' and e.bench='math_heldout_sc'")" "$((12 * k))"
check "self-consistency = majority vote of the samples" equals "$(sql1 "
  with s as (select item_id, prediction p, answer,
                    case when instr(item_id,'#') > 0 then substr(item_id, 1, instr(item_id,'#') - 1) else item_id end id,
                    case when instr(item_id,'#') > 0 then cast(substr(item_id, instr(item_id,'#') + 1) as int) else 0 end k
               from eval_items e join runs r on r.id=e.run_id where r.name='full' and e.bench='math_heldout_sc'),
       c as (select id, p, count(*) n, min(k) first from s where p <> '' group by id, p),
       w as (select id, p, row_number() over (partition by id order by n desc, first) rk from c),
       v as (select a.id, (select p from w where w.id=a.id and rk=1) p, a.answer
               from (select distinct id, answer from s) a)
  select round(abs((select avg(coalesce(p = answer, 0)) from v)
                   - (select m.value from runs r join metrics m on m.run_id=r.id and m.name='self_consistency'
                       where r.name='full')), 9) as diff")" "0"
# --lr_sweep (§3.1, A.2): the full job at each rate, each scored as S is (avg@3 on the benchmark);
# the best reported score chooses the scan's --lr, and every job trains on all the prompts
out=$("$LTRUN" --seed 3 "$root/experiments/layer_scan/layer_scan.lua" --algo=grpo --model=models/math --layers=0 --steps=2 --prompts=2 \
  --group_size=4 --max_response=20 --bench_limit=12 --sc=0 --score_samples=3 --workers=2 --min_gap=0 \
  --lr_sweep=1e-5,3e-3 2>err4.txt); rc=$?
check "lr sweep scan exits 0" equals "$rc" "0"
[ "$rc" = 0 ] || { cat err4.txt >&2; echo "$out" >&2; }
scan3=$(sql1 "select max(id) from runs where name='layer_scan'")
check "two sweep runs, each at its rate" equals "$(sql1 "
  select group_concat(v, ' ') from (select r.name || ':' || cast(p.value as real) v from runs r
    join params p on p.run_id=r.id and p.key='job_lr' where r.parent_id=$scan3 and r.name like 'sweep_%' order by r.name)")" \
  "sweep_1:1.0e-05 sweep_2:0.003"
check "each sweep run's score is S: avg@3 on the 12 benchmark items" equals "$(sql1 "
  select count(*) from runs r join metrics m on m.run_id=r.id and m.name='score'
   where r.parent_id=$scan3 and r.name like 'sweep_%' and
     (select count(*) from eval_items e where e.run_id=r.id and e.bench='math_heldout_avg')=36 and
     abs(m.value - (select avg(correct) from eval_items e where e.run_id=r.id and e.bench='math_heldout_avg')) < 1e-9")" "2"
chosen=$(sql1 "select r.name from runs r join metrics m on m.run_id=r.id and m.name='score'
                where r.parent_id=$scan3 and r.name like 'sweep_%' order by m.value desc, r.name limit 1")
want=$([ "$chosen" = sweep_1 ] && echo 1e-05 || echo 0.003)
check "the best rate is chosen and the jobs train at it" equals "$(sql1 "
  select cast(value as real) from params where run_id=$scan3 and key='lr_chosen'")|$(sql1 "
  select count(*) from runs r join params p on p.run_id=r.id and p.key='job_lr'
   where r.parent_id=$scan3 and r.name in ('full','layer_0') and cast(p.value as real)=$want")" \
  "$(sql1 "select cast($want as real)")|2"
check "every job trains on all 40 prompts (nothing held out)" equals "$(sql1 "
  select count(*) from runs r join params a on a.run_id=r.id and a.key='rl_prompts'
   where r.parent_id=$scan3 and r.name in ('full','layer_0','sweep_1','sweep_2') and cast(a.value as int) = 40")" "4"
check "--val_prompts is gone" contains "$("$LTRUN" "$root/experiments/layer_scan/layer_scan.lua" --val_prompts=8 2>&1)" "unknown arg --val_prompts"
finish
