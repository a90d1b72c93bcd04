# tests/cli/gpu_check.sh: scripts/gpu-check --quick --device cpu runs the GPU node's list
# (smoke check, benches, report) with tiny shapes on this machine's build, and its report
# lists every figure with the baseline measured in the same run, the static cache's beside the
# dynamic one's.
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tests/cli/common.bash"
build=$(dirname "$LTRUN")
out=$SCRATCH/report
"$root/scripts/gpu-check" --quick --device cpu --build "$build" --no-build --hf none --out "$out" \
  > "$SCRATCH/gpu-check.log" 2>&1
rc=$?
check "gpu-check --quick --device cpu exits 0 (log: $SCRATCH/gpu-check.log)" equals "$rc" 0
[ "$rc" = 0 ] || tail -n 40 "$SCRATCH/gpu-check.log" >&2
check "report.md written" test -s "$out/report.md"
check "report.json written" test -s "$out/report.json"
json=$(cat "$out/report.json" 2>/dev/null)
# every step ran (ok or skipped with its reason), none failed
for s in device_smoke make_model bench_train bench_grpo bench_forward bench_eval bench_layer_tracer; do
  check "step $s ok" contains "$(grep -P "^$s\t" "$out/steps.tsv")" "$s	0	"
done
check "tests skipped with the reason" contains "$(cat "$out/steps.tsv")" "tests	skipped	0	--tests none"
check "parity skipped with the reason" contains "$(cat "$out/steps.tsv")" "parity	skipped"
# the figures, each with its same-run baseline and a ratio (forward's decode at batch 1 is left out:
# a decode time is generate(n) - generate(1), which a loaded machine can make non-positive,
# and then the bench logs decode_failed instead)
for f in '"figure":"full training"' '"figure":"rollout (sampling, log-probs, packing)"' \
         '"baseline":"plain generate, same rows and sampling"' '"baseline":"full training"' \
         '"baseline":"naive, batched"' '"baseline":"the same at batch 1"' \
         '"failed_steps":0'; do
  check "report.json has $f" contains "$json" "$f"
done
# the static cache beside the dynamic one (issue 35 item 1): the proxies' counts (exact, so
# always there), the rollouts over it (always a rate), and decode over it and without graphs
# at each batch in the forward bench's log (a rate, or decode_failed on a loaded machine)
for f in '"figure":"ATen kernels per block per decode step, static cache"' \
         '"figure":"ATen kernels per decode step outside the blocks, static cache"' \
         '"figure":"rollout (sampling, log-probs, packing), static cache"' \
         '"figure":"rollout, shared prefill + finished rows dropped (mixed lengths), static cache"' \
         '"baseline":"the same over the dynamic cache"'; do
  check "report.json has $f" contains "$json" "$f"
done
flog=$(cat "$out/logs/bench_forward.log" 2>/dev/null)
for c in dynamic static static_eager; do
  n=$(grep -cE "^ +([0-9]+ +)?$c +" <<<"$flog")
  check "bench_forward timed decode over the $c cache at both batches ($n)" equals "$n" 2
done
check "bench_forward logged each cache's decode or its failure" \
  test "$("$LTRUN" --db "$out/bench.db" -e "
    local n = 0
    for _, c in ipairs{ 'static', 'static_eager' } do
      for _, b in ipairs{ 1, 4 } do
        local r = lt.run.query([[SELECT count(*) AS n FROM metrics WHERE name IN (?, ?) AND step = ?]],
                               'decode_tokens_per_s/' .. c, 'decode_failed/' .. c, b)
        if r[1].n > 0 then n = n + 1 end
      end
    end
    print(n)" 2>&1)" = 4
# whether the static steps ran as graphs is logged (GenerateStats), and report.md names the
# static cache's rows "(CUDA graphs)" only when graphs replayed: the same figures reported as
# if measured on a GPU (--on=cuda) must say the steps ran eagerly, as they did here
check "bench_forward logged the static cache's graph counts" \
  test "$("$LTRUN" --db "$out/bench.db" -e "
    local r = lt.run.query([[SELECT count(*) AS n FROM metrics WHERE name IN ('decode_replays/static',
      'decode_graphs/static', 'decode_fallbacks/static') AND value = 0]])
    print(r[1].n)" 2>&1)" = 6
mkdir -p "$SCRATCH/as_cuda"
cp "$out/steps.tsv" "$out/bench.db" "$SCRATCH/as_cuda/"
"$LTRUN" --db "$SCRATCH/as_cuda/bench.db" "$root/scripts/gpu-check.d/report.lua" --out="$SCRATCH/as_cuda" --on=cuda \
  --gpu="NVIDIA H200" --model="$out/work/models/shape" > "$SCRATCH/as_cuda.log" 2>&1
as_cuda=$(cat "$SCRATCH/as_cuda/report.md" 2>/dev/null)
check "report.md on CUDA with no replays: the static rows say eager" \
  contains "$as_cuda" "static cache, eager steps (no CUDA graph replayed)"
check "... and never claim CUDA graphs" test -z "$(grep -F '(CUDA graphs)' <<<"$as_cuda")"
n_ratio=$(grep -o '"ratio":' <<<"$json" | wc -l)
check "at least 8 figures carry a ratio to their baseline (got $n_ratio)" test "$n_ratio" -ge 8
# a bad option is refused, naming it
msg=$("$root/scripts/gpu-check" --out "$out" --no-such 2>&1); rc=$?
check "unknown option refused" equals "$rc" 2
check "... naming it" contains "$msg" "--no-such"
msg=$("$root/scripts/gpu-check" --out "$out" --device tpu 2>&1); rc=$?
check "unknown device refused" contains "$msg" "'tpu'"
# --device cuda with a build that has no CUDA: the probe fails, names why, the rest is skipped
if ! "$LTRUN" --device cuda -e '' >/dev/null 2>&1; then
  msg=$("$root/scripts/gpu-check" --device cuda --build "$build" --no-build --hf none --out "$SCRATCH/nocuda" 2>&1); rc=$?
  check "no CUDA: exit 1" equals "$rc" 1
  check "no CUDA: says why" contains "$msg" "cannot use CUDA"
  check "no CUDA: later steps skipped in the report" contains "$(cat "$SCRATCH/nocuda/report.md")" "| tests | skipped | 0 | no usable ltrun"
fi
finish
