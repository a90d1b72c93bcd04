# tests/cli/serve_budget.sh: what `ltrun serve` holds in memory (issue 43 item 5; api.h): a
# request that the counts of its rows say is over what one request may hold (--request-mb) is
# a 413 before any of them is read, and all requests in flight together hold at most
# --memory-mb (past it: 503 with Retry-After). Before: 8 concurrent compares of runs with 1.5M
# points each took 1.35 GB, each answered 413 only after reading; here a run of 600k points
# compared with itself, answered 200 after holding some 280 MB each (its points were never
# counted): 8 at once raised the peak by 1.1 GB.
# Memory is the server's own peak RSS (VmHWM) over each phase, reset between phases through
# /proc/PID/clear_refs; no timing in it.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$here/cli/common.bash"
command -v sqlite3 >/dev/null || { echo "sqlite3 is missing"; exit 77; }

"$LTRUN" --log -e 'lt.run.log("loss", 1, 1)' 2>/dev/null
a=$(sql1 "select max(id) from runs")
# run a: 120k points of 4 metrics, and one series of 480k points (7.7 MB as two columns of
# doubles), besides its one loss
sqlite3 "$LTRUN_DB" "
  WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 600000)
  INSERT INTO metrics(run_id, name, step, value, t)
  SELECT $a, CASE WHEN i <= 120000 THEN 'm' || (i % 4) ELSE 'big' END, i, i * 1e-3, 0 FROM n;"

start_server() {  # start_server ARGS...: serves in the background, sets $pid and $url
  "$LTRUN" serve --port 0 "$@" >serve.out 2>serve.err & pid=$!
  url=""
  for _ in $(seq 1 100); do
    url=$(grep -o 'http://[^ ]*' serve.out 2>/dev/null | head -1)
    [ -n "$url" ] && return 0
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
  done
  echo "server did not start:" >&2; cat serve.out serve.err >&2
  return 1
}
kb() { awk -v f="$1:" '$1 == f {print $2}' /proc/$pid/status; }
# the peak so far is set to the current RSS (clear_refs 5); prints that RSS in kB
reset_peak() { echo 5 >/proc/$pid/clear_refs; kb VmRSS; }
# N concurrent GETs of PATH; each one's status line and body into got.K
concurrent() {
  local n=$1 path=$2 pids=()
  for k in $(seq 1 "$n"); do
    curl -s -D got.$k.head -o got.$k --max-time 120 "$url$path" & pids+=($!)
  done
  wait "${pids[@]}"
}

# --- refused before reading: 8 compares of a with itself at once, at the default caps (128 MB a
# request): the counts say 1,200,002 points (about 780 MB), so every one is a 413 naming them,
# and the server's peak grows by less than 48 MB (before: by 1.1 GB, answering 200)
start_server
curl -s -o /dev/null "${url}api/info"
base=$(reset_peak)
concurrent 8 "api/compare?a=$a&b=$a"
rise=$(( $(kb VmHWM) - base ))
echo "  8 compares over the cap: peak RSS rise ${rise} kB"
for k in $(seq 1 8); do
  check "compare $k: 413" contains "$(head -1 got.$k.head)" " 413"
  check "compare $k: naming the points it would read" contains "$(cat got.$k)" "runs $a and $a have 1200002 metric and layer metric points"
done
check "... refused before reading: peak RSS rise ${rise} kB < 48 MB" test "$rise" -lt 49152
kill -INT $pid; wait $pid

# --- the server's bound: --request-mb 8 --memory-mb 16; 12 requests at once for a's series
# (7.7 MB each, under one request's 8): they may not all hold it at once (92 MB), so some wait
# for a turn or get 503 (busy, Retry-After); the peak rise stays under 16 MB and what SQLite and
# the threads take besides (its page caches, 2 MB a connection, and stacks: 48 MB)
start_server --request-mb 8 --memory-mb 16
curl -s -o /dev/null "${url}api/info"
base=$(reset_peak)
concurrent 12 "api/runs/$a/metrics?name=big"
rise=$(( $(kb VmHWM) - base ))
ok=0 busy=0 other=0
for k in $(seq 1 12); do
  case "$(head -1 got.$k.head)" in
    *" 200"*) ok=$((ok + 1)) ;;
    *" 503"*) busy=$((busy + 1))
              check "a 503 says to retry" contains "$(cat got.$k.head)" "Retry-After: 2"
              check "... and why" contains "$(cat got.$k)" "busy: the requests in flight hold" ;;
    *) other=$((other + 1)); head -c 300 got.$k >&2 ;;
  esac
done
echo "  12 series of 480k points at once: $ok answered, $busy busy; peak RSS rise ${rise} kB"
check "each answered 200 or 503" equals "$other" "0"
check "some answered" test "$ok" -gt 0
check "peak RSS rise ${rise} kB < 16 + 48 MB" test "$rise" -lt 65536
check "each 200 holds the series" equals "$(grep -l '"points":480000' $(seq -f got.%g 1 12) | wc -l)" "$ok"
# one request over its own cap: 600k points (9.6 MB) of series, refused before reading
out=$(curl -s "${url}api/compare/metrics?ids=$a&name=big,m0,m1,m2,m3")
check "compare/metrics over --request-mb: 413 before reading" contains "$out" \
  "the 5 metric(s) of the 1 run(s) have 600000 points: about 9 MB in memory, past the 8 MB one request may hold"
kill -INT $pid; wait $pid

out=$("$LTRUN" serve --request-mb 64 --memory-mb 32 2>&1); rc=$?
check "--memory-mb under --request-mb: exit 2" equals "$rc" "2"
check "... naming both" contains "$out" "serve: --memory-mb 32 is less than --request-mb 64: all requests together may hold at least what one may"
# the command line's numbers, each named (before: "ltrun: stoll", and --sql-timeout 0 stopped
# every statement at once)
out=$("$LTRUN" serve --port 99999999999999999999 2>&1); rc=$?
check "--port of 20 digits: exit 2, named" equals "$rc:$out" \
  "2:ltrun: serve: --port expects a non-negative integer (at most 18 digits), got '99999999999999999999'"
out=$("$LTRUN" serve --sql-timeout 0 2>&1); rc=$?
check "--sql-timeout 0: exit 2, named" equals "$rc:$out" "2:ltrun: serve: --sql-timeout 0: expected seconds from 1 to 3600"
finish
