# tests/cli/layer_scan_kill.sh: experiments/layer_scan/layer_scan.lua when processes die.
# 1. kill -9 of the scheduler: its workers end with it (none keeps training, adopted by PID 1);
#    --resume=true right after waits for a worker that is still alive (one stopped with
#    SIGSTOP) instead of starting its job beside it, and runs each job that has no ok run
#    once: no job has two ok runs, and no run is left `running`.
# 2. a worker killed mid-job: the scan finishes the other jobs, then exits non-zero, its run
#    `failed` with an error naming the job; the jobs that ended ok keep their runs and scores.
# Jobs train for 10^6 steps, so a job ends only when it is killed; everything waits on polled
# conditions with generous timeouts (a loaded 2-core machine), never on fixed sleeps.
root=$(realpath "$(dirname "$0")/../..")
source "$(dirname "$0")/common.bash"
"$LTRUN" model new --layers 2 --hidden 32 --heads 2 --kv-heads 1 --vocab 400 m >/dev/null 2>&1
opts=(--algo=causal_lm --model=m --layers=0 --lr=0.01 --seq_len=32 --micro_batch=4 --bench_limit=8 --workers=2 --min_gap=0)

# alive PID: the process exists and has not ended (a zombie, unreaped where PID 1 does not
# reap orphans, has ended)
alive() { [ -r "/proc/$1/stat" ] && ! grep -qE '^[0-9]+ \(.*\) [ZX]' "/proc/$1/stat" 2>/dev/null; }
# wait_for SECONDS COMMAND...: polls until the command succeeds; false after SECONDS
wait_for() {
  local end=$((SECONDS + $1)); shift
  until "$@"; do [ "$SECONDS" -ge "$end" ] && return 1; sleep 0.2; done
}
running_jobs() {  # the pids of the scan's job runs that are `running`, one a line
  "$LTRUN" sql "select c.pid from runs c join runs s on s.id=c.parent_id where s.name='layer_scan' and s.pid=$1
                and c.status='running' and c.name in ('full','layer_0') order by c.pid" --csv 2>/dev/null | tail -n +2
}
two_running() { [ "$(running_jobs "$1" | wc -l)" = 2 ]; }
none_alive() { local p; for p in "$@"; do alive "$p" && return 1; done; return 0; }
leftovers=()
cleanup() { local p; for p in "${leftovers[@]}"; do alive "$p" && kill -9 "$p" 2>/dev/null; done; }
trap cleanup EXIT

# ---- 1. the scheduler killed -------------------------------------------------------------------
"$LTRUN" --seed 5 "$root/experiments/layer_scan/layer_scan.lua" "${opts[@]}" --steps=1000000 --scan_key=kill1 \
  >scan1.out 2>scan1.err &
scan=$!
check "two jobs training" wait_for 300 two_running "$scan"
workers=($(running_jobs "$scan"))
leftovers+=("${workers[@]}")
# full's worker is stopped first, so that it cannot act on its parent-death signal yet: it
# stands for a worker still winding down when the resume starts
stopped=$(sql1 "select pid from runs where name='full' and status='running'")
other=$(sql1 "select pid from runs where name='layer_0' and status='running'")
kill -STOP "$stopped"
kill -9 "$scan"
wait "$scan" 2>/dev/null
check "the running worker ended with its scheduler (pid $other)" wait_for 120 none_alive "$other"

"$LTRUN" --seed 5 "$root/experiments/layer_scan/layer_scan.lua" "${opts[@]}" --steps=3 --scan_key=kill1 --resume=true \
  >resume.out 2>resume.err &
resume=$!
held() { grep -qF "full is held by process $stopped" resume.err; }
check "the resume waits for the live holder of full" wait_for 300 held
check "and starts no second full meanwhile" equals "$(sql1 "select count(*) from runs where name='full'")" "1"
kill -CONT "$stopped"
check "the stopped worker ends once it runs again" wait_for 120 none_alive "$stopped"
wait "$resume"; rc=$?
check "resume exits 0" equals "$rc" "0"
[ "$rc" = 0 ] || cat resume.err >&2
check "resume skipped base (ok before the kill)" contains "$(cat resume.err)" "1 job(s) already have an ok run, skipped: base"
check "each job has exactly one ok run" equals \
  "$(sql1 "select group_concat(name || '=' || n, ' ') from (select name, count(*) n from runs where status='ok'
           and name in ('base','full','layer_0') group by name order by name)")" "base=1 full=1 layer_0=1"
check "no run left running" equals "$(sql1 "select count(*) from runs where status='running'")" "0"
check "the killed workers' runs ended interrupted or crashed" equals \
  "$(sql1 "select count(*) from runs where pid in (${workers[0]}, ${workers[1]}) and status in ('interrupted','crashed')")" "2"
check "the analysis found every job's ok run" contains "$(cat resume.out)" "S_base = "

# ---- 2. a worker killed: the scan fails naming it, the ok jobs are kept ------------------------
"$LTRUN" --seed 5 "$root/experiments/layer_scan/layer_scan.lua" "${opts[@]}" --steps=1000000 --scan_key=kill2 \
  >scan2.out 2>scan2.err &
scan=$!
check "two jobs training (2)" wait_for 300 two_running "$scan"
victims=($(running_jobs "$scan"))
leftovers+=("${victims[@]}")
kill -9 "${victims[@]}"
wait "$scan"; rc=$?
check "the scan exits non-zero when a job crashed" equals "$rc" "1"
scan_run=$(sql1 "select id from runs where name='layer_scan' and pid=$scan")
check "the scan's run is failed" equals "$(sql1 "select status from runs where id=$scan_run")" "failed"
err=$(sql1 "select error from runs where id=$scan_run")
check "its error names the crashed jobs" contains "$err" "job full crashed"
check "its error names the crashed jobs (layer_0)" contains "$err" "job layer_0 crashed"
check "the message is on stderr" contains "$(cat scan2.err)" "did not end ok"
check "base's ok run and score are kept" equals \
  "$(sql1 "select count(*) from runs r join metrics m on m.run_id=r.id and m.name='score'
           where r.parent_id=$scan_run and r.name='base' and r.status='ok'")" "1"
check "the scan logged its counts before failing" equals \
  "$(sql1 "select value from metrics where run_id=$scan_run and name='jobs_crashed'")" "2"
finish
