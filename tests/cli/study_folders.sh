# tests/cli/study_folders.sh: a study is a folder experiments/NAME/ (issue 37). `ltrun DIR.lua`
# (the path a study had as one file, on the study cards) and `ltrun DIR` / `ltrun DIR/` run
# DIR/NAME.lua; the run records that file (name NAME), so rerun, export and a scan's workers
# (arg[0]) name it directly; a study's named query (experiments/NAME/NAME.sql) is ltrun's.
root=$(realpath "$(dirname "$0")/../..")
source "$(dirname "$0")/common.bash"

for path in experiments/freeze_deep.lua experiments/freeze_deep/ experiments/freeze_deep; do
  out=$(cd "$root" && "$LTRUN" "$path" --help 2>&1); rc=$?
  check "ltrun $path --help: exit 0" equals "$rc" "0"
  check "ltrun $path --help: freeze_deep's usage" contains "$out" "freeze_deep: "
done
check "--help keeps no run (it answered a question, it ran nothing)" equals "$(sql1 "select count(*) from runs")" "0"

# a study folder of one's own, outside experiments/: its script and a module beside it
mkdir -p s/mine s/empty s/both
cat >s/mine/mine.lua <<'EOF'
print("script " .. arg[0])
lt.run.log("x", 1)
EOF
echo 'print("the file")' >s/both.lua
echo 'print("the folder")' >s/both/both.lua
for path in s/mine.lua s/mine s/mine/; do
  out=$("$LTRUN" "$path" 2>&1); rc=$?
  check "ltrun $path runs s/mine/mine.lua" equals "$rc:${out#script $PWD/}" "0:s/mine/mine.lua"
  check "ltrun $path: the run named mine, its script s/mine/mine.lua" equals \
    "$(sql1 "select name, substr(script_path, -15) from runs order by id desc limit 1")" "mine,s/mine/mine.lua"
done
check "a file DIR.lua that exists is the script, not DIR/" equals "$("$LTRUN" s/both.lua 2>&1)" "the file"
out=$("$LTRUN" s/empty 2>&1); rc=$?
check "a folder without NAME.lua: exit 2" equals "$rc" "2"
check "... naming the file it looked for" contains "$out" "s/empty: a folder without its study script s/empty/empty.lua"
out=$("$LTRUN" s/nosuch.lua 2>&1); rc=$?
check "no file and no folder: the usual error" contains "$rc:$out" "2:ltrun: s/nosuch.lua: no such script"

# named queries kept in the studies' folders are compiled in, and listed with the others
for q in freeze_deep grpo hybrid layer_scan layer_tracer; do
  "$LTRUN" sql "@$q" >/dev/null 2>err.txt; rc=$?
  check "ltrun sql @$q (experiments/$q/$q.sql) runs" equals "$rc:$(cat err.txt)" "0:"
done
out=$("$LTRUN" sql @nosuch 2>&1)
check "an unknown query lists the studies' queries among the known" contains "$out" "freeze_deep, grpo, hybrid"
finish
