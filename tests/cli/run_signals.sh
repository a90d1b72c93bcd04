# tests/cli/run_signals.sh: a study stopped by SIGTERM (a scheduler, `timeout`), by SIGHUP (a
# closed terminal or ssh session), sent with kill or by a real hang-up of its terminal, ends
# `interrupted`, the child it was in too, with what it logged, exit 130, also under `ltrun
# launch` (issue 46 item 3; before it, SIGHUP killed the process and left both runs `running`).
here=$(cd "$(dirname "$0")" && pwd)  # (common.bash moves into the scratch folder)
source "$here/common.bash"
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }

wait_ready() { for _ in $(seq 1 300); do [ -f ready ] && return 0; sleep 0.1; done; return 1; }
statuses() { sqlite3 runs.db "select group_concat(name || ':' || status, ' ') from (select name, status from runs where id >= $1 order by id)"; }

for sig in TERM HUP; do
  first=$(( $(sqlite3 runs.db 'select coalesce(max(id), 0) from runs' 2>/dev/null || echo 0) + 1 ))
  rm -f ready; "$LTRUN" "$here/spin_child.lua" 2>"err_$sig.txt" & pid=$!
  wait_ready; kill -$sig $pid; wait $pid; rc=$?
  check "SIG$sig: exit 130" equals "$rc" "130"
  check "SIG$sig: the study and its child end interrupted" equals "$(statuses $first)" "spin_child:interrupted lr=1e-3:interrupted"
  check "SIG$sig: what the child logged is kept" equals "$(sql1 "select count(*) from metrics where run_id = $first + 1")" "1"
  check "SIG$sig: it says so" contains "$(cat "err_$sig.txt")" "run $first interrupted"
done

# `ltrun launch`: its ranks run in process groups of their own, out of the terminal's reach; a
# hang-up of the launcher reaches them as SIGTERM, and the launcher waits for them (exit 130)
first=$(( $(sqlite3 runs.db 'select max(id) from runs') + 1 ))
rm -f ready; "$LTRUN" launch --nproc-per-node 2 "$here/spin_child.lua" 2>err_launch.txt & pid=$!
wait_ready; kill -HUP $pid; wait $pid; rc=$?
check "launch, SIGHUP: exit 130" equals "$rc" "130"
check "launch, SIGHUP: rank 0's study and child end interrupted" equals "$(statuses $first)" "spin_child:interrupted lr=1e-3:interrupted"

# a real hang-up: the study on a terminal of its own (a pty), whose far end closes
first=$(( $(sqlite3 runs.db 'select max(id) from runs') + 1 ))
rm -f ready
rc=$(python3 - "$LTRUN" "$here/spin_child.lua" <<'P'
import os, pty, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], sys.argv[2]])
end = time.time() + 30
while not os.path.exists("ready") and time.time() < end:
    try:
        os.read(fd, 65536) if __import__("select").select([fd], [], [], 0.1)[0] else None
    except OSError:
        break
os.close(fd)  # the terminal goes away: the kernel sends SIGHUP to the study
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
P
)
check "a closed terminal: exit 130" equals "$rc" "130"
check "a closed terminal: the study and its child end interrupted" equals "$(statuses $first)" "spin_child:interrupted lr=1e-3:interrupted"
check "no run is left running" equals "$(sql1 "select count(*) from runs where status = 'running'")" "0"
finish
