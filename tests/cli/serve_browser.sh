# tests/cli/serve_browser.sh: the `ltrun serve` UI in Debian's headless Chromium
# (tests/serve/browser_test.js: DOM checks after each page's scripts ran, a live curve;
# screenshots of a run page, the sweep and its compare kept as run_page.png, sweep_page.png and
# compare_page.png in this test's scratch folder), on the stores of
# tests/serve/study.lua, tests/serve/sweep.lua (a figure, eval scalars, 210 children) and
# tests/serve/failing.lua (a failed run with one-value metrics); screenshots of the sweep's
# table views kept as sweep_views.png. Skipped
# (exit 77) only when no Chromium is installed (scripts/setup installs chromium-headless-shell).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)  # tests/, before common.bash changes folder
source "$here/cli/common.bash"
chrome=$(command -v chromium-headless-shell || command -v chromium || true)
if [ -z "$chrome" ]; then
  echo "SKIP: no Chromium found (chromium-headless-shell or chromium; scripts/setup installs chromium-headless-shell)"
  exit 77
fi

"$LTRUN" "$here/serve/study.lua" --out="$SCRATCH/study" 2>study.err || { cat study.err >&2; exit 1; }
id=$(sql1 "select id from runs where parent_id is null order by id desc limit 1")
kids=$(sql1 "select group_concat(id) from (select id from runs where parent_id = $id order by id)" | tr -d '"')
"$LTRUN" "$here/serve/sweep.lua" --out="$SCRATCH/sweep" --children=210 2>sweep.err || { cat sweep.err >&2; exit 1; }
sweep=$(sql1 "select id from runs where name = 'sweep' and parent_id is null order by id desc limit 1")
sweep_kids=$(sql1 "select group_concat(id) from (select id from runs where parent_id = $sweep order by id)" | tr -d '"')
# a run that fails with a traceback after logging one-value metrics only
if "$LTRUN" "$here/serve/failing.lua" 2>failing.err; then echo "tests/serve/failing.lua did not fail" >&2; exit 1; fi
failing=$(sql1 "select id from runs where name = 'failing' order by id desc limit 1")
"$LTRUN" "$here/serve/live.lua" --ready="$SCRATCH/live_ready" --seconds=120 2>live.err & writer=$!
"$LTRUN" serve --port 0 >serve.out 2>serve.err & pid=$!
trap 'kill $pid $writer 2>/dev/null' EXIT
for _ in $(seq 1 300); do [ -s live_ready ] && break; sleep 0.1; done
# a run left `running` by a process that is gone (kill -9): made after the live writer opened
# the store, and no writer opens it after, so it stays `running` there
"$LTRUN" "$here/serve/live.lua" --ready="$SCRATCH/dead_ready" --seconds=120 2>dead.err & doomed=$!
for _ in $(seq 1 300); do [ -s dead_ready ] && break; sleep 0.1; done
kill -9 $doomed; wait $doomed 2>/dev/null
dead=$(cat dead_ready)
check "the killed run is left running" equals "$(sql1 "select status from runs where id = $dead" | tr -d '"')" running
check "ltrun runs: the killed run shown as gone (it said running)" contains "$("$LTRUN" runs | grep "^ *$dead ")" "running (process gone)"
total=$(sql1 "select count(*) from runs")
live=$(cat live_ready)
url=""
for _ in $(seq 1 100); do url=$(grep -o 'http://[^ ]*' serve.out | head -1); [ -n "$url" ] && break; sleep 0.1; done
[ -n "$url" ] || { cat serve.out serve.err >&2; exit 1; }

check "the UI in $(basename "$chrome")" timeout 300 node "$here/serve/browser_test.js" "$chrome" "$url" "$id" "$kids" "$live" \
  "$SCRATCH/profile" "$SCRATCH/run_page.png" "$sweep" "$sweep_kids" "$dead" "$total" "$failing"
kill -INT $writer; wait $writer
check "the live run ends interrupted, its points kept" test "$(sql1 "select count(*) from metrics where run_id = $live")" -gt 5
finish
