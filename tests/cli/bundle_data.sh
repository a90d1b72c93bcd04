# tests/cli/bundle_data.sh: a bundle is data, never a program (issue 43 item 1). An export is
# an SQLite file, and SQLite runs what a file's schema says when a table is read: a view over
# WITH RECURSIVE and zeroblob(), a generated column, a trigger. Each crafted bundle below (a
# few KB) is refused by `ltrun import` and by `rerun FILE --sandbox` (whose import runs outside
# the sandbox) within 20 s and a 1.5 GB address space, in one line naming the file and what
# is wrong, and nothing is imported; an honest bundle still imports.
source "$(dirname "$0")/common.bash"
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to craft bundles" >&2; exit 77; }
runs() { sqlite3 "$1" "select count(*) from runs" 2>/dev/null || echo 0; }

cat > study.lua <<'LUA'
lt.run.param("p", "v")
lt.run.log("x", 1)
LUA
"$LTRUN" --db author.db study.lua >/dev/null 2>&1
"$LTRUN" --db author.db export 1 -o honest.ltrun >/dev/null
check "an honest bundle is written" equals "$([ -s honest.ltrun ] && echo yes)" "yes"

craft() {  # craft NAME SQL: honest.ltrun with the schema changed by SQL
  cp honest.ltrun "$1.ltrun"
  python3 - "$1.ltrun" "$2" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.executescript(sys.argv[2])
c.commit()
PY
}
# runs as a view: 100,000 rows of a 1 MB zero blob (100 GB when read)
craft view_zeroblob "ALTER TABLE runs RENAME TO runs_t;
  CREATE VIEW runs AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
  SELECT r.*, zeroblob(1000000) AS pad FROM runs_t r, n;"
# a generated column of 900 MB on every row of params
craft generated "ALTER TABLE params ADD COLUMN pad BLOB GENERATED ALWAYS AS (zeroblob(900000000)) VIRTUAL;"
# a trigger of its own
craft trigger "CREATE TRIGGER t AFTER INSERT ON params BEGIN SELECT zeroblob(900000000); END;"
# run_inputs as an endless view with a rowid column
craft endless "DROP TABLE run_inputs;
  CREATE VIEW run_inputs AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n)
  SELECT 1 AS run_id, 'data' AS kind, '/x' AS path, NULL AS root, NULL AS rel, 1 AS size,
         printf('%064d', 0) AS sha256, 0 AS made, i AS rowid FROM n;"
# an index on an expression (evaluated by an integrity check)
craft index_expr "CREATE INDEX params_pad ON params(length(zeroblob(900000000)) + run_id);"

# params rebuilt with a CHECK that allocates 900 MB per row (evaluated by an integrity check)
craft check_expr "ALTER TABLE params RENAME TO params_old;
  CREATE TABLE params (run_id INTEGER NOT NULL REFERENCES runs(id), key TEXT NOT NULL, value TEXT,
    PRIMARY KEY (run_id, key), CHECK (length(zeroblob(900000000)) > 0));
  INSERT INTO params SELECT * FROM params_old; DROP TABLE params_old;"

import_bounded() {  # import_bounded CMD...: at most 20 s and 1.5 GB of address space
  (ulimit -v 1500000; timeout 20 "$@") 2>&1
}
expect() {  # expect NAME WORDS
  local err rc
  err=$(import_bounded "$LTRUN" --db "$1.db" import "$1.ltrun"); rc=$?
  check "$1: refused (exit 2), not killed, not past 20 s (timeout's 124)" equals "$rc" "2"
  check "$1: names the file and what is wrong" contains "$err" "ltrun: import: $1.ltrun: not an ltrun store as ltrun writes it: $2"
  check "$1: says nothing was imported" contains "$err" "nothing imported"
  check "$1: one line" equals "$(grep -c . <<<"$err")" "1"
  check "$1: nothing imported" equals "$(runs "$1.db")" "0"
}
expect view_zeroblob "it has a view runs (a store holds tables, never views)"
expect generated "table params has a generated column pad (a store's columns hold values, never expressions)"
expect trigger "it has a trigger t that the store's schema does not"
expect endless "it has a view run_inputs (a store holds tables, never views)"
expect index_expr "it has an index params_pad that the store's schema does not"
expect check_expr "its table params is not as the store's schema defines it"

# rerun FILE --sandbox imports before its sandbox starts: the same refusal
err=$(import_bounded "$LTRUN" --db rerun.db rerun view_zeroblob.ltrun --sandbox); rc=$?
check "rerun --sandbox of a crafted bundle: refused (exit 2)" equals "$rc" "2"
check "rerun --sandbox of a crafted bundle: names it" contains "$err" "view_zeroblob.ltrun: not an ltrun store as ltrun writes it: it has a view runs"
check "rerun --sandbox: nothing imported" equals "$(runs rerun.db)" "0"

out=$(import_bounded "$LTRUN" --db honest.db import honest.ltrun); rc=$?
check "the honest bundle imports" contains "$rc $out" "0 imported honest.ltrun"
check "its run is there" equals "$(runs honest.db)" "1"
finish
