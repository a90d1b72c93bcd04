# tests/cli/repl_tty.sh: the REPL under a terminal (script(1) gives it a pty): Tab completes a
# unique name without a trailing space and completes a value's methods (`x:nume` -> `x:numel`,
# a tensor's, from the method table behind its __index); Ctrl-C stops a pure-Lua loop (one
# LuaJIT would compile, where no hook runs) and the session goes on; Ctrl-C at the prompt drops
# the line being typed (it used to end the session) and the session goes on. The input is
# paced with pauses so that each line reaches the REPL after the one before has run; they are
# generous (the loop is given 2 s to start) and only order the input: no check depends on a duration.
# script(1) runs its command through $SHELL -c (/bin/sh when unset); dash does not exec the
# command, so the shell stayed in the terminal's foreground group and the test's Ctrl-C killed it
# (script then reported 130 while the REPL went on and closed its run ok: CI's SHELL is unset).
# The command `exec`s ltrun, so script's status is ltrun's under any shell; SHELL is set to
# /bin/sh here so that every host runs the case that failed.
source "$(dirname "$0")/common.bash"
command -v script >/dev/null || { echo "script(1) missing"; exit 77; }
export LTRUN_HISTORY=$SCRATCH/history
( (trap '' INT; sleep 3; printf 'x = lt.zeros(3)\n'; sleep 1; printf '="lt.mo\t"\n'; sleep 1; printf '="x:nume\t"\n'; sleep 1
   printf 'while true do y = 1 end\n'; sleep 2; printf '\003'; sleep 1; printf '=40+2\n'; sleep 1
   printf '=1+'; sleep 1; printf '\003'; sleep 1; printf '=41+2\n'; sleep 1; printf '\004') |
  SHELL=/bin/sh script -qfec "exec '$LTRUN' --log" /dev/null >session.out 2>&1
  echo "${PIPESTATUS[*]}" >statuses )
out=$(tr -d '\r' <session.out); rc=$(cut -d' ' -f2 statuses)
[ "$(cat statuses)" = "0 0" ] || { echo "  exit statuses (input, script): $(cat statuses); the session:" >&2; tail -20 <<<"$out" >&2; }
has_line() { grep -qxF -- "$2" <<<"$1" || { echo "  no line '$2' in: $1" >&2; return 1; }; }
check "the session ends normally (Ctrl-D)" equals "$rc" "0"
check "a unique completion has no trailing space" has_line "$out" "lt.model"
check "a tensor's methods complete" has_line "$out" "x:numel"
check "Ctrl-C stops the pure-Lua loop" contains "$out" "interrupted (SIGINT or SIGTERM)"
check "and the session goes on" has_line "$out" "42"
check "Ctrl-C at the prompt drops the line typed (=1+) and the session goes on" has_line "$out" "43"
check "the session is one ok run (--log)" equals "$(sql1 "select name, status from runs")" "repl,ok"
finish
