# tests/cli/repl.sh: the REPL fed from a pipe: expressions, =expr, multi-line chunks, errors
# that do not end the session, and with --log the session stored as a replayable run (without,
# neither a REPL session nor an -e chunk is stored).
source "$(dirname "$0")/common.bash"

out=$(printf '%s\n' 'x = 20' '=x + 1' 'x * 2' 'function f(a)' '  return a * 3' 'end' 'error("oops")' '=f(x)' 'lt.run.log("r", 1)' | "$LTRUN" --log 2>err.txt)
check "values printed, errors survived" equals "$out" $'21\n40\n60'
check "error reported" contains "$(cat err.txt)" "oops"
check "repl is a run" equals "$(sql1 "select name, status from runs")" "repl,ok"
check "transcript holds the chunks that ran" equals "$(sql1 "select instr(script_text, 'function f(a)') > 0 from runs")" "1"
check "failed chunks are not in the transcript" equals "$(sql1 "select instr(script_text, 'oops') from runs")" "0"
check "logged from the REPL" equals "$(sql1 "select count(*) from metrics")" "1"
out=$("$LTRUN" rerun 1 --yes 2>/dev/null; echo rc=$?)
check "a REPL session can be rerun" contains "$out" "rc=0"
# a LibTorch error reads as its message, without LibTorch's C++ backtrace, on stderr and in
# the run's stored error (issue 27 item 12)
"$LTRUN" --log -e 'print(lt.zeros(2, 3):matmul(lt.zeros(4, 5)))' >/dev/null 2>err.txt
check "a LibTorch error: its message" contains "$(cat err.txt)" "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"
check "... without the C++ backtrace" equals "$(grep -c 'Exception raised from\|frame #' err.txt)" "0"
check "... nor in runs.error" equals "$(sql1 "select instr(error, 'frame #') + instr(error, 'Exception raised from') from runs order by id desc limit 1")" "0"
# without --log neither the REPL nor -e stores a run (issue 38 item 5)
count() { [ -e "$1" ] && "$LTRUN" --db "$1" sql "select count(*) from runs" --csv | sed -n 2p || echo 0; }
out=$(printf '%s\n' 'lt.run.log("r", 1)' '=1 + 1' | "$LTRUN" --db nolog.db 2>&1)
check "the REPL without --log still runs and logs" equals "$out" "2"
"$LTRUN" --db nolog.db -e 'lt.run.log("r", 1)'
check "... and stores nothing, nor does -e" equals "$(count nolog.db)" "0"
"$LTRUN" --db log.db --log -e 'lt.run.log("r", 1)'
check "-e --log stores the run" equals "$(count log.db)" "1"
# ... and an unlogged -e or REPL still reads the --db store (analysis of past runs adds no run)
check "-e without --log: lt.run.query reads --db" equals \
  "$("$LTRUN" --db log.db -e 'print(#lt.run.query("select id from runs"))' 2>&1)" "1"
check "the REPL without --log: lt.run.query reads --db" equals \
  "$(printf '%s\n' '=#lt.run.query("select id from runs")' | "$LTRUN" --db log.db 2>&1)" "1"
check "... and neither added a run" equals "$(count log.db)" "1"
finish
