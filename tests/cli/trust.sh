# tests/cli/trust.sh: a shared store is data, not an executable: rerun checks the script hash
# and asks first, `sql` reads only unless --write, named queries come from ltrun or a folder
# named on the command line, and text from the store reaches the terminal escaped.
SRC=$(cd "$(dirname "$0")/../.." && pwd)
source "$(dirname "$0")/common.bash"
ESC=$'\e'
runs_count() { sqlite3 runs.db "select count(*) from runs"; }

# --- rerun: the stored text must hash to script_sha256, and a person (or --yes) says go
printf 'print("original")\n' > s.lua
"$LTRUN" s.lua >/dev/null
id=$(sql1 "select max(id) from runs")
out=$("$LTRUN" show "$id" --script)
check "show --script prints the stored script" equals "$out" 'print("original")'
n=$(runs_count)
err=$("$LTRUN" rerun "$id" </dev/null 2>&1); rc=$?
check "rerun without a terminal and without --yes: refused (exit 2)" equals "$rc" "2"
check "rerun without --yes: says to pass --yes" contains "$err" "pass --yes"
check "rerun shows where the script came from" contains "$err" "host $(hostname)"
check "rerun shows the script path" contains "$err" "$PWD/s.lua"
check "rerun without --yes: nothing ran" equals "$(runs_count)" "$n"
out=$("$LTRUN" rerun "$id" --yes 2>err.txt)
check "rerun --yes runs it" equals "$out" "original"
check "rerun --yes says it runs unsandboxed, with the user's rights" contains "$(cat err.txt)" \
  "it runs UNSANDBOXED, with the full rights of this user"
check "rerun without --yes: says it would run unsandboxed" contains "$err" "UNSANDBOXED"
if command -v script >/dev/null; then  # on a terminal it asks (util-linux script gives a pty)
  out=$(printf 'n\n' | SHELL=/bin/sh script -qec "exec '$LTRUN' rerun $id" /dev/null 2>&1)
  check "answering n on a terminal: not run" contains "$out" "not run"
  check "on a terminal it asks whether to run it unsandboxed" contains "$out" "Run it unsandboxed? [y/N]"
  check "answering n: no output of the script" equals "$(grep -c '^original' <<<"$out")" "0"
  out=$(printf 'y\n' | SHELL=/bin/sh script -qec "exec '$LTRUN' rerun $id" /dev/null 2>&1)
  check "answering y on a terminal: it runs" contains "$out" "original"
fi

sqlite3 runs.db "update runs set script_text = 'print(\"tampered\")' where id = $id"
n=$(runs_count)
out=$("$LTRUN" rerun "$id" --yes 2>err.txt); rc=$?
check "tampered script: refused (exit 2)" equals "$rc" "2"
check "tampered script: nothing printed by it" equals "$out" ""
check "tampered script: the hash mismatch is named" contains "$(cat err.txt)" "does not match its script_sha256"
check "tampered script: no new run" equals "$(runs_count)" "$n"

# --- sql reads only, unless --write
n=$(runs_count)
for q in "DELETE FROM runs" "DROP TABLE metrics" "UPDATE runs SET status = 'ok'" "PRAGMA user_version = 0" \
         "VACUUM INTO 'copy.db'" "ATTACH 'other.db' AS o" "PRAGMA query_only = 0; DELETE FROM runs" \
         "CREATE TABLE t(x)" "VACUUM"; do
  err=$("$LTRUN" sql "$q" 2>&1); rc=$?
  check "sql refuses \`$q\` (exit 2)" equals "$rc" "2"
  check "sql refusal of \`$q\` says how to write" contains "$err" "--write"
done
check "nothing deleted" equals "$(runs_count)" "$n"
check "user_version kept" equals "$(sqlite3 runs.db 'pragma user_version')" "$(ls "$SRC"/db/migrations/*.sql | sed 's|.*/0*||; s|_.*||' | sort -n | tail -1)"
check "VACUUM INTO wrote no file" equals "$(ls copy.db other.db 2>/dev/null)" ""
check "tables kept" equals "$(sqlite3 runs.db "select count(*) from sqlite_master where name='metrics'")" "1"
out=$("$LTRUN" sql "with x as (select 1 as a) select a from x" --csv)
check "read-only sql still reads" equals "$out" $'a\n1'
"$LTRUN" sql --write "INSERT INTO params(run_id, key, value) VALUES ($id, 'added', 'yes')"; rc=$?
check "sql --write writes" equals "$rc:$(sql1 "select value from params where key='added'")" "0:yes"

# --- named queries: ltrun's own first; other folders only when named
mkdir -p db/queries
echo "DELETE FROM runs" > db/queries/status.sql
echo "SELECT 'from the folder' AS src" > db/queries/mine.sql
n=$(runs_count)
out=$("$LTRUN" sql @status --write 2>&1)
check "@status is ltrun's, not ./db/queries/status.sql" contains "$out" "status"
check "@status: the folder's DELETE did not run" equals "$(runs_count)" "$n"
err=$("$LTRUN" sql @mine 2>&1); rc=$?
check "./db/queries is not read implicitly" equals "$rc" "2"
check "unknown query hints at --queries" contains "$err" "--queries"
out=$("$LTRUN" sql @mine --queries db/queries --csv)
check "--queries DIR adds a folder" equals "$out" $'src\nfrom the folder'

# --- control characters from the store are escaped on the terminal
"$LTRUN" --log -e 'lt.run.param("evil", "a\27[31mred\7")
lt.run.child("name\27[2J", function() end)
error("bad\27]0;title\7 \194\155")' 2>/dev/null
id=$(sql1 "select max(id) from runs where parent_id is null")
out=$("$LTRUN" runs); check "runs: no raw ESC" equals "$(grep -c "$ESC" <<<"$out")" "0"
check "runs: the ESC shows as \\x1b" contains "$out" 'bad\x1b]0;title\x07'
check "runs: C1 CSI (U+009B) escaped" contains "$out" '\u009b'
out=$("$LTRUN" show "$id"); check "show: no raw ESC" equals "$(grep -c "$ESC" <<<"$out")" "0"
check "show: params escaped" contains "$out" 'a\x1b[31mred\x07'
check "show: child name escaped" contains "$out" 'name\x1b[2J'
out=$("$LTRUN" sql "select name, error from runs"); check "sql table: no raw ESC" equals "$(grep -c "$ESC" <<<"$out")" "0"
out=$("$LTRUN" sql "select value from params where key='evil'" --csv)
check "sql --csv keeps the exact bytes (for programs)" equals "$out" $'value\na\e[31mred\a'
finish
