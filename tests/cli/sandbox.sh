# tests/cli/sandbox.sh: lt.sandbox isolates Python programs (tests/cli/sandbox.lua: network,
# files, processes, memory, time, output, the pool), refuses bad options, and records the
# explicit unsafe_local_exec opt-in on the run. Skips (exit 77, with bwrap's reason) where
# bwrap cannot make namespaces: there lt.sandbox.run refuses, which tests/sandbox checks.
SRC=$(cd "$(dirname "$0")/../.." && pwd)
source "$(dirname "$0")/common.bash"

why=$("$LTRUN" -e 'local ok, why = lt.sandbox.available(); print(ok and "ok" or why)' 2>&1)
if [ "$why" != ok ]; then
  echo "SKIP: no sandbox on this machine: $why" >&2
  exit 77
fi

# a listener on the host's loopback, for the network check (its port goes to the Lua side)
/usr/bin/python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
open("port", "w").write(str(s.getsockname()[1]))
s.settimeout(1)
end = time.time() + 600
while time.time() < end:
    try: s.accept()[0].close()
    except socket.timeout: pass
' &
listener=$!
trap 'kill $listener 2>/dev/null' EXIT
for _ in $(seq 100); do [ -s port ] && break; sleep 0.1; done

out=$(SANDBOX_TEST_PORT=$(cat port) SANDBOX_TEST_REPO=$SRC SANDBOX_TEST_UNIQUE=$$-$RANDOM \
      "$LTRUN" "$SRC/tests/cli/sandbox.lua" 2>err.txt); rc=$?
echo "$out"
[ "$rc" = 0 ] || cat err.txt >&2
check "the isolation checks (tests/cli/sandbox.lua)" equals "$rc" "0"
check "the Lua side reported its count" contains "$out" " passed, 0 failed"

# unsafe_local_exec: a warning on stderr and the param on the run
err=$("$LTRUN" -e 'assert(lt.sandbox.run{code = "print(1)", unsafe_local_exec = true}.stdout == "1\n")' 2>&1)
check "unsafe_local_exec warns on stderr" contains "$err" "warning: unsafe_local_exec: running Python WITHOUT a sandbox"
check "unsafe_local_exec is a param of the run" equals \
  "$(sql1 "select value from params where key = 'unsafe_local_exec' and run_id = (select max(id) from runs)")" "true"
"$LTRUN" --log -e 'lt.sandbox.run{code = "print(1)"}' >/dev/null 2>&1
check "a sandboxed run has no such param" equals \
  "$(sql1 "select count(*) from params where key = 'unsafe_local_exec' and run_id = (select max(id) from runs)")" "0"

finish
