# tests/cli/rm_mark.sh: `ltrun rm RUN...` removes runs with the runs under them, their rows and
# the store's copies of their artifacts, after asking (--yes: without); it refuses without a
# terminal to ask on and refuses a run that is still running. `ltrun mark RUN... STATUS` closes a
# stale run (and its children left running) by hand, and refuses a live one (issue 46 item 3).
here=$(cd "$(dirname "$0")" && pwd)  # (common.bash moves into the scratch folder)
source "$here/common.bash"
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }

cat > sweep.lua <<'L'
for _, lr in ipairs({ "1e-3", "1e-2" }) do
  lt.run.child("lr=" .. lr, function()
    lt.run.param("lr", lr)
    lt.run.log("loss", 1)
    local f = io.open("fig_" .. lr .. ".txt", "w"); f:write("figure " .. lr); f:close()
    lt.run.artifact("fig_" .. lr .. ".txt")
  end)
end
L
"$LTRUN" sweep.lua >/dev/null 2>&1
"$LTRUN" sweep.lua >/dev/null 2>&1  # a second sweep: its artifacts have the same contents
"$LTRUN" --log -e 'lt.run.log("x", 1)' --run-name keep >/dev/null 2>&1
first=$(sql1 "select min(id) from runs where name = 'sweep'")
second=$(sql1 "select max(id) from runs where name = 'sweep'")
rows() { sql1 "select (select count(*) from runs) || ' ' || (select count(*) from metrics) || ' ' || (select count(*) from params) || ' ' || (select count(*) from artifacts)"; }
before=$(rows)
check "the store before: 7 runs, 5 metrics, 4 params, 4 artifacts" equals "$before" "7 5 4 4"
copies() { find runs.db.artifacts -type f | wc -l | tr -d ' '; }
check "two artifact copies (one per content)" equals "$(copies)" "2"

out=$("$LTRUN" rm "$first" </dev/null 2>&1); rc=$?
check "rm without --yes and no terminal: exit 2" equals "$rc" "2"
check "... says to pass --yes" contains "$out" "pass --yes"
check "... names what it would remove" contains "$out" "2 runs under it, 2 artifacts"
check "... and removes nothing" equals "$(rows)" "$before"

# on a terminal it asks; anything but y keeps the runs
ask() {  # ask ANSWER RUN...: ltrun rm RUN... on a terminal, answering ANSWER; prints its output and exit code
  python3 - "$LTRUN" "$@" <<'P'
import os, pty, select, sys, time
ltrun, answer, runs = sys.argv[1], sys.argv[2], sys.argv[3:]
pid, fd = pty.fork()
if pid == 0:
    os.execv(ltrun, [ltrun, "rm"] + runs)
buf, end = b"", time.time() + 60
while b"[y/N]" not in buf and time.time() < end:
    if select.select([fd], [], [], 0.2)[0]:
        try:
            buf += os.read(fd, 65536)
        except OSError:
            break
os.write(fd, (answer + "\n").encode())
while True:
    try:
        data = os.read(fd, 65536)
    except OSError:
        break
    if not data:
        break
    buf += data
_, status = os.waitpid(pid, 0)
print(buf.decode("utf-8", "replace").replace("\r", ""))
print("exit", os.waitstatus_to_exitcode(status))
P
}
out=$(ask n "$first")
check "rm on a terminal asks" contains "$out" "Remove 3 runs for good? [y/N]"
check "... answered n: nothing removed, exit 2" contains "$out" "nothing removed"
check "... the store as before" equals "$(rows)" "$before"
out=$(ask y "$first")
check "... answered y: removed" contains "$out" "removed 3 runs"
check "... exit 0" contains "$out" "exit 0"
check "the sweep, its children and their rows are gone" equals "$(rows)" "4 3 2 2"
check "the other sweep is untouched" equals "$(sql1 "select count(*) from runs where id = $second or parent_id = $second")" "3"
check "artifact copies the other sweep shares stay" equals "$(copies)" "2"
check "the files the run wrote stay" equals "$(cat fig_1e-3.txt)" "figure 1e-3"

out=$("$LTRUN" rm "$second" --yes); rc=$?
check "rm --yes: exit 0 without asking" equals "$rc" "0"
check "rm --yes: removed with its children and artifact copies" contains "$out" "removed 3 runs from $LTRUN_DB (2 under the named ones), 2 artifact copies"
check "rm --yes: only 'keep' is left" equals "$(sql1 "select group_concat(name) from runs")" "keep"
check "rm --yes: no copy left" equals "$(copies)" "0"
out=$("$LTRUN" rm 999 --yes 2>&1); rc=$?
check "rm of a missing run: exit 2, named" equals "$rc $(grep -c 'no run with id 999' <<<"$out")" "2 1"

# a running run: rm and mark refuse it; once its process is killed, mark closes it
wait_ready() { for _ in $(seq 1 300); do [ -f ready ] && return 0; sleep 0.1; done; return 1; }
rm -f ready; "$LTRUN" "$here/spin_child.lua" 2>/dev/null & pid=$!
wait_ready
loop=$(sql1 "select id from runs where name = 'spin_child'")
out=$("$LTRUN" rm "$loop" --yes 2>&1); rc=$?
check "rm of a running run: exit 2" equals "$rc" "2"
check "rm of a running run: says so" contains "$out" "still running, nothing removed"
out=$("$LTRUN" mark "$loop" interrupted 2>&1); rc=$?
check "mark of a live run: exit 2" equals "$rc" "2"
check "mark of a live run: says so" contains "$out" "is alive"
kill -KILL $pid; wait $pid 2>/dev/null
check "killed: it stays running in the store" equals "$(sqlite3 runs.db "select group_concat(status) from runs where id >= $loop")" "running,running"
check "runs: the process is gone" contains "$("$LTRUN" runs --name spin_child)" "running (process gone)"
out=$("$LTRUN" mark "$loop" interrupted); rc=$?
check "mark: exit 0" equals "$rc" "0"
check "mark: the run and the child left running with it" equals "$(sqlite3 runs.db "select group_concat(status) from runs where id >= $loop")" "interrupted,interrupted"
check "mark: the reason kept" contains "$(sql1 "select error from runs where id = $loop")" "ended without closing the run"
check "mark: an end time set" equals "$(sql1 "select count(*) from runs where id >= $loop and finished_at is null")" "0"
# a run left running on another host cannot be judged from here: rm refuses it, mark closes it
sqlite3 runs.db "update runs set status = 'running', finished_at = null, host = 'elsewhere' where id = $loop"
out=$("$LTRUN" rm "$loop" --yes 2>&1); rc=$?
check "rm of a run running elsewhere: exit 2, says so" equals "$rc $(grep -c 'another host' <<<"$out")" "2 1"
out=$("$LTRUN" mark "$loop" crashed); rc=$?
check "mark of a run running elsewhere: exit 0" equals "$rc" "0"
check "... crashed" equals "$(sql1 "select status from runs where id = $loop")" "crashed"
out=$("$LTRUN" mark "$loop" running 2>&1); rc=$?
check "mark ... running: refused" equals "$rc $(grep -c 'not a status a run can be marked' <<<"$out")" "2 1"
out=$("$LTRUN" rm "$loop" --yes); rc=$?
check "rm once it is closed" equals "$rc $(sql1 "select count(*) from runs where id >= $loop")" "0 0"
finish
