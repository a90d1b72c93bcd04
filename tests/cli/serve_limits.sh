# tests/cli/serve_limits.sh: what `ltrun serve` and `ltrun sql` refuse or bound (issue 34):
# SQL functions that reach outside the store (fts3_tokenizer, load_extension: defect 7), the
# server's memory under many heavy requests at once and after them (defect 4), slow readers
# from loopback that starved a fresh request and a request line over 64 KB answered with nothing
# (defect 15), a parent cycle in an edited store with SIGTERM while a compare runs (defect 2,
# the server's side), and /proc/self/pagemap as an input of a replayed run (defect 5).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)  # tests/, before common.bash changes folder
source "$here/cli/common.bash"
command -v node >/dev/null || { echo "node is missing"; exit 77; }
trap "" PIPE  # writes to a socket the server has closed (the over-long requests)

"$LTRUN" --log -e 'lt.run.log("loss", 1, 1)' 2>/dev/null
a=$(sql1 "select max(id) from runs")
"$LTRUN" --log -e 'lt.run.log("loss", 1, 1)' 2>/dev/null
b=$(sql1 "select max(id) from runs")
"$LTRUN" --log -e 'lt.run.log("loss", 1, 1)' 2>/dev/null
ev=$(sql1 "select max(id) from runs")

# --- defect 7: `ltrun sql`
out=$("$LTRUN" sql "select fts3_tokenizer('simple')" 2>&1); rc=$?
check "ltrun sql: fts3_tokenizer refused (rc $rc)" test "$rc" -ne 0
check "... saying so" contains "$out" "the SQL function fts3_tokenizer() is refused"
check "... no address printed" test "$(grep -c "x'" <<<"$out")" = 0
out=$("$LTRUN" sql --write "select hex(fts3_tokenizer('simple', x'4141414141414141'))" 2>&1)
check "ltrun sql --write: the two-argument form refused" contains "$out" "fts3_tokenizer() is refused"
out=$("$LTRUN" sql "select load_extension('/tmp/nothing.so')" 2>&1)
check "ltrun sql: load_extension refused" contains "$out" "the SQL function load_extension() is refused"

# --- a store for the memory checks: two runs with 400k metric rows each, one with 100 eval
# items of 2 MB prompts, written by SQL (fast) into the store ltrun made
sqlite3 "$LTRUN_DB" "
  WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c LIMIT 400000)
  INSERT INTO metrics(run_id, name, step, value, t) SELECT r, 'm' || (i % 4), i, i * 1e-3, 0 FROM c, (SELECT $a AS r UNION ALL SELECT $b);
  WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c LIMIT 100)
  INSERT INTO eval_items(run_id, bench, item_id, protocol, prediction, answer, correct, prompt, output)
  SELECT $ev, 'b', 'item' || i, 'gen', 'p', 'a', 1, printf('%.*c', 2000000, 'x'), 'o' FROM c;"

start_server() {  # start_server OUTFILE: serves in the background, sets $pid and $url
  "$LTRUN" serve --port 0 >"$1" 2>"$1.err" & pid=$!
  url=""
  for _ in $(seq 1 100); do
    url=$(grep -o 'http://[^ ]*' "$1" 2>/dev/null | head -1)
    [ -n "$url" ] && return 0
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
  done
  echo "server did not start:" >&2; cat "$1" "$1.err" >&2
  return 1
}
start_server serve.out
port=${url##*:}; port=${port%/}

code() { curl -s -o body.out -w '%{http_code}' "$@"; }
q=$(node -e 'console.log(encodeURIComponent(process.argv[1]))' "select fts3_tokenizer('simple')")
check "/api/sql: fts3_tokenizer refused (403)" equals "$(code "${url}api/sql?q=$q")" "403"
check "... saying so" contains "$(cat body.out)" "the SQL function fts3_tokenizer() is refused"

# --- defect 15: a request line over 64 KB gets an answer (before: the connection closed)
long=$(head -c 70000 /dev/zero | tr '\0' 'x')
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'GET /api/info?x=%s HTTP/1.1\r\nHost: localhost\r\n\r\n' "$long" >&3 2>/dev/null
answer=$(timeout 20 head -c 200 <&3)
exec 3<&-
check "a request line over 64 KB: 414" contains "$answer" "HTTP/1.1 414"
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'GET /api/info HTTP/1.1\r\nHost: localhost\r\nX-Long: %s\r\n\r\n' "$long" >&3 2>/dev/null
answer=$(timeout 20 head -c 200 <&3)
exec 3<&-
check "headers over 64 KB: an answer (400 or 431)" contains "$answer" "HTTP/1.1 4"

# --- defect 4 (and 15: 70 unread answers from 127.0.0.1 beside a fresh request)
check "memory under heavy requests is bounded and given back" node "$here/serve/memory.js" "$url" "$pid" "$a" "$b" "$ev"
kill -0 $pid 2>/dev/null && { kill -INT $pid; wait $pid; }

# --- defect 2: two runs each other's parent: a compare of them is answered (before: 12.8 GB and
# no end); SIGTERM with a long request in flight ends the server (before: it waited for it).
# The watch stops the server at 2 GB (it would take the machine otherwise) and after 30 s.
watch() {  # watch SECONDS: until the server ends; 1 if it has not by then or passed 2 GB
  local rss
  for _ in $(seq 1 $(($1 * 10))); do
    kill -0 $pid 2>/dev/null || return 0
    rss=$(awk '/^VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null)
    if [ "${rss:-0}" -gt 2097152 ]; then echo "  RSS ${rss} kB" >&2; kill -9 $pid; return 1; fi
    sleep 0.1
  done
  kill -9 $pid; return 1
}
sqlite3 "$LTRUN_DB" "update runs set parent_id = $b where id = $a; update runs set parent_id = $a where id = $b"
start_server cycle.out --sql-timeout 3600
(curl -s -o cycle.body -w '%{http_code}' --max-time 60 "${url}api/compare?a=$a&b=$b" >cycle.code) & req=$!
answered() {  # until the request $req has ended, stopping the server if it passes 2 GB
  local rss
  while kill -0 $req 2>/dev/null; do
    rss=$(awk '/^VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null)
    if [ "${rss:-0}" -gt 2097152 ]; then echo "  RSS ${rss} kB" >&2; kill -9 $pid; return 1; fi
    sleep 0.1
  done
}
check "the compare of a parent cycle is answered, its memory bounded" answered
kill -0 $pid 2>/dev/null || start_server cycle.out --sql-timeout 3600
wait $req
check "... 409" equals "$(cat cycle.code)" "409"
check "... saying why" contains "$(cat cycle.body)" "form a cycle of parents"
check "... within the memory bound" test "$(awk '/^VmHWM/ {print $2}' /proc/$pid/status)" -lt 2097152
slow=$(node -e 'console.log(encodeURIComponent(process.argv[1]))' \
  "with recursive c(i) as (select 1 union all select i + 1 from c) select count(*) from c")
(curl -s -o /dev/null --max-time 120 "${url}api/sql?q=$slow"; echo done >slow.done) &
sleep 1
kill -TERM $pid
check "SIGTERM with a query of 3600 s in flight: the server ends" watch 30
wait
sqlite3 "$LTRUN_DB" "update runs set parent_id = null where id in ($a, $b)"

# --- defect 5: /proc/self/pagemap as an input the run read (a bundle can declare any)
sqlite3 "$LTRUN_DB" "insert into run_inputs(run_id, kind, path, size, sha256, made) values ($a, 'data', '/proc/self/pagemap', 0, '$(printf x | sha256sum | cut -c1-64)', 0)"
out=$(timeout 20 "$LTRUN" rerun "$a" --yes 2>&1 </dev/null); rc=$?
check "a replay whose input is /proc/self/pagemap: refused at once (rc $rc)" test "$rc" -ne 124 -a "$rc" -ne 0
check "... naming it and why" contains "$out" "/proc/self/pagemap"
check "... not a file on disk" contains "$out" "lies under /proc, /sys or /dev"
finish
