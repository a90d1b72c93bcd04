# tests/cli/gpu_check_profile.sh: scripts/gpu-check --profile --device cpu on the smallest shape
# (--quick on the CPU: 2 blocks of width 64), the benches that have a limit: report.md names the
# measured shape, labels the build line, gives every figure's fraction of the limit, leaves out
# the rows whose baseline was skipped (--hf none), has the profile and the paper scan's cost;
# the trace is valid JSON with the training and decode sections' events. No timing asserts.
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tests/cli/common.bash"
build=$(dirname "$LTRUN")
out=$SCRATCH/report
"$root/scripts/gpu-check" --quick --profile --device cpu --build "$build" --no-build --hf none --tests none \
  --skip 'device_smoke bench_eval bench_layer_tracer bench_proxies' --out "$out" > "$SCRATCH/gpu-check.log" 2>&1
rc=$?
check "gpu-check --profile --device cpu exits 0 (log: $SCRATCH/gpu-check.log)" equals "$rc" 0
[ "$rc" = 0 ] || tail -n 40 "$SCRATCH/gpu-check.log" >&2
md=$(cat "$out/report.md" 2>/dev/null)
for s in bench_device bench_train bench_grpo bench_forward bench_profile; do
  check "step $s ok" contains "$(grep -P "^$s\t" "$out/steps.tsv")" "$s	0	"
done
check "the measured shape is named" contains "$md" "**Measured model shape**: qwen3, 2 blocks, width 64, 4 heads (2 KV) of 16"
check "... with its vocabulary and dtype" contains "$md" ", vocab 1024, untied head, weights float32"
check "the build line is labelled" contains "$md" "    ltrun build: $(realpath "$build") (--no-build: as it was)"
check "the figures have an 'of the limit' column" contains "$md" \
  "| bench | figure | value | unit | of the limit | baseline (same run) | baseline value | ratio |"
# decode, rollouts, prefill and training carry a fraction of the limit (a number and %)
for f in "| train | full training |" "| grpo | rollout (sampling, log-probs, packing) |" "| forward | greedy decode, batch 1 |" \
         "| forward | prefill, batch 4 |" "| grpo | rollout (sampling, log-probs, packing), static cache |"; do
  row=$(grep -F "$f" <<<"$md" | head -1)
  check "row '$f' has a fraction of the limit ($row)" grep -Eq '^\| [^|]+ \| [^|]+ \| [^|]+ \| [^|]+ \| [0-9.e+-]+% \|' <<<"$row"
done
check "the CPU's limits measured in this run" contains "$md" "| this machine's CPU (this run) |"
check "the GPUs' limits with their sources" contains "$md" "| NVIDIA H100 SXM (80 GB HBM3) | 3.35 TB/s | 989 TFLOP/s | NVIDIA H100"
# --hf none: no HF row, and no row that names a baseline without its value (blank or NaN)
check "no row for the skipped HF baselines" test "$(grep -c 'HF transformers' <<<"$md")" = 0
check "no NaN or inf in the report" test "$(grep -Eic '(^|[^a-z])(nan|inf)([^a-z]|$)' <<<"$md")" = 0
blank=$(awk -F'|' 'NF == 10 && $2 !~ /bench|---/ && $7 !~ /^ *$/ && $8 ~ /^ *$/' <<<"$md")
check "no figure with a named baseline and no value ($blank)" test -z "$blank"
check "the profile section" contains "$md" "## Profile"
check "... launches per decode step" contains "$md" "| one decode step (generate of 2 tokens minus 1) |"
check "... top kernels of the decode step" contains "$md" "Top kernels by time, decode step:"
check "the paper scan's cost" contains "$md" "## Cost of a paper-scale layer scan at the measured rates"
for part in rollout reference update evaluation; do
  check "... its $part hours" grep -Eq "^\| $part \| [0-9.e+]+ \| [0-9.e+-]+% \|" <<<"$md"
done
check "... with its assumptions" contains "$md" "scaled from the measured model shape to Qwen3-1.7B"
check "... the paper's steps" contains "$md" "388 steps a run"
# the trace: valid JSON, with events of the training step and of both generate sections
t=$("$LTRUN" -e "
  local d = lt.json.decode(io.open('$out/trace.json'):read('*a'))
  local n, names = 0, {}
  for _, e in ipairs(d.traceEvents) do
    if e.ph == 'X' then n = n + 1; names[e.name] = (names[e.name] or 0) + 1 end
  end
  print(('events=%d train=%d g1=%d g2=%d mm=%s'):format(n, names['training step'] or 0, names['generate 1 token'] or 0,
        names['generate 2 tokens'] or 0, tostring((names['aten::mm'] or 0) > 0)))" 2>&1)
check "trace.json is JSON with the three sections and operators ($t)" contains "$t" "train=1 g1=1 g2=1 mm=true"
n=$(sed -n 's/^events=\([0-9]*\).*/\1/p' <<<"$t")
check "trace.json has events ($n)" test "${n:-0}" -gt 100
finish
