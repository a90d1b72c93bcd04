# tests/cli/replay_bounds.sh: `rerun --sandbox` is bounded as a reward program is (issue 43
# item 4): memory, processes, disk and wall time, each with a default and a flag, and the
# replay says which bound ended it. The replayed script (harmless when the author ran it)
#  - forks 300 sleeping processes: with --nproc 64 at most 64 start;
#  - allocates 1.5 GB in a tensor: with --memory-mb 1024 it is refused, named;
#  - writes 200 MB into its working folder: with --disk-mb 64 at most 64 MB land, in a tmpfs
#    (nothing on the host disk), named;
#  - loops forever: --timeout 3 ends it after 3 s, and says so.
# Skips (exit 77) where bwrap cannot make namespaces.
SRC=$(cd "$(dirname "$0")/../.." && pwd)
source "$(dirname "$0")/common.bash"
unset LTRUN_MODELS LTRUN_DATA
skip_without_bwrap
export LTRUN_LIB=$SRC/lib TMPDIR=$SCRATCH/tmp
mkdir -p "$TMPDIR"
cat > hog.lua <<'LUA'
local what = ""
for _, a in ipairs({ ... }) do what = a:match("^%-%-do=(.*)") or what end
lt.run.log("started", 1)
if not os.getenv("LTRUN_SANDBOXED") then return end  -- the author's run: nothing
if what == "fork" then
  local p = io.popen([[python3 -c '
import os, time
n = 0
try:
    while n < 300:
        if os.fork() == 0:
            time.sleep(4)
            os._exit(0)
        n += 1
except OSError:
    pass
print(n)' 2>/dev/null]])
  lt.run.log("forks", tonumber(p:read("*a")) or -1)
  p:close()
elseif what == "alloc" then
  lt.run.log("allocating", 1)
  local t = lt.zeros({ 1536 * 1024 * 1024 / 4 })
  lt.run.log("allocated_mb", t:numel() * 4 / 2^20)
elseif what == "disk" then
  local f, mb = io.open("big.bin", "wb"), 0
  for _ = 1, 200 do
    local ok, err = f:write(string.rep("x", 2^20))
    if ok then ok, err = f:flush() end
    if not ok then lt.run.log("written_mb", mb); error(err) end
    mb = mb + 1
  end
  lt.run.log("written_mb", mb)
elseif what == "loop" then
  lt.run.log("looping", 1)
  while true do end
end
LUA
"$LTRUN" hog.lua >/dev/null 2>&1
replay() {  # replay WHAT FLAGS...: the replay's output; its run's id in $new
  local what=$1; shift
  out=$(timeout 60 "$LTRUN" --device cpu rerun 1 --sandbox "$@" --do="$what" </dev/null 2>&1); rc=$?
  echo "$out" | sed 's/^/  | /' >&2
  new=$(sqlite3 runs.db "select max(id) from runs where rerun_of = 1")
}
m() { sqlite3 runs.db "select value from metrics where run_id = $new and name = '$1'"; }

replay fork --nproc 64
check "fork: it says the bound before it starts" contains "$out" "bounds     "
check "fork: at most 64 processes started" equals "$([ "$(m forks | cut -d. -f1)" -ge 0 ] && [ "$(m forks | cut -d. -f1)" -lt 64 ] && echo yes)" "yes"

replay alloc --memory-mb 1024
check "alloc: it began" equals "$(m allocating)" "1.0"
check "alloc: 1.5 GB was not allocated" equals "$(m allocated_mb)" ""
check "alloc: the replay names its memory bound" contains "$out" "the replay failed at its memory bound (--memory-mb 1024)"

replay disk --disk-mb 64
check "disk: at most 64 MB written" equals "$([ "$(m written_mb | cut -d. -f1)" -le 64 ] && echo yes)" "yes"
check "disk: the replay names its disk bound" contains "$out" "the replay failed at its disk bound (--disk-mb 64): "
check "disk: nothing of it on the host" equals "$(find "$SCRATCH" -name big.bin | wc -l)" "0"

t0=$(date +%s)
replay loop --timeout 3
t1=$(date +%s)
check "loop: ended by the wall clock, after about 3 s" equals "$([ $((t1 - t0)) -ge 3 ] && [ $((t1 - t0)) -le 20 ] && echo yes)" "yes"
check "loop: the replay says which bound ended it" contains "$out" "ltrun: rerun --sandbox: the replay was ended by its wall-clock bound (--timeout 3 s); nothing merged"
check "loop: it failed (exit not 0)" equals "$([ "$rc" -ne 0 ] && echo yes)" "yes"

err=$("$LTRUN" rerun 1 --timeout 3 2>&1); rc=$?
check "a bound without --sandbox: refused" contains "$rc $err" "2 ltrun: rerun: --memory-mb, --nproc, --disk-mb and --timeout bound a replay in the sandbox: add --sandbox"
err=$("$LTRUN" rerun 1 --sandbox --nproc 2 2>&1); rc=$?
check "a bound out of range: refused, naming the flag" contains "$rc $err" "2 ltrun: --nproc 2: expected [16, 65536]"
check "no private folder left behind" equals "$(ls "$TMPDIR")" ""
finish
