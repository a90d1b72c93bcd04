# tests/cli/code_rl.sh: experiments/code_rl/code_rl.lua at a toy size on a tiny random stand-in for
# the embedded tiny-code model (LTRUN_MODELS) with tasks of the tiny_code recipe: it finishes,
# prints before -> after, logs its metrics (held-out pass@1 / pass@k, the paired comparisons,
# GRPO's steps); the same seed repeats every metric and another seed changes the rollouts.
# Where the sandbox is missing the study refuses before it makes or loads anything (checked
# here with lt.sandbox.available replaced); this script skips (exit 77) on such a machine.
root=$(realpath "$(dirname "$0")/../..")
source "$(dirname "$0")/common.bash"
command -v sqlite3 >/dev/null || { echo "sqlite3 missing"; exit 77; }
export LTRUN_MODELS=$SCRATCH/models

# the refusal first: it needs no sandbox
"$LTRUN" -e 'require "lt.study"
  lt.sandbox.available = function() return false, "test: namespaces are off" end
  require("experiments.code_rl.code_rl").run{ iterations = 1 }' >/dev/null 2>err.txt
check "no sandbox: the study fails" test $? -ne 0
check "... saying why" contains "$(cat err.txt)" "code_rl: no sandbox on this machine, refusing to run model code: test: namespaces are off"
check "... before it makes the model" test ! -e models/tiny-code

why=$("$LTRUN" -e 'local ok, why = lt.sandbox.available(); print(ok and "ok" or why)' 2>&1)
if [ "$why" != ok ]; then
  echo "SKIP: no sandbox on this machine: $why" >&2
  exit 77
fi

mkdir -p models
"$LTRUN" model new --layers 1 --hidden 32 --heads 2 --kv-heads 1 --vocab 300 models/tiny-code >/dev/null 2>&1
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
  write("models/tiny-code/train.jsonl", 1, 40); write("models/tiny-code/test.jsonl", 200, 203)' >/dev/null
args=(--iterations=2 --prompts=2 --group_size=2 --samples=2 --k=2 --max_response=6 --micro_batch=4)

"$LTRUN" "$root/experiments/code_rl/code_rl.lua" "${args[@]/--k=2/--k=3}" >/dev/null 2>err.txt
check "--k above --samples is an error" contains "$(cat err.txt)" "code_rl: --k=3 is more than --samples=2"

dump() {  # every metric of run $1 (timings left out)
  sqlite3 runs.db "select name, step, printf('%.17g', value) from metrics where run_id = $1
     and name not like '%wall%' and name not like '%per_s%' and name not like '%\_s' escape '\' order by 1, 2, 3"
}
ids=()
for seed in 11 11 12; do
  "$LTRUN" --seed "$seed" "$root/experiments/code_rl/code_rl.lua" "${args[@]}" >"out.$seed" 2>"err.$seed"
  rc=$?
  check "code_rl --seed $seed exits 0" equals "$rc" "0"
  [ "$rc" = 0 ] || tail -20 "err.$seed" >&2
  ids+=("$(sql1 "select max(id) from runs where name = 'code_rl'")")
done
out=$(cat out.11)
check "prints the greedy comparison" contains "$out" "code_rl: pass@1 greedy:  "
check "prints the sampled comparison" contains "$out" "code_rl: pass@1 sampled: "
check "prints pass@k" contains "$out" "code_rl: pass@2:         "
check "2 GRPO steps on 40 tasks, 4 held out" contains "$out" "code_rl: 2 GRPO steps in"
check "... on 40 tasks; held-out: 4 tasks, 2 samples" contains "$out" "on 40 tasks; held-out: 4 tasks, 2 samples each"
for metric in base_greedy/code/acc base_sampled/code/avg_at_k base_sampled/code/pass@2 final_greedy/code/acc \
              final_sampled/code/pass@2 greedy/items_up greedy/sign_test_p sampled/items_down sampled/sign_test_p loss; do
  check "metric $metric logged" test -n "$(sql1 "select value from metrics where run_id = ${ids[0]} and name = '$metric'")"
done
check "GRPO logged its two steps" equals "$(sql1 "select count(*) from metrics where run_id = ${ids[0]} and name = 'loss'")" "2"
check "the run is ok" equals "$(sql1 "select status from runs where id = ${ids[0]}")" "ok"
a=$(dump "${ids[0]}"); b=$(dump "${ids[1]}"); c=$(dump "${ids[2]}")
check "the same seed repeats every metric" equals "$b" "$a"
check "another seed changes them" test "$a" != "$c"
finish
