# tests/cli/grpo_inputs.sh: a folder given to the GRPO study as --data or --eval (issue 34) is
# named as a folder with the file expected, before any model is made; lt.rl.prompts says the
# same (it said "holds no prompt", as if the folder were an empty file).
root=$(realpath "$(dirname "$0")/../..")
source "$(dirname "$0")/common.bash"
export LTRUN_MODELS=$SCRATCH/models  # an embedded default made by mistake would land here

mkdir -p data empty
printf '{"question": "What is 1+1?", "answer": "#### 2"}\n' > data/train.jsonl
for key in data eval; do
  err=$("$LTRUN" "$root/experiments/grpo/grpo.lua" --$key=data 2>&1); rc=$?
  check "--$key=FOLDER fails" equals "$rc" "1"
  check "--$key=FOLDER is named a folder, with a file to give instead" contains "$err" \
    "--$key=data is a folder: expected a prompt JSONL file, one {\"question\", \"answer\"} object a line (GSM8K's layout; the answer ending \"#### N\"): name one of its files, e.g. --$key=data/train.jsonl"
  check "--$key=FOLDER: not 'holds no prompt'" bash -c '[[ "$1" != *"holds no prompt"* ]]' _ "$err"
done
check "no model was made" test ! -e models

err=$("$LTRUN" -e 'lt.rl.prompts("data")' 2>&1)
check "lt.rl.prompts(FOLDER) names the folder and its JSONL files" contains "$err" \
  "rl.prompts: data is a folder: expected a JSONL file of prompts, one JSON object a line with a question (problem | question | prompt) and an answer (answer | reward_model.ground_truth | solution): name one of its files, data/train.jsonl"
err=$("$LTRUN" -e 'lt.rl.prompts("empty")' 2>&1)
check "an empty folder: the file expected" contains "$err" "rl.prompts: empty is a folder: expected a JSONL file of prompts"
check "an empty folder: an example" contains "$err" "e.g. a GSM8K train.jsonl"
err=$("$LTRUN" -e 'lt.rl.prompts("missing.jsonl")' 2>&1)
check "a missing file is named" contains "$err" "rl.prompts: missing.jsonl does not exist: expected a JSONL file of prompts"
mkfifo fifo.jsonl
err=$(timeout 20 "$LTRUN" -e 'lt.rl.prompts("fifo.jsonl")' 2>&1); rc=$?
check "a FIFO is refused, not read (no hang)" equals "$rc" "1"
check "a FIFO is named" contains "$err" "rl.prompts: fifo.jsonl is not a regular file"
out=$("$LTRUN" -e 'print(lt.rl.prompts("data/train.jsonl")[1].answer)' 2>&1)
check "the file itself reads" equals "$out" "2"
finish
