# tests/cli/kill_share.sh: kill -9 during an export and during an import leaves nothing half
# done that blocks or misleads (issue 43 item 8). The run read a 150 MB input (sparse), so
# both take long enough to be killed midway, at a point found by watching their files:
#  - an export killed while it writes the input: no FILE, and the next export of the same
#    FILE succeeds and leaves no FILE.partial* behind;
#  - an import killed while it restores the input: no run without its input copy, no
#    temporary file left once the next import has run, which completes it;
#  - an import killed the moment its run appears: the input copy is there already, whole.
# Each time the store passes SQLite's integrity check.
source "$(dirname "$0")/common.bash"
command -v sha256sum >/dev/null && command -v truncate >/dev/null || { echo "SKIP: coreutils" >&2; exit 77; }

printf 'lt.run.log("x", 1)\n' > study.lua
"$LTRUN" study.lua >/dev/null 2>&1
truncate -s 150000000 big.bin
sha=$(sha256sum big.bin | cut -d' ' -f1)
sqlite3 runs.db "insert into run_inputs(run_id, kind, path, size, sha256) values (1, 'data', '$PWD/big.bin', \
  150000000, '$sha')"
size_of() { du -cb "$@" 2>/dev/null | tail -1 | cut -f1; }
wait_for() {  # wait_for PID CONDITION...: until the condition holds (or PID ends); 0 if it held
  local i
  for i in $(seq 1 1500); do
    if eval "$2"; then return 0; fi
    kill -0 "$1" 2>/dev/null || return 1
    sleep 0.01
  done
  return 1
}

"$LTRUN" export 1 --with-inputs --max-input-mb 1000 -o clean.ltrun >/dev/null 2>&1
check "a bundle to import, exported without a kill" equals "$(sqlite3 clean.ltrun 'select count(*) from input_files')" "1"

# --- export, killed while it writes the input
"$LTRUN" export 1 --with-inputs --max-input-mb 1000 -o run.ltrun >/dev/null 2>&1 &
pid=$!
wait_for $pid '[ "$(size_of run.ltrun.partial*)" -gt 20000000 ]'; held=$?
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
check "export: killed midway (its partial file seen growing)" equals "$held" "0"
check "export: no FILE after the kill" equals "$(ls run.ltrun 2>/dev/null)" ""
out=$("$LTRUN" export 1 --with-inputs --max-input-mb 1000 -o run.ltrun 2>&1); rc=$?
check "export: the next export of the same FILE succeeds" contains "$rc $out" "0 exported run 1"
check "export: nothing left beside it" equals "$(ls run.ltrun* | tr '\n' ' ')" "run.ltrun "
check "export: the bundle is whole" equals "$(sqlite3 run.ltrun 'pragma integrity_check')" "ok"

# --- import, killed while it restores the input
copy=B/b.db.inputs/sha256/${sha:0:2}/$sha
mkdir B
(cd B && exec "$LTRUN" --db b.db import --max-input-mb 1000 ../clean.ltrun >/dev/null 2>&1) &
pid=$!
wait_for $pid '[ "$(size_of B/b.db.inputs/sha256/*/.incoming-* 2>/dev/null)" -gt 10000000 ]'; held=$?
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
check "import: killed while restoring the input" equals "$held" "0"
runs_then=$(sqlite3 B/b.db "select count(*) from runs" 2>/dev/null || echo 0)
check "import: no run arrived without its input copy" equals \
  "$([ "$runs_then" = 0 ] || [ "$(sha256sum < "$copy" 2>/dev/null | cut -d' ' -f1)" = "$sha" ] && echo yes)" "yes"
out=$(cd B && "$LTRUN" --db b.db import --max-input-mb 1000 ../clean.ltrun 2>&1); rc=$?
check "import: the next import succeeds" contains "$rc $out" "0 imported ../clean.ltrun"
check "import: the run is there once" equals "$(sqlite3 B/b.db 'select count(*) from runs')" "1"
check "import: its input copy is whole" equals "$(sha256sum < "$copy" | cut -d' ' -f1)" "$sha"
check "import: no temporary file left" equals "$(find B/b.db.inputs -name '.incoming-*' | wc -l)" "0"
check "import: the store is whole" equals "$(sqlite3 B/b.db 'pragma integrity_check')" "ok"

# --- import, killed the moment its run appears
mkdir C
(cd C && exec "$LTRUN" --db c.db import --max-input-mb 1000 ../clean.ltrun >/dev/null 2>&1) &
pid=$!
wait_for $pid '[ "$(sqlite3 C/c.db "select count(*) from runs" 2>/dev/null)" = 1 ]'
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
check "import: the run appeared" equals "$(sqlite3 C/c.db 'select count(*) from runs')" "1"
check "import: when it appears, its input copy is there, whole" equals \
  "$(sha256sum < "C/c.db.inputs/sha256/${sha:0:2}/$sha" 2>/dev/null | cut -d' ' -f1)" "$sha"
check "import: the store is whole" equals "$(sqlite3 C/c.db 'pragma integrity_check')" "ok"
finish
