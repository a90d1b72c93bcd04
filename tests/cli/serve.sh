# tests/cli/serve.sh: `ltrun serve` over HTTP: the JSON API against the store of a real study
# (tests/serve/api_test.js compares with sqlite3), curves that grow while another process
# writes, a writer that is not blocked by the server, the loopback warning, bad stores, the
# Host check (DNS rebinding), slow clients (tests/serve/slow_clients.js), a read-only store.
# Artifacts: tests/cli/serve_artifacts.sh.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)  # tests/, before common.bash changes folder
source "$here/cli/common.bash"
study=$here/serve/study.lua

"$LTRUN" "$study" --out="$SCRATCH/study" 2>study.err || { cat study.err >&2; echo "study failed" >&2; exit 1; }
id=$(sql1 "select id from runs where parent_id is null order by id desc limit 1")

# start_server OUTFILE [ARGS...]: serves in the background, sets $pid and $url
start_server() {
  local out=$1; shift
  "$LTRUN" serve --port 0 "$@" >"$out" 2>"$out.err" & pid=$!
  url=""
  for _ in $(seq 1 100); do
    url=$(grep -o 'http://[^ ]*' "$out" 2>/dev/null | head -1)
    [ -n "$url" ] && return 0
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
  done
  echo "server did not start:" >&2; cat "$out" "$out.err" >&2
  return 1
}

start_server serve.out --sql-timeout 1
check "listens on loopback" contains "$url" "http://127.0.0.1:"
check "API against the study's store" node "$here/serve/api_test.js" "$url" "$LTRUN_DB" "$id" "$SCRATCH/study" "$study"

port=${url##*:}; port=${port%/}
# a second server on the same port: refused (before: both bound it with SO_REUSEPORT and the
# kernel split the connections between two stores; the timeout ends such a second server)
out=$(timeout 10 "$LTRUN" serve --port "$port" 2>&1 </dev/null); rc=$?
check "a second serve on the same port: exit 2" equals "$rc" "2"
check "... naming the port in use" contains "$out" "cannot bind to 127.0.0.1:$port: port $port is in use"
check "... and the first still answers" equals "$(curl -s -o /dev/null -w '%{http_code}' "${url}api/info")" "200"

# DNS rebinding: a page of evil.example, its name pointed at 127.0.0.1, sends Host: evil.example
code() { curl -s -o body.out -w '%{http_code}' "$@"; }
check "a request for another Host is refused" equals "$(code -H 'Host: evil.example' "${url}api/runs")" "403"
check "... saying why" contains "$(cat body.out)" "Host 'evil.example' is refused"
check "... and none of the store" test "$(grep -c '"runs"' body.out)" = 0
check "the UI page too" equals "$(code -H "Host: evil.example:$port" "$url")" "403"
check "Host localhost:PORT is answered" equals "$(code -H "Host: localhost:$port" "${url}api/runs")" "200"
check "Host 127.0.0.1:PORT is answered" equals "$(code "${url}api/runs")" "200"
check "Host [::1]:PORT is answered" equals "$(code -H "Host: [::1]:$port" "${url}api/runs")" "200"
check "no Host header: refused" equals "$(code -H 'Host:' "${url}api/runs")" "403"
check "Host localhost.evil.example: refused" equals "$(code -H 'Host: localhost.evil.example' "${url}api/runs")" "403"

check "a request line over 8 KB: 414" equals "$(code "${url}api/compare?ids=$(seq -s, 10000 12000)")" "414"
check "... saying to send ranges" contains "$(cat body.out)" "many run ids go as ranges"

check "slow clients hold up no one" node "$here/serve/slow_clients.js" "$url"
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'GET /api/info HTTP/1.1\r\nHost: localhost\r\n\r\nGET /api/queries HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' >&3
check "two pipelined requests: two answers" equals "$(timeout 20 cat <&3 | grep -ao 'HTTP/1.1 200 OK' | wc -l)" "2"
exec 3<&-

# live: a run keeps writing; the server sees its series grow; a second writer is not blocked
"$LTRUN" "$here/serve/live.lua" --ready="$SCRATCH/live_ready" --seconds=120 2>live.err & writer=$!
for _ in $(seq 1 300); do [ -s live_ready ] && break; sleep 0.1; done
live_id=$(cat live_ready)
points() { node -e "fetch('${url}api/runs/$live_id/metrics?name=live').then(r => r.json()).then(d => console.log(d.series ? d.series[0].points : 0))"; }
p1=$(points); sleep 1.5; p2=$(points)
check "a running run's series grows while it writes ($p1 -> $p2)" test "$p2" -gt "$p1"
check "its status is running, alive" contains "$(node -e "fetch('${url}api/runs/$live_id').then(r => r.text()).then(console.log)")" '"alive":true'
# (a blocked writer would wait out the store's 120 s busy timeout)
check "a writer is not blocked by the server" timeout 60 "$LTRUN" --log -e 'lt.run.log("x", 1)'
kill -INT $writer; wait $writer
check "the live run ended interrupted" equals "$(sql1 "select status from runs where id = $live_id")" "interrupted"
kill -INT $pid; wait $pid; rc=$?
check "Ctrl-C stops the server cleanly" equals "$rc" "0"

start_server host.out --host 0.0.0.0
check "a non-loopback --host is warned about" contains "$(cat host.out.err)" "not loopback"
kill -TERM $pid; wait $pid

start_server allow.out --allow-host runs.example --allow-host Box.Lan
check "--allow-host: that name is answered" equals "$(code -H 'Host: runs.example' "${url}api/runs")" "200"
check "--allow-host: any case, any port" equals "$(code -H 'Host: box.lan:8080' "${url}api/runs")" "200"
check "--allow-host: others still refused" equals "$(code -H 'Host: evil.example' "${url}api/runs")" "403"
kill -TERM $pid; wait $pid
out=$("$LTRUN" serve --port 0 --allow-host 'evil.example:80' 2>&1); rc=$?
check "--allow-host with a port: exit 2" equals "$rc" "2"
check "... naming it" contains "$out" "--allow-host 'evil.example:80': expected a host name without a port"

# a store this user cannot write (as nobody when root), in a folder it cannot write either
mkdir ro && cp "$LTRUN_DB" ro/runs.db && chmod 444 ro/runs.db && chmod 555 ro
# (setpriv execs the server, so $! is the server's own pid and the kill below reaches it)
as_reader=()
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  as_reader=(setpriv --reuid=nobody --regid=nogroup --clear-groups --); fi
"${as_reader[@]}" "$LTRUN" --db ro/runs.db serve --port 0 >ro.out 2>ro.err & pid=$!
url=""
for _ in $(seq 1 100); do url=$(grep -o 'http://[^ ]*' ro.out); [ -n "$url" ] && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
check "a read-only store is served (before: 'attempt to write a readonly database')" test -n "$url"
[ -n "$url" ] || cat ro.err >&2
check "... its runs listed" contains "$(curl -s "${url}api/runs?parent=none")" "\"id\":$id"
kill -TERM $pid 2>/dev/null; wait $pid
check "... and the server has ended" test ! -e /proc/$pid
check "... and left as it was (no -wal, no -shm)" equals "$(ls ro)" "runs.db"
chmod 755 ro

out=$("$LTRUN" --db "$SCRATCH/none.db" serve --port 0 2>&1); rc=$?
check "a missing store: exit 2" equals "$rc" "2"
check "... naming the file" contains "$out" "none.db: no run store there"
check "... and not creating it" test ! -e "$SCRATCH/none.db"
sqlite3 other.db "create table t(x); insert into t values (1)"
out=$("$LTRUN" --db other.db serve --port 0 2>&1)
check "a SQLite file that is not a run store" contains "$out" "not an ltrun run store"
out=$("$LTRUN" serve --port 99999 2>&1)
check "a bad --port" contains "$out" "--port 99999"
finish
