# tests/cli/study_checkpoints.sh: the studies that train pass checkpointing through, and
# --resume=true with nothing to resume from is an error naming the folder (never a silent
# start from step 0). grpo.lua with --checkpoint_dir alone checkpoints before the end (its
# default --checkpoint_every) and resumes after the last checkpoint; pretrain_math.lua and the
# layer scan's jobs checkpoint every --checkpoint_every steps; freeze_deep.lua, hybrid.lua,
# pretrain_tiny.lua, pretrain_math.lua and grpo.lua refuse --resume=true without a checkpoint
# before they make or load anything. Tiny random models, a few steps each.
root=$(realpath "$(dirname "$0")/../..")
source "$(dirname "$0")/common.bash"
command -v sqlite3 >/dev/null || { echo "sqlite3 missing"; exit 77; }

# a tiny math policy folder as pretrain_math.lua leaves it: model, train.jsonl, test.jsonl
"$LTRUN" model new --layers 1 --hidden 32 --heads 2 --kv-heads 1 --vocab 300 pm >/dev/null 2>&1
for i in 1 2 3 4 5 6 7 8; do
  printf '{"question": "Tom has %d apples and gets %d more. How many apples?", "answer": "%d + %d = %d\\n#### %d"}\n' \
    "$i" 2 "$i" 2 $((i + 2)) $((i + 2))
done >pm/train.jsonl
head -3 pm/train.jsonl | sed 's/apples/pens/g' >pm/test.jsonl
grpo=(--model=pm --prompts=2 --group_size=2 --max_response=6 --eval_n=3 --eval_samples=0 --eval_every=0
      --micro_batch=4 --decontaminate=0)
latest_run() { sql1 "select max(id) from runs where name='grpo'"; }

# 1. --checkpoint_dir alone: checkpoints before the end (default every 25 steps)
"$LTRUN" "$root/experiments/grpo/grpo.lua" "${grpo[@]}" --iterations=30 --checkpoint_dir=ck >g1.out 2>g1.err
check "grpo with a checkpoint folder runs" equals "$?" "0"
check "a checkpoint before the end (step 25 of 30)" equals "$(ls ck | grep -c '^step-00000025$')" "1"
check "and one at the end" equals "$(cat ck/latest 2>/dev/null)" "step-00000030"

# 2. resume after it: the steps continue from 30
"$LTRUN" "$root/experiments/grpo/grpo.lua" "${grpo[@]}" --iterations=34 --checkpoint_dir=ck --resume=true >g2.out 2>g2.err
check "grpo --resume=true from the checkpoint runs" equals "$?" "0"
run=$(latest_run)
check "the resumed run trains steps 31..34 only" equals \
  "$(sql1 "select min(step) || '..' || max(step) from metrics where run_id=$run and name='reward_mean'")" "31..34"

# 3. resume with nothing to resume from: an error naming the folder, before any work
mkdir -p empty
for study in grpo pretrain_math pretrain_tiny freeze_deep hybrid; do
  extra=()
  [ "$study" = grpo ] && extra=("${grpo[@]}")
  "$LTRUN" "$root/experiments/$study.lua" "${extra[@]}" --resume=true --checkpoint_dir=empty >r.out 2>r.err; rc=$?
  check "$study --resume=true with an empty folder fails" equals "$rc" "1"
  check "$study: the error names the folder" contains "$(cat r.err)" "no checkpoint to resume from in empty"
  "$LTRUN" "$root/experiments/$study.lua" "${extra[@]}" --resume=true >r.out 2>r.err; rc=$?
  check "$study --resume=true without a folder fails" equals "$rc" "1"
  check "$study: the error says what is missing" contains "$(cat r.err)" "--resume=true needs --checkpoint_dir"
done
check "nothing was made meanwhile" equals "$(ls -d models artifacts 2>/dev/null | wc -l)" "0"
check "no run ended ok meanwhile" equals "$(sql1 "select count(*) from runs where status='ok' and id > $run")" "0"

# 4. pretrain_math passes its checkpoints through
"$LTRUN" "$root/experiments/pretrain_math/pretrain_math.lua" --out=models/pm2 --layers=1 --hidden=32 --heads=2 --kv_heads=1 \
  --vocab=300 --steps=4 --docs=300 --rl_prompts=10 --test=4 --eval_every=0 --micro_batch=4 \
  --checkpoint_dir=pck --checkpoint_every=2 >p.out 2>p.err
check "pretrain_math with checkpoints runs" equals "$?" "0"
check "pretrain_math: a checkpoint at step 2 of 4" equals "$(ls pck | grep -c '^step-00000002$')" "1"

# 5. the layer scan's jobs: a checkpoint folder per job under the scan key
opts=(--algo=causal_lm --model=pm --layers=0 --steps=4 --lr=0.01 --seq_len=16 --micro_batch=2 --bench_limit=4
      --workers=1 --min_gap=0 --scan_key=ck5)
"$LTRUN" "$root/experiments/layer_scan/layer_scan.lua" "${opts[@]}" --checkpoint_every=2 --checkpoint_dir=sck >s.out 2>s.err
check "layer scan with job checkpoints runs" equals "$?" "0"
check "each trained job checkpointed at step 2 and 4" equals \
  "$(ls sck/ck5/full sck/ck5/layer_0 2>/dev/null | grep -c '^step-0000000[24]$')" "4"
"$LTRUN" "$root/experiments/layer_scan/layer_scan.lua" "${opts[@]}" --checkpoint_every=2 --eval_every=2 >s2.out 2>s2.err
check "--eval_every with job checkpoints is refused" contains "$(cat s2.err)" "not supported together"
finish
