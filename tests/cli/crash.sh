# tests/cli/crash.sh: a killed process leaves its run `crashed`; Ctrl-C leaves it
# `interrupted` with what it logged; four processes write one DB at once.
source "$(dirname "$0")/common.bash"

cat > loop.lua <<'L'
lt.run.log("started", 1)
lt.run.flush()
local f = io.open("ready", "w"); f:write("1"); f:close()
local x = lt.zeros(1)
while true do x = x + 1 end   -- runs until a signal
L
wait_ready() { for _ in $(seq 1 100); do [ -f ready ] && return 0; sleep 0.1; done; return 1; }

rm -f ready; "$LTRUN" loop.lua 2>/dev/null & pid=$!
wait_ready; kill -KILL $pid; wait $pid 2>/dev/null
check "killed run still says running" equals "$(sqlite3 runs.db "select status from runs order by id desc limit 1")" "running"
"$LTRUN" runs >/dev/null
check "a reader (runs) leaves it as it is" equals "$(sqlite3 runs.db "select status from runs order by id desc limit 1")" "running"
"$LTRUN" --log -e 'print(1)' >/dev/null
check "the next writer marks it crashed" equals "$(sql1 "select status from runs order by id desc limit 1 offset 1")" "crashed"

rm -f ready; "$LTRUN" loop.lua 2>err.txt & pid=$!
wait_ready; kill -INT $pid; wait $pid; rc=$?
check "Ctrl-C exits 130" equals "$rc" "130"
check "Ctrl-C marks interrupted" equals "$(sql1 "select status from runs order by id desc limit 1")" "interrupted"
check "what it logged is kept" equals "$(sql1 "select count(*) from metrics where run_id=(select max(id) from runs)")" "1"
check "message says interrupted" contains "$(cat err.txt)" "interrupted"

rm -f ready; "$LTRUN" loop.lua 2>/dev/null & pid=$!
wait_ready; kill -TERM $pid; wait $pid; rc=$?
check "SIGTERM (a scheduler's stop) exits 130" equals "$rc" "130"
check "SIGTERM marks interrupted" equals "$(sql1 "select status from runs order by id desc limit 1")" "interrupted"

# a pure-Lua loop (no calls into C++) stops too, through the debug hook
printf 'local f = io.open("ready", "w"); f:write("1"); f:close()\nlocal n = 0\nwhile true do n = n + 1 end\n' > spin.lua
rm -f ready; "$LTRUN" spin.lua 2>/dev/null & pid=$!
wait_ready; sleep 0.2; kill -INT $pid
for _ in $(seq 1 50); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
if kill -0 $pid 2>/dev/null; then kill -KILL $pid; check "pure Lua loop stops on Ctrl-C" false; else
  wait $pid; check "pure Lua loop: exit 130" equals "$?" "130"; fi

# four writers at once
cat > writer.lua <<'L'
for i = 1, 2000 do lt.run.log("loss", i); if i % 300 == 0 then lt.run.flush() end end
lt.run.log_layers("w", {1, 2, 3, 4})
L
for w in 1 2 3 4; do "$LTRUN" writer.lua 2>"w$w.err" & done; wait
check "no writer failed" equals "$(cat w*.err)" ""
check "all rows there" equals "$(sql1 "select count(*) from metrics where name='loss'")" "8000"
check "all runs ok" equals "$(sql1 "select count(*) from runs where name='writer' and status='ok'")" "4"
finish
