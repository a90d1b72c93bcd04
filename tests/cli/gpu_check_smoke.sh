# tests/cli/gpu_check_smoke.sh: `scripts/gpu-check --smoke --device cpu`, the one-minute smoke of
# the GPU paths (scripts/gpu-check.d/minute.lua) on this machine's build: one line per check,
# every check ok, under its own time limit; the first failing check stops it (exit 1, the later
# checks not run), and a run past its limit fails and says so.
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tests/cli/common.bash"
build=$(dirname "$LTRUN")
out=$SCRATCH/smoke
# the limit: the GPU's (60 s) is for an H200; two loaded cores need more for the same checks
"$root/scripts/gpu-check" --smoke --smoke-limit 300 --device cpu --build "$build" --no-build --out "$out" \
  > "$SCRATCH/smoke.log" 2>&1
rc=$?
check "gpu-check --smoke --device cpu exits 0 (log: $SCRATCH/smoke.log)" equals "$rc" 0
[ "$rc" = 0 ] || tail -n 30 "$SCRATCH/smoke.log" >&2
lines=$(cat "$out/smoke.txt" 2>/dev/null)
for c in device "greedy qwen3" "greedy nemotron_h" "greedy qwen3_5" "sampled qwen3" "sampled nemotron_h" \
         "sampled qwen3_5" memory master trace; do
  check "check '$c' ok, on one line" test "$(grep -cE "^smoke: $c +ok \(" <<<"$lines")" = 1
done
check "the static steps ran eagerly on the CPU: no graphs, no fallback" \
  contains "$(grep '^smoke: greedy qwen3 ' <<<"$lines")" "graphs 0, replays 0"
check "rows refilled (the stop id ends rows at different steps)" \
  test -z "$(grep '^smoke: greedy' <<<"$lines" | grep 'refilled 0,')"
check "all checks ok" contains "$lines" "smoke: all checks ok"
check "the smoke is a step in steps.tsv" contains "$(cat "$out/steps.tsv")" "smoke	0	"
check "no report: --smoke is the smoke alone" test ! -e "$out/report.md"

# fail fast: a bad LTRUN_STATIC_GRAPHS makes the first static generate fail; nothing runs after it
LTRUN_STATIC_GRAPHS=yes "$root/scripts/gpu-check" --smoke --smoke-limit 300 --device cpu --build "$build" --no-build \
  --out "$SCRATCH/bad" > "$SCRATCH/bad.log" 2>&1
rc=$?
bad=$(cat "$SCRATCH/bad/smoke.txt" 2>/dev/null)
check "a failing check: exit 1" equals "$rc" 1
check "... one line naming it and why" contains "$bad" "smoke: greedy qwen3"
check "... with the reason" contains "$bad" 'LTRUN_STATIC_GRAPHS must be "0" or "1"'
check "... and nothing after it" test -z "$(grep -E '^smoke: (sampled|memory|master|trace)' <<<"$bad")"

# its own time limit: one second is too little; it fails and says so
"$root/scripts/gpu-check" --smoke --smoke-limit 1 --device cpu --build "$build" --no-build --out "$SCRATCH/short" \
  > "$SCRATCH/short.log" 2>&1
rc=$?
check "past its limit: exit 1" equals "$rc" 1
check "... and says it timed out" contains "$(cat "$SCRATCH/short/smoke.txt" 2>/dev/null)" "TIMED OUT after 1s"
msg=$("$root/scripts/gpu-check" --smoke --smoke-limit 0 --out "$SCRATCH/zero" 2>&1); rc=$?
check "a limit of 0 is refused" equals "$rc" 2
check "... naming the option" contains "$msg" "--smoke-limit"
finish
