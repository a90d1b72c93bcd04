# tests/cli/readme_study.sh: the study of README.md's "Writing your own study" runs as written.
# The code block after the marker line `<!-- study: NAME.lua -->` is written to NAME.lua in a
# folder of its own (not experiments/) and run on a tiny random stand-in for the embedded
# default it asks lt.models for (LTRUN_MODELS), at a few steps: two child runs, the table, the
# figure, its --help; a mistyped arg is an error naming it.
root=$(realpath "$(dirname "$0")/../..")
source "$(dirname "$0")/common.bash"
name=$(sed -n 's/^<!-- study: \(.*\) -->$/\1/p' "$root/README.md" | head -1)
check "README marks its example study" test -n "$name"
mkdir -p mine
awk -v marker="<!-- study: $name -->" '$0 == marker { on = 1; next } on && /^```lua$/ { code = 1; next }
  code && /^```$/ { exit } code { print }' "$root/README.md" >"mine/$name"
lines=$(wc -l <"mine/$name")
check "the example is a complete study of about 30 lines ($lines)" test "$lines" -ge 20 -a "$lines" -le 32
check "it declares a study" grep -q 'study.study{' "mine/$name"
export LTRUN_MODELS=$SCRATCH/models
"$LTRUN" model new --layers 2 --hidden 32 --heads 2 --kv-heads 1 --vocab 300 models/tiny-qwen3 >/dev/null 2>&1
cd mine
out=$("$LTRUN" --db ../runs.db "$name" --steps=3 --seq_len=16 --micro_batch=2 2>err.txt); rc=$?
check "the README's study runs as written" equals "$rc" "0"
[ "$rc" = 0 ] || cat err.txt >&2
cd ..
top=$(sql1 "select max(id) from runs where parent_id is null")
check "its runs: one child per plan, ok" equals "$(sql1 "select group_concat(name || ':' || status, ' ') from (select name, status from runs where parent_id = $top order by name)")" "boost:ok plain:ok"
check "the table: a row per plan" equals "$(grep -cE '^(plain|boost) ' <<<"$out")" "2"
check "a figure recorded" equals "$(sql1 "select count(*) from artifacts where run_id = $top")" "1"
check "its args recorded as params" equals "$(sql1 "select value from params where run_id = $top and key = 'steps'")" "3"
help=$("$LTRUN" --db x.db "mine/$name" --help 2>&1)
check "--help lists its own args" contains "$help" "--factor=4"
"$LTRUN" --db x.db "mine/$name" --factor=lots >/dev/null 2>err.txt
check "a mistyped arg is an error naming it" contains "$(cat err.txt)" "--factor=lots: expected a number"
finish
