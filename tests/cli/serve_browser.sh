# tests/cli/serve_browser.sh: the `ltrun serve` UI in Debian's headless Chromium: the runs page,
# a run page (metric curves drawn by uPlot, the layer heatmap and profile, evaluation, the SVG
# artifact, children), the compare page and the SQL page, checked on the DOM after the page's
# scripts ran; a screenshot of the run page stays in this test's scratch folder. Skipped
# (exit 77) only when no Chromium is installed (scripts/setup installs chromium-headless-shell).
source "$(dirname "$0")/common.bash"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
chrome=$(command -v chromium-headless-shell || command -v chromium || true)
if [ -z "$chrome" ]; then
  echo "SKIP: no Chromium found (chromium-headless-shell or chromium; scripts/setup installs chromium-headless-shell)"
  exit 77
fi

"$LTRUN" "$here/serve/study.lua" --out="$SCRATCH/study" 2>study.err || { cat study.err >&2; exit 1; }
id=$(sql1 "select id from runs where parent_id is null order by id desc limit 1")
kids=$(sql1 "select group_concat(id) from (select id from runs where parent_id = $id order by id)")
"$LTRUN" serve --port 0 >serve.out 2>serve.err & pid=$!
trap 'kill $pid 2>/dev/null' EXIT
url=""
for _ in $(seq 1 100); do url=$(grep -o 'http://[^ ]*' serve.out | head -1); [ -n "$url" ] && break; sleep 0.1; done
[ -n "$url" ] || { cat serve.out serve.err >&2; exit 1; }

flags=(--headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update
       --disable-sync --no-first-run --user-data-dir="$SCRATCH/profile" --window-size=1280,2400
       --virtual-time-budget=20000)
dom() { timeout 120 "$chrome" "${flags[@]}" --dump-dom "$1" 2>>chrome.err; }
count() { grep -o -- "$2" <<<"$1" | wc -l; }

page=$(dom "${url}#/")
check "runs page: scripts ran to the end" contains "$page" 'data-ready="1"'
check "runs page: one row per run (3)" equals "$(count "$page" 'class="pick"')" "3"
check "runs page: the study's link" contains "$page" "href=\"#/run/$id\""

page=$(dom "${url}#/run/$id")
echo "$page" >run.html
check "run page: ready" contains "$page" 'data-ready="1"'
check "run page: uPlot charts for loss, lr and the p_max profile" test "$(count "$page" 'class="uplot')" -ge 3
check "run page: the loss curve has its 50 points" contains "$page" 'data-points="50"'
check "run page: every chart was drawn (uPlot's draw hook ran)" equals "$(count "$page" 'data-drawn="[1-9]')" "$(count "$page" 'class="uplot')"
check "run page: charts have canvases" test "$(count "$page" '<canvas')" -ge 3
check "run page: heatmap of 3 groups x 3 layers" contains "$page" 'data-cells="9"'
check "run page: evaluation table" contains "$page" 'class="eval"'
check "run page: SVG artifact inline" contains "$page" "src=\"/api/runs/$id/artifacts/0\""
check "run page: rerun command" contains "$page" "rerun $id"
check "run page: the children" contains "$page" "compare/$kids"
timeout 120 "$chrome" "${flags[@]}" --screenshot="$SCRATCH/run_page.png" "${url}#/run/$id" 2>>chrome.err >/dev/null
check "run page: screenshot kept ($SCRATCH/run_page.png)" test "$(stat -c %s "$SCRATCH/run_page.png" 2>/dev/null || echo 0)" -gt 20000

page=$(dom "${url}#/compare/$kids")
check "compare: ready" contains "$page" 'data-ready="1"'
check "compare: loss of both runs overlaid" contains "$page" 'data-series="2"'
check "compare: params diff marks the differing param" contains "$page" 'class="differs"'

page=$(dom "${url}#/sql?q=select%20count(*)%20as%20n%20from%20runs")
check "sql page: the result table" contains "$page" '<th>n</th>'
check "sql page: named queries offered" contains "$page" '@status'
page=$(dom "${url}#/sql?q=delete%20from%20runs")
check "sql page: a write is refused with a message" contains "$page" 'read-only'
finish
