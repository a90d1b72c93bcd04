# tests/cli/code_tasks.sh: code tasks in the sandbox (tests/cli/code_tasks.lua: the canonical
# solutions of the shipped code files pass, wrong ones fail, the reward on right and wrong
# completions). Skips (exit 77, with bwrap's reason) where bwrap cannot make namespaces, as
# cli.sandbox does; lua.code_tasks checks what needs no sandbox.
SRC=$(cd "$(dirname "$0")/../.." && pwd)
source "$(dirname "$0")/common.bash"

why=$("$LTRUN" -e 'local ok, why = lt.sandbox.available(); print(ok and "ok" or why)' 2>&1)
if [ "$why" != ok ]; then
  echo "SKIP: no sandbox on this machine: $why" >&2
  exit 77
fi
out=$(CODE_TEST_REPO=$SRC CODE_TEST_SCRATCH=$SCRATCH "$LTRUN" "$SRC/tests/cli/code_tasks.lua" 2>err.txt); rc=$?
echo "$out"
[ "$rc" = 0 ] || cat err.txt >&2
check "the sandboxed code task checks (tests/cli/code_tasks.lua)" equals "$rc" "0"
check "the Lua side reported its count" contains "$out" " passed, 0 failed"
finish
