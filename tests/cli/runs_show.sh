# tests/cli/runs_show.sh: `ltrun runs` lists top-level runs with their number of children and
# filters by --name, --status, --parent, --all, saying how many more the limit left out; `ltrun
# show` prints dates, never unix seconds such as 1.79588e+09, and on a terminal each metric's
# curve as one line of blocks (issue 46 item 3).
here=$(cd "$(dirname "$0")" && pwd)  # (common.bash moves into the scratch folder)
source "$here/common.bash"
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }

# a sweep (a parent, three children: one failed), a failed run, and 22 plain runs
cat > sweep.lua <<'L'
for i, lr in ipairs({ "1e-3", "1e-2", "1e-1" }) do
  pcall(lt.run.child, "lr=" .. lr, function()
    lt.run.param("lr", lr)
    for step = 0, 39 do lt.run.log("loss", step < 20 and 1 or 0.5 + step / 80) end
    if lr == "1e-1" then error("diverged") end
  end)
end
for step = 0, 99 do lt.run.log("rise", step) end  -- a line from low to high
lt.run.log("flat", 3)
L
"$LTRUN" sweep.lua >/dev/null 2>&1
"$LTRUN" --log -e 'error("broken")' >/dev/null 2>&1
for i in $(seq 1 22); do "$LTRUN" --log -e "lt.run.log('x', $i)" --run-name "plain_$i" >/dev/null 2>&1; done
sweep=$(sql1 "select id from runs where name = 'sweep'")

out=$("$LTRUN" runs)
check "runs: top-level runs only (no child)" equals "$(grep -c 'lr=' <<<"$out")" "0"
check "runs: the 20 latest by default" contains "$out" "(20 rows)"
check "runs: and how many more" contains "$out" "4 more (older)"
check "runs: a child count column" contains "$(head -1 <<<"$out")" "children"
out=$("$LTRUN" runs --limit 0)
check "runs --limit 0: every top-level run" contains "$out" "(24 rows)"
check "runs --limit 0: nothing more" equals "$(grep -c 'more (older)' <<<"$out")" "0"
check "runs: the sweep with its 3 children" equals "$(awk -v id="$sweep" '$1 == id { print $7 }' <<<"$out")" "3"

out=$("$LTRUN" runs --status failed); rc=$?
check "runs --status failed: exit 0" equals "$rc" "0"
check "runs --status failed: the failed top-level run" contains "$out" "broken"
check "runs --status failed: one row" contains "$out" "(1 row)"
out=$("$LTRUN" runs --status failed --all)
check "runs --status failed --all: the failed child too" contains "$out" "lr=1e-1"
check "runs --status failed --all: two rows" contains "$out" "(2 rows)"
out=$("$LTRUN" runs --status ok,failed --name plain_1)
check "runs --name: a part of the name (plain_1, plain_10..19)" contains "$out" "(11 rows)"
out=$("$LTRUN" runs --name 'plain_?')
check "runs --name: a glob" contains "$out" "(9 rows)"
out=$("$LTRUN" runs --parent "$sweep")
check "runs --parent: the children" contains "$out" "(3 rows)"
check "runs --parent: by name" contains "$out" "lr=1e-2"
out=$("$LTRUN" runs --status fialed 2>&1); rc=$?
check "runs --status with a typo: exit 2" equals "$rc" "2"
check "runs --status with a typo: named, with the statuses" contains "$out" "'fialed' is not a status (running, ok, failed"

# show: dates, not unix seconds. A rising line of 100 points: 20 groups of 5 whose means
# 2, 7, ..., 97 map to block round(7 k / 19), k = 0..19
out=$("$LTRUN" show "$sweep")
check "show: no float timestamp" equals "$(grep -cE '[0-9]\.[0-9]+e\+0?9' <<<"$out")" "0"
check "show: metric times as dates" contains "$(grep -E '^rise ' <<<"$out")" "$(date -u +%Y-)"
check "show: no curve into a pipe" equals "$(grep -c 'curve' <<<"$out")" "0"
out=$(python3 -c 'import os, pty, sys; os.environ["TERM"] = "dumb"; pty.spawn(sys.argv[1:])' "$LTRUN" show "$sweep" </dev/null | tr -d '\r')
check "show on a terminal: a curve column" contains "$out" "curve"
check "show on a terminal: a rising metric from the lowest block to the highest" \
  contains "$(grep -E '^rise ' <<<"$out")" "rise  ▁▁▂▂▂▃▃▄▄▄▅▅▅▆▆▇▇▇██"
check "show on a terminal: a flat one, middle blocks" contains "$(grep -E '^flat ' <<<"$out")" "flat  ▄ "
out=$(python3 -c 'import os, pty, sys; pty.spawn(sys.argv[1:])' "$LTRUN" show "$(sql1 "select id from runs where name = 'lr=1e-2'")" </dev/null | tr -d '\r')
# (40 points, 20 groups of 2: ten at 1, then the means 0.75625 + 0.025 k, k = 0..9, rounded to
# eighths of the range; worked out by hand)
check "show on a terminal: a loss that drops, then climbs" contains "$(grep -E '^loss ' <<<"$out")" "loss  ██████████▁▂▂▃▄▅▅▆▇▇"
finish
