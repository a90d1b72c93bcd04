# tests/cli/study_seeds.sh: every study in experiments/ runs twice with one --seed and once
# with another, at toy sizes on tiny random stand-ins for the embedded default models
# (LTRUN_MODELS: lt.models finds tiny-qwen3, tiny-nemotron and tiny-math there). The same
# seed gives the same metrics, every one of the run and its child runs (timings aside), to
# the last bit (one binary, one machine: nothing sampled differs); another seed gives another
# data order, checked on a logged statistic that depends on it: the first training loss (the
# first batch), or for layer_tracer the traced prompts' mean final P_t. layer_rank_corr draws
# nothing (it reads two scans' contributions from the store): only the repeat is checked.
# Also: --help lists every arg with its default and help, --no_such=1 and --steps=abc are
# errors naming the arg.
root=$(realpath "$(dirname "$0")/../..")
source "$(dirname "$0")/common.bash"
command -v sqlite3 >/dev/null || { echo "sqlite3 missing"; exit 77; }
export LTRUN_MODELS=$SCRATCH/models
mkdir -p models
"$LTRUN" model new --layers 2 --hidden 32 --heads 2 --kv-heads 1 --vocab 300 models/tiny-qwen3 >/dev/null 2>&1
head -c 20000 /usr/share/games/fortunes/fortunes >models/tiny-qwen3/heldout.txt 2>/dev/null ||
  printf 'An old-domain document.\n%%\n' >models/tiny-qwen3/heldout.txt
"$LTRUN" model new --arch nemotron_h --pattern 'M*' --hidden 32 --heads 2 --kv-heads 1 \
  --tokenizer models/tiny-qwen3/tokenizer.json models/tiny-nemotron >/dev/null 2>&1
"$LTRUN" model new --layers 2 --hidden 32 --heads 2 --kv-heads 1 --vocab 300 models/tiny-math >/dev/null 2>&1
for i in $(seq 1 40); do
  printf '{"question": "Tom has %d apples and gets %d more. How many apples?", "answer": "%d + %d = %d\\n#### %d"}\n' \
    "$i" $((i % 7)) "$i" $((i % 7)) $((i + i % 7)) $((i + i % 7))
done >models/tiny-math/train.jsonl
sed -n '1,6p' models/tiny-math/train.jsonl | sed 's/apples/pens/g' >models/tiny-math/test.jsonl
for i in $(seq 1 60); do printf '第%d条：学而时习之，不亦说乎？有朋自远方来，不亦乐乎？温故而知新。\n%%\n' "$i"; done >zh.txt

# every metric of run $1 and its descendants (path of run names, metric, step, value to 17
# digits), timings left out
dump() {
  sqlite3 runs.db "with recursive tree(id, path) as (select id, name from runs where id = $1
      union all select r.id, tree.path || '/' || r.name from runs r join tree on r.parent_id = tree.id)
    select tree.path, m.name, m.step, printf('%.17g', m.value) from metrics m join tree on m.run_id = tree.id
     where m.name not like '%wall%' and m.name not like '%per_s%' and m.name not like '%\_s' escape '\'
       and m.name not like '%seconds%' and m.name not like 'mfu%'
     order by 1, 2, 3, 4"
}
# the statistic that follows the data order: run $1's tree's first `loss` (its earliest run
# with one, lowest step), or metric $2 of the tree when given
stat() {
  sqlite3 runs.db "with recursive tree(id) as (select $1 union all select r.id from runs r join tree on r.parent_id = tree.id)
    select printf('%.17g', m.value) from metrics m join tree on m.run_id = tree.id where m.name = '${2:-loss}'
     order by m.run_id, m.step limit 1"
}
last_top() { sqlite3 runs.db "select max(id) from runs where parent_id is null"; }

# study NAME STAT_METRIC ARGS...: the three runs and the checks
study() {
  local name=$1 metric=$2; shift 2
  local ids=()
  for seed in 11 11 12; do
    "$LTRUN" --seed "$seed" "$root/experiments/$name.lua" "$@" >"$name.$seed.out" 2>"$name.$seed.err"
    local rc=$?
    check "$name --seed $seed exits 0" equals "$rc" "0"
    [ "$rc" = 0 ] || { tail -20 "$name.$seed.err" >&2; }
    ids+=("$(last_top)")
  done
  local a b c
  a=$(dump "${ids[0]}"); b=$(dump "${ids[1]}")
  check "$name: metrics logged" test "$(wc -l <<<"$a")" -ge 1 -a -n "$a"
  check "$name: the same seed gives the same metrics" equals "$b" "$a"
  if [ "$metric" != "-" ]; then
    a=$(stat "${ids[0]}" "$metric"); c=$(stat "${ids[2]}" "$metric")
    check "$name: $metric logged" test -n "$a"
    check "$name: another seed, another data order ($metric $a vs $c)" test "$a" != "$c"
  fi
}

study freeze_deep loss --corpus=zh.txt --steps=3 --eval_every=0 --seq_len=16 --micro_batch=2 --bench_limit=4 \
  --val_windows=4 --task_probe=8 --bench=antonyms_heldout --protocols=cloze --out=fd
study hybrid loss --steps=2 --bench=antonyms_heldout --out=hy --models=hy_models \
  --freeze_deep="seq_len=16;micro_batch=2;bench_limit=4;val_windows=4;task_probe=8;protocols=cloze;corpus=zh.txt;eval_every=0"
study grpo entropy --iterations=2 --prompts=2 --group_size=2 --max_response=6 --eval_n=4 --eval_samples=2 --eval_every=0 \
  --micro_batch=4 --decontaminate=0
study layer_tracer final_p_target --samples=8 --groups=2 --examples=1 --batch=4 --out=lt
study pretrain_math loss --out=models_pm/m --layers=1 --hidden=32 --heads=2 --kv_heads=1 --vocab=300 --docs=200 \
  --rl_prompts=20 --test=10 --steps=3 --seq_len=32 --micro_batch=2 --eval_every=0
study pretrain_tiny loss --out=models_pt/m --layers=1 --hidden=32 --heads=2 --kv_heads=1 --vocab=300 --steps=3 \
  --english_bytes=3000 --statement_rounds=1 --task_rounds=1 --choice_rounds=1 --probe=8 --seq_len=16 --micro_batch=2
scan=(--algo=causal_lm --model="$LTRUN_MODELS/tiny-qwen3" --layers=0,1 --steps=2 --lr=0.01 --seq_len=16 --micro_batch=2
      --bench_limit=8 --workers=2 --min_gap=0 --work=scan_work)
study layer_scan loss "${scan[@]}"
# layer_strategies and layer_rank_corr read finished scans from the store: two stand-ins
# (a top-level run with a scan's params, its ranking and contributions), so that their input
# is fixed whatever the toy scan above gave (its S_full - S_base may be 0: no ranking)
cat >fake_scan.lua <<LUA
lt.run.param{ model = "$LTRUN_MODELS/tiny-qwen3", algo = "causal_lm", data = "antonyms", bench = "antonyms_heldout",
              bench_limit = 8, steps = 2, lr = 0.01, warmup = 0.1, seq_len = 16, micro_batch = 2, eval_every = 0,
              work = "scan_work", ranking = arg[1] }
for l, c in (arg[2]):gmatch("(%d+):([-%d.]+)") do lt.run.log_layers("contribution", { tonumber(c) }, { first = tonumber(l) }) end
LUA
"$LTRUN" --run-name layer_scan fake_scan.lua 1,0 "0:0.2 1:0.9 2:0.5" >/dev/null
scan_a=$(last_top)
"$LTRUN" --run-name layer_scan fake_scan.lua 0,1 "0:0.7 1:0.1 2:0.4" >/dev/null
scan_b=$(last_top)
study layer_strategies loss --scan="$scan_a" --k=1 --repeats=1 --workers=2
scans=$scan_a,$scan_b
study layer_rank_corr - --scans="$scans" --out=figs

# --help, unknown and mistyped args, on every study
# args listed as "  --NAME=DEFAULT" each followed by its help text, indented further
arg_lines() { grep -qE '^  --[a-z_0-9]+=' <<<"$1" &&
  awk '/^  --/ { if ((getline n) <= 0 || n !~ /^      [^ ]/) bad = 1 } END { exit bad }' <<<"$1"; }
# the studies: each folder of experiments/ but the benchmarks (bench/) and a template (_NAME/)
studies=()
for d in "$root"/experiments/*/; do
  name=$(basename "$d")
  [ "$name" = bench ] || [ "${name#_}" != "$name" ] || studies+=("$name")
done
check "the studies are folders (${#studies[@]})" test "${#studies[@]}" -ge 10
for name in "${studies[@]}"; do
  f=$root/experiments/$name/$name.lua
  help=$("$LTRUN" "$f" --help 2>&1)
  check "$name --help names the study" contains "$help" "$name: "
  check "$name --help lists args with defaults and help" arg_lines "$help"
  "$LTRUN" "$f" --no_such=1 >/dev/null 2>err.txt
  check "$name --no_such=1 is an error naming it" contains "$(cat err.txt)" "unknown arg --no_such"
done
# a study is a folder whose main file is a short script over lib/lt, wrapped at 100 columns: at
# most 60 lines (the folder, its own modules and test included, is what the study measures: said
# in the check); no study loads another's file
for name in "${studies[@]}"; do
  f=$root/experiments/$name/$name.lua; lines=$(wc -l <"$f"); most=60
  folder=$(cat "$root/experiments/$name"/*.lua | wc -l)
  check "$name is a short study ($lines lines, at most $most; its folder $folder)" test "$lines" -le "$most"
  check "$name.lua is wrapped at 100 columns" equals "$(LC_ALL=C.UTF-8 grep -n '.\{101\}' "$f")" ""
done
check "no loadfile / dofile in lib/ or experiments/" equals \
  "$(grep -rlE --include='*.lua' '(^|[^.[:alnum:]_])(loadfile|dofile)[[:space:]]*\(' "$root/lib" "$root/experiments")" ""
help=$("$LTRUN" "$root/experiments/freeze_deep/freeze_deep.lua" --help 2>&1)
check "freeze_deep --help: an arg, its default, its help" contains "$help" "  --steps=300
      optimizer steps (>= 1)"
check "freeze_deep --help: the preset" contains "$help" "preset --preset=paper: "
"$LTRUN" "$root/experiments/freeze_deep/freeze_deep.lua" --steps=abc >/dev/null 2>err.txt
check "--steps=abc is an error naming the arg" contains "$(cat err.txt)" "freeze_deep: --steps=abc: expected a number"
"$LTRUN" "$root/experiments/hybrid/hybrid.lua" --freeze_deep="nosuch=1" --models=hy_bad >/dev/null 2>err.txt
check "hybrid: a wrong key in --freeze_deep is an error naming it" contains "$(cat err.txt)" "freeze_deep: unknown arg --nosuch"
check "hybrid: ... found before anything is assembled" test ! -e hy_bad
"$LTRUN" "$root/experiments/grpo/grpo.lua" --algo=ppo >/dev/null 2>err.txt
check "a choice outside the list is an error naming the arg" contains "$(cat err.txt)" "grpo: --algo=ppo: 'ppo' is not one of grpo, dr_grpo"
finish
