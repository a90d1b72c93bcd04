# tests/cli/layer_scan_code.sh: experiments/layer_scan/layer_scan.lua --task=code end to end at a toy size
# (a 2-block random policy with tasks of the tiny_code recipe, one GRPO step per job), and the
# combinations of --task and --algo the scan refuses. What a random policy writes decides the
# scores, so the checks are structural and identities in the store: the 4 jobs ran ok as
# children of the scan with the code reward (GRPO metrics, no math reward), every S is the
# pass@1 code.score logged in the same job (sampled avg@k; the greedy one beside it, as
# code_rl.lua scores), and C_l is logged for each block exactly when |S_full - S_base| reaches
# --min_gap, equal to (S_l - S_base)/(S_full - S_base) from the stored scores.
# Skips (77) where the sandbox is missing; the refusals are checked before that.
root=$(realpath "$(dirname "$0")/../..")
source "$(dirname "$0")/common.bash"
command -v sqlite3 >/dev/null || { echo "sqlite3 missing"; exit 77; }
export LTRUN_MODELS=$SCRATCH/models  # an embedded default made by mistake would land here

refuse() {  # refuse DESCRIPTION EXPECTED ARGS...: the scan fails naming the input, makes no model, runs no job
  local what=$1 want=$2; shift 2
  "$LTRUN" "$root/experiments/layer_scan/layer_scan.lua" "$@" >/dev/null 2>err.txt
  check "$what: fails" test $? -ne 0
  check "$what: says why" contains "$(cat err.txt)" "$want"
}
refuse "--task=code --algo=causal_lm" "--task=code --algo=causal_lm: the code task trains with grpo or dr_grpo only" \
  --task=code --algo=causal_lm
refuse "--task=agent --algo=dr_grpo" "--task=agent --algo=dr_grpo: the agent task trains with gigpo or grpo only" \
  --task=agent --algo=dr_grpo
refuse "--task=math --algo=gigpo" "--task=math --algo=gigpo: the math task trains with grpo or dr_grpo only" \
  --task=math --algo=gigpo
refuse "--task=antonyms --algo=grpo" "--task=antonyms --algo=grpo: the antonyms task trains with causal_lm only" \
  --task=antonyms --algo=grpo
refuse "an unknown task" "--task=vision: 'vision' is not one of" --task=vision
check "no model was made for a refused scan" test ! -e models
check "no job ran" equals "$(sql1 "select count(*) from runs where name in ('base','full') or name glob 'layer_[0-9]*'")" "0"

why=$("$LTRUN" -e 'local ok, why = lt.sandbox.available(); print(ok and "ok" or why)' 2>&1)
if [ "$why" != ok ]; then echo "SKIP: no sandbox on this machine: $why" >&2; finish; exit 77; fi

"$LTRUN" model new --layers 2 --hidden 32 --heads 2 --kv-heads 1 --vocab 300 code >/dev/null 2>&1
"$LTRUN" -e 'local tasks = require("lt.models.tiny_code").tasks()
  local function write(path, from, to)
    local f = assert(io.open(path, "w"))
    for i = from, to do
      local t = tasks[i]
      f:write(lt.json.encode{ task_id = t.task_id, prompt = t.prompt, canonical_solution = t.canonical_solution,
                              test = t.test, entry_point = t.entry_point }, "\n")
    end
    f:close()
  end
  write("code/train.jsonl", 1, 40); write("code/test.jsonl", 200, 203); write("dup.jsonl", 200, 203)' >/dev/null
refuse "a math benchmark in a code scan" "--bench=math_heldout: 'math_heldout' is not a code benchmark" \
  --task=code --model=code --bench=math_heldout
refuse "training tasks that are all held-out ones" "--data=dup.jsonl: every task's prompt is a held-out one" \
  --task=code --model=code --data=dup.jsonl

opts=(--task=code --model=code --steps=1 --prompts=2 --group_size=2 --max_response=6 --score_samples=2
      --micro_batch=4 --workers=2 --min_gap=0.2)
out=$("$LTRUN" "$root/experiments/layer_scan/layer_scan.lua" "${opts[@]}" 2>err.txt); rc=$?
check "code scan exits 0" equals "$rc" "0"
[ "$rc" = 0 ] || { cat err.txt >&2; echo "$out" >&2; }
scan=$(sql1 "select max(id) from runs where name='layer_scan'")
check "the scan logs its task, algorithm (the task's default), data and benchmark" equals "$(sql1 "
  select group_concat(key || '=' || value, ' ') from (select key, value from params where run_id=$scan
   and key in ('task','algo','data','bench','bench_limit') order by key)")" \
  "algo=grpo bench=code_heldout bench_limit=100 data=code task=code"
check "4 jobs ran ok, children of the scan" equals "$(sql1 "select group_concat(name, ' ') from (select name from runs
  where parent_id=$scan and status='ok' order by name)")" "base full layer_0 layer_1"
check "the 3 trainings ran one GRPO step each on the 40 code tasks with the code reward" equals "$(sql1 "
  select count(*) from runs r where r.parent_id=$scan and r.name in ('full','layer_0','layer_1') and
    (select count(*) from metrics m where m.run_id=r.id and m.name='reward_mean')=1 and
    exists (select 1 from params p where p.run_id=r.id and p.key='rl_prompts' and p.value='40') and
    exists (select 1 from metrics m where m.run_id=r.id and m.name like 'reward/code%') and
    not exists (select 1 from metrics m where m.run_id=r.id and m.name like 'reward/math%')")" "3"
check "S = sampled pass@1 of code.score on the 4 held-out tasks, greedy pass@1 beside it, in every job" equals "$(sql1 "
  select count(*) from runs r where r.parent_id=$scan and
    (select value from metrics where run_id=r.id and name='score') =
      (select value from metrics where run_id=r.id and name='code_heldout_sampled/code/avg_at_k') and
    (select value from metrics where run_id=r.id and name='score/code_heldout') =
      (select value from metrics where run_id=r.id and name='score') and
    (select value from metrics where run_id=r.id and name='score/code_heldout/greedy') =
      (select value from metrics where run_id=r.id and name='code_heldout_greedy/code/acc') and
    (select value * 8 from metrics where run_id=r.id and name='score') in (0,1,2,3,4,5,6,7,8)")" "4"
check "a block trained alone leaves the other block unchanged" equals "$(sql1 "
  select count(*) from layer_metrics lm join runs r on r.id=lm.run_id
   where r.parent_id=$scan and lm.name='weight_change' and r.name like 'layer_%' and
     lm.layer <> cast(substr(r.name,7) as int) and lm.value <> 0")" "0"
s() { sql1 "select value from metrics m join runs r on r.id=m.run_id where r.parent_id=$scan and r.name='$1' and m.name='score'"; }
defined=$(sql1 "select abs($(s full) - $(s base)) >= 0.2")
if [ "$defined" = 1 ]; then
  check "C_l logged for both blocks, = (S_l - S_base)/(S_full - S_base)" equals "$(sql1 "
    select count(*) from layer_metrics lm where lm.run_id=$scan and lm.name='contribution' and lm.grp='' and
      abs(lm.value - ((select value from metrics m join runs r on r.id=m.run_id where r.parent_id=$scan
                        and r.name='layer_'||lm.layer and m.name='score') - $(s base)) / ($(s full) - $(s base))) < 1e-12")" "2"
  check "the ranking is logged" equals "$(sql1 "select count(*) from params where run_id=$scan and key='ranking'")" "1"
else
  check "|S_full - S_base| below --min_gap: no C, said why" contains "$out" "is undefined"
  check "... and no contribution logged" equals "$(sql1 "select count(*) from layer_metrics where run_id=$scan and name='contribution'")" "0"
  check "... the param says so" contains "$(sql1 "select value from params where run_id=$scan and key='contribution'")" "undefined"
fi
check "S_l logged per block" equals "$(sql1 "select count(*) from layer_metrics where run_id=$scan and name='score'")" "2"
# --lr_sweep (A.2): the full job at each rate, scored as S; the best reported S is the scan's --lr
out=$("$LTRUN" --seed 7 "$root/experiments/layer_scan/layer_scan.lua" "${opts[@]/--min_gap=0.2/--min_gap=0}" --layers=0 --lr_sweep=1e-4,1e-3 2>err5.txt); rc=$?
check "code lr sweep exits 0" equals "$rc" "0"
[ "$rc" = 0 ] || { cat err5.txt >&2; echo "$out" >&2; }
sw=$(sql1 "select max(id) from runs where name='layer_scan'")
best=$(sql1 "select cast(p.value as real) from runs r join metrics m on m.run_id=r.id and m.name='score'
               join params p on p.run_id=r.id and p.key='job_lr'
              where r.parent_id=$sw and r.name like 'sweep_%' order by m.value desc, r.name limit 1")
check "code sweep: two rates scored, the best chosen" equals "$(sql1 "
  select count(*) from runs where parent_id=$sw and name like 'sweep_%' and status='ok'")|$(sql1 "
  select cast(value as real) from params where run_id=$sw and key='lr_chosen'")" "2|$best"
finish
