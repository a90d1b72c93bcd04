# tests/cli/store_edges.sh: readers never write or wait for writers, a read-only store file
# is readable, a failing flush reports both errors and closes the run, os.exit keeps the
# metrics, crash detection by boot id + process start time, bounded error text.
source "$(dirname "$0")/common.bash"
status_of() { sqlite3 runs.db "select status from runs where id=$1"; }

"$LTRUN" --log -e 'lt.run.log("loss", 1)' >/dev/null
id=$(sql1 "select max(id) from runs")

# --- readers: no write, no write lock, a read-only file
cp runs.db before.db
"$LTRUN" runs >/dev/null; "$LTRUN" show "$id" >/dev/null; "$LTRUN" sql @status >/dev/null
check "readers leave the file as it was" equals "$(sqlite3 runs.db .dump | md5sum)" "$(sqlite3 before.db .dump | md5sum)"
err=$("$LTRUN" --db missing.db runs 2>&1); rc=$?
check "a reader on a missing store: exit 2, no file made" equals "$rc:$(ls missing.db 2>/dev/null)" "2:"
check "a reader on a missing store: named" contains "$err" "missing.db: no run store there"

if command -v python3 >/dev/null; then  # a writer holding the write lock for 30 s
  python3 -c '
import sqlite3, time, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
db.execute("INSERT INTO params(run_id, key, value) VALUES (1, \"held\", \"x\")")
open("locked", "w").write("1")
time.sleep(30)
db.execute("ROLLBACK")' runs.db & holder=$!
  for _ in $(seq 1 100); do [ -f locked ] && break; sleep 0.1; done
  out=$(timeout 20 "$LTRUN" runs 2>&1); rc=$?
  out2=$(timeout 20 "$LTRUN" sql "select count(*) as n from runs" --csv 2>&1); rc2=$?
  out3=$(timeout 20 "$LTRUN" show "$id" 2>&1); rc3=$?
  check "runs/sql/show beside a writer holding the lock: no wait (before: 120 s, then an error)" equals "$rc:$rc2:$rc3" "0:0:0"
  check "the reader saw the committed rows" equals "$out2" $'n\n1'
  kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
fi

mkdir ro && cp runs.db ro/ && chmod 444 ro/runs.db && chmod 555 ro
as_reader() { if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; else "$@"; fi; }
out=$(as_reader "$LTRUN" --db ro/runs.db runs 2>&1); rc=$?
check "a read-only store file in a read-only folder: runs works" equals "$rc" "0"
check "runs lists the run" contains "$out" "(1 row)"
out=$(as_reader "$LTRUN" --db ro/runs.db sql "select count(*) as n from metrics" --csv 2>&1)
check "a read-only store: sql works" equals "$out" $'n\n1'
out=$(as_reader "$LTRUN" --db ro/runs.db show "$id" 2>&1); rc=$?
check "a read-only store: show works" equals "$rc" "0"
chmod 755 ro

# --- a flush that fails: both errors, the run closed `failed`, later flushes recover
sqlite3 runs.db "CREATE TRIGGER no_metrics BEFORE INSERT ON metrics BEGIN SELECT RAISE(FAIL, 'disk is full (test trigger)'); END;"
"$LTRUN" --log -e 'lt.run.log("x", 1); error("the script failed by itself")' >/dev/null 2>err.txt; rc=$?
fid=$(sql1 "select max(id) from runs")
check "flush fails + script fails: exit 1" equals "$rc" "1"
check "flush fails: the script's own error is reported" contains "$(cat err.txt)" "the script failed by itself"
check "flush fails: the flush error is reported" contains "$(cat err.txt)" "disk is full (test trigger)"
check "flush fails: run closed failed" equals "$(status_of "$fid")" "failed"
check "flush fails: both errors stored" equals "$(sql1 "select instr(error, 'failed by itself') > 0 and instr(error, 'disk is full') > 0 from runs where id=$fid")" "1"
"$LTRUN" --log -e 'lt.run.child("c", function() lt.run.log("x", 1) end)' >/dev/null 2>err.txt; rc=$?
fid=$(sql1 "select max(id) from runs where parent_id is null")
check "a child's flush fails, the script is fine: exit 1" equals "$rc" "1"
check "child and root closed (no run left running)" equals "$(sql1 "select count(*) from runs where status='running'")" "0"
check "the child is failed with the flush error" contains "$(sql1 "select error from runs where parent_id=$fid")" "disk is full"
cat > recover.lua <<'L'
lt.run.log("x", 1)
local ok, err = pcall(lt.run.flush)
assert(not ok and err:find("disk is full"), "the first flush should fail")
assert(err:find("1 rows stay buffered"), err)
os.execute("sqlite3 runs.db 'DROP TRIGGER no_metrics'")  -- the disk has room again
lt.run.flush()
lt.run.log("x", 2)
L
"$LTRUN" recover.lua 2>err.txt; rc=$?
fid=$(sql1 "select max(id) from runs")
check "a later flush recovers: exit 0" equals "$rc:$(cat err.txt)" "0:"
check "a later flush recovers: both rows written" equals "$(sql1 "select count(*) from metrics where run_id=$fid")" "2"
check "a later flush recovers: run ok" equals "$(status_of "$fid")" "ok"
"$LTRUN" --log -e 'print(1)' >/dev/null; cp runs.db dropped.db; sqlite3 dropped.db "DROP TABLE metrics"
"$LTRUN" --db dropped.db --log -e 'lt.run.log("x", 1); error("mine")' >/dev/null 2>err.txt; rc=$?
check "dropped metrics table: exit 1, both errors" equals "$rc:$(grep -c 'mine\|no such table: metrics' err.txt)" "1:2"
check "dropped metrics table: run failed" equals "$(sqlite3 dropped.db "select status from runs order by id desc limit 1")" "failed"

# --- os.exit closes the runs and keeps the buffered metrics
"$LTRUN" --log -e 'for i = 1, 5 do lt.run.log("m", i) end; os.exit(0)' >/dev/null 2>&1; rc=$?
xid=$(sql1 "select max(id) from runs")
check "os.exit(0): exit 0, run ok" equals "$rc:$(status_of "$xid")" "0:ok"
check "os.exit(0): the metrics are kept" equals "$(sql1 "select count(*) from metrics where run_id=$xid")" "5"
"$LTRUN" --log -e 'lt.run.log("m", 1); lt.run.child("c", function() lt.run.log("m", 2); os.exit(3) end)' >/dev/null 2>&1; rc=$?
xid=$(sql1 "select max(id) from runs where parent_id is null")
check "os.exit(3) in a child: exit 3" equals "$rc" "3"
check "os.exit(3): child and root failed with os.exit(3)" equals "$(sql1 "select group_concat(status || ':' || error, ' ') from runs where id=$xid or parent_id=$xid")" "failed:os.exit(3) failed:os.exit(3)"
check "os.exit(3): the metrics of both are kept" equals "$(sql1 "select count(*) from metrics m join runs r on r.id = m.run_id where r.id=$xid or r.parent_id=$xid")" "2"
"$LTRUN" --log -e 'lt.run.log("m", 1); os.exit(true)' >/dev/null 2>&1; rc=$?
check "os.exit(true): exit 0, ok" equals "$rc:$(status_of "$(sql1 "select max(id) from runs")")" "0:ok"

# --- crash detection: boot id + process start time, not host + pid only
host=$(hostname); boot=$(cat /proc/sys/kernel/random/boot_id); machine=$(cat /etc/machine-id 2>/dev/null)
sleep 120 & live=$!
start=$(awk '{print $22}' /proc/$live/stat)
sh -c 'exit 0' & dead=$!; wait $dead
ins() {  # ins NAME PID BOOT MACHINE START
  sqlite3 runs.db "insert into runs(name, status, host, pid, boot_id, machine_id, process_start, started_at)
                   values ('$1', 'running', '$host', $2, $3, $4, $5, '2026-01-01 00:00:00')"; }
ins pid_reused "$live" "'$boot'" "'$machine'" $((start + 1))
ins alive "$live" "'$boot'" "'$machine'" "$start"
ins other_machine "$dead" "'another-boot'" "'another-machine'" 1
[ -n "$machine" ] && ins rebooted "$live" "'an-earlier-boot'" "'$machine'" "$start"
"$LTRUN" runs >/dev/null
check "a reader marks nothing" equals "$(sql1 "select count(*) from runs where status='crashed'")" "0"
"$LTRUN" --log -e 'print(1)' >/dev/null   # the next writer looks
st() { sql1 "select status from runs where name='$1'"; }
check "pid alive but started at another time (reused): crashed" equals "$(st pid_reused)" "crashed"
check "pid reused: said so" contains "$(sql1 "select error from runs where name='pid_reused'")" "now belongs to another process"
check "alive with the same start time: still running" equals "$(st alive)" "running"
check "same host name, another machine: left alone" equals "$(st other_machine)" "running"
[ -n "$machine" ] && check "same machine, an earlier boot: crashed" equals "$(st rebooted)" "crashed"
kill "$live"; wait "$live" 2>/dev/null
check "new runs record boot id and start time" equals "$(sql1 "select boot_id = '$boot' and process_start > 0 from runs where name='-e' order by id desc limit 1")" "1"

# --- the stored error is bounded, nested child-run chains included
"$LTRUN" --log -e 'error(string.rep("x", 200000))' >/dev/null 2>&1
check "a 200 KB error is stored cut to 64 KiB" equals "$(sql1 "select length(error) <= 65536, instr(error, 'bytes cut') > 0 from runs order by id desc limit 1")" "1,1"
cat > nest.lua <<'L'
local function nest(d)
  if d == 0 then error(string.rep("e", 3000)) end
  lt.run.child("level" .. d, function() nest(d - 1) end)
end
nest(150)
L
"$LTRUN" nest.lua >/dev/null 2>&1
root=$(sql1 "select max(id) from runs where parent_id is null")
check "150 nested failing child runs: every error at most 64 KiB" equals "$(sql1 "select max(length(error)) <= 65536, count(*) from runs where id >= $root")" "1,151"
finish
