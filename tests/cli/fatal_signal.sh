# tests/cli/fatal_signal.sh: a crash (here a write through a bad pointer from LuaJIT's FFI) dies
# with its signal and says where: the faulting address, the faulting instruction as
# MODULE+OFFSET (for addr2line, also where the backtrace stops), and a native backtrace; the
# run it left `running` is marked crashed when a script next opens the store.
source "$(dirname "$0")/common.bash"
err=$("$LTRUN" --log -e 'lt.run.log("before", 1); lt.run.flush(); local ffi = require "ffi"; ffi.cast("int*", 8)[0] = 1' 2>&1); rc=$?
check "dies with SIGSEGV (exit 139)" equals "$rc" "139"
check "names the signal and the faulting address" contains "$err" "fatal signal Segmentation fault at address 0x0000000000000008"
check "names the faulting instruction by module and offset" contains "$err" "faulting instruction: "
check "... inside a loaded module (+0x)" test -n "$(grep -E 'faulting instruction: [^ ]+\+0x[0-9a-f]{16}' <<<"$err")"
check "prints a native backtrace" contains "$err" "native backtrace (most recent call first):"
"$LTRUN" --log -e '' >/dev/null 2>&1  # a script opens the store: it marks dead runs crashed
check "the run is marked crashed when a script next opens the store, its metric kept" equals \
  "$("$LTRUN" sql "select status, (select count(*) from metrics where name='before') from runs where id=1" --csv | sed -n 2p)" "crashed,1"
finish
