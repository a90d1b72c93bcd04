# tests/cli/reproduced_timing.sh: "reproduced" is about the science. A deterministic study logs
# a loss (the same on every replay: a seeded draw) and timing metrics that differ between runs
# by construction (they carry the run id); its rerun says "reproduced: all N metrics equal" with
# the timing metrics counted apart, and `compare` names the metrics that differ, timing ones in
# a line of their own. A changed loss is "not reproduced", naming it.
source "$(dirname "$0")/common.bash"

cat > study.lua <<'L'
local study = require "lt.study"
return study.study{
  name = "timed", help = "a loss and how fast it came",
  args = { steps = { 4, "steps", int = true, min = 1 }, shift = { 0, "added to the loss" } },
  run = function(cfg)
    for i = 1, cfg.steps do
      lt.run.log("loss", math.random() / i + cfg.shift, { step = i })
      lt.run.log("tokens_per_s", 1000 + lt.run.id() + i, { step = i })  -- differs between runs
    end
    lt.run.log("wall_s", lt.run.id() / 10)
  end }
L
"$LTRUN" study.lua --steps=4 >/dev/null 2>&1
check "the study runs" equals "$(sql1 "select status from runs where id = 1")" "ok"
out=$("$LTRUN" rerun 1 --yes 2>&1); rc=$?
check "rerun: exit 0" equals "$rc" "0"
check "rerun: reproduced, timing apart" contains "$out" \
  "ltrun rerun: run 2 against run 1: reproduced: all 4 metrics equal (5 timing metrics differ, as timings do)"
cmp=$("$LTRUN" compare 1 2)
check "compare: no metric of the science differs" contains "$cmp" "metrics that differ: none"
check "compare: the timing metrics that differ, by name" contains "$cmp" \
  "differ: tokens_per_s (4 of 4 points), wall_s (1 of 1 point)"
check "compare: no first divergence" contains "$cmp" "first divergence: none"

# the same study with a changed loss (an override on the rerun): not reproduced, the loss named
out=$("$LTRUN" rerun 1 --yes --shift=1 2>&1)
check "changed loss: not reproduced, named" contains "$out" \
  "not reproduced: 0 of 4 metrics equal; first divergence: loss step 1: "
check "changed loss: the metrics that differ listed" contains "$out" "; differ: loss (5 timing metrics differ, as timings do)"
cmp=$("$LTRUN" compare 1 3)
check "compare: the loss differs at every step" contains "$cmp" "metrics that differ: loss (4 of 4 points)"
finish
