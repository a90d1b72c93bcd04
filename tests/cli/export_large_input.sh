# tests/cli/export_large_input.sh: `export --with-inputs` never drops an input and says it kept it
# (issue 43 item 2). A run read a 1.1 GB file (sparse: nothing on disk), more than one SQLite
# value can hold (1,000,000,000 bytes): with a cap that allows it (--max-input-mb 3000) the
# export is an error naming the input and the limit, nothing is written, and within a 1.5 GB
# address space (the file is never read whole into memory). An input that fits travels, streamed, and
# imports byte for byte.
source "$(dirname "$0")/common.bash"
command -v sha256sum >/dev/null && command -v truncate >/dev/null || { echo "SKIP: coreutils" >&2; exit 77; }

printf 'lt.run.log("x", 1)\n' > study.lua
"$LTRUN" study.lua >/dev/null 2>&1
truncate -s 1100000000 big.bin
printf 'small input\n' > small.txt
record() {  # record FILE: the run read FILE (as ltrun records a data input)
  sqlite3 runs.db "insert into run_inputs(run_id, kind, path, size, sha256) values (1, 'data', '$PWD/$1', \
    $(stat -c %s "$1"), '$(sha256sum "$1" | cut -d' ' -f1)')"
}
record small.txt
record big.bin

# within a 1.5 GB address space: the file is never read whole into memory
out=$( (ulimit -v 1500000; "$LTRUN" export 1 --with-inputs --max-input-mb 3000 -o run.ltrun) 2>&1); rc=$?
check "an input past what a bundle holds: an error (exit 2)" equals "$rc" "2"
check "the error names the input, its size and the limit" contains "$out" \
  "ltrun: export --with-inputs: data $PWD/big.bin of run 1 is 1.0 GiB (1100000000 bytes), more than one bundle can hold of one file (1000000000 bytes"
check "it never claims to have carried it" equals "$(grep -c 'with the bytes of' <<<"$out")" "0"
check "nothing is written (no bundle, no partial file)" equals "$(ls run.ltrun* 2>/dev/null)" ""

# without the big one, the small input travels and comes back byte for byte
sqlite3 runs.db "delete from run_inputs where path = '$PWD/big.bin'"
out=$("$LTRUN" export 1 --with-inputs -o run.ltrun 2>&1); rc=$?
check "an input that fits: exported" contains "$rc $out" "0 exported run 1"
check "it says what it carries" contains "$out" "with the bytes of 1 input file(s) (12 bytes)"
check "the bundle holds it" equals "$(sqlite3 run.ltrun "select size || ' ' || sha256 from input_files")" \
  "12 $(sha256sum small.txt | cut -d' ' -f1)"
mkdir B
out=$(cd B && "$LTRUN" --db b.db import ../run.ltrun 2>&1); rc=$?
check "it imports" contains "$rc $out" "0 imported ../run.ltrun"
sha=$(sha256sum small.txt | cut -d' ' -f1)
check "the restored copy is the file, byte for byte" equals "$(cat "B/b.db.inputs/sha256/${sha:0:2}/$sha")" "small input"
finish
