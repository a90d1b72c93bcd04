# tests/cli/db_merge.sh: `ltrun db merge` on two stores written by two processes at once
# (overlapping run ids 1..3 in each): ids remapped, parent/rerun links, params, metrics,
# layer metrics, eval items and artifacts follow; a store merged twice adds nothing; errors.
# Inputs are never changed (rollback journal, WAL, read-only file, read-only folder, a dead
# writer's -wal, a -wal without -shm); runs still running are held back or copied partially
# and completed later; text from the stores is printed escaped.
source "$(dirname "$0")/common.bash"

cat > shard.lua <<'L'
local study = require "lt.study"
local cfg = study.args{ shard = "x" }
lt.run.log("loss", 1.5)
lt.run.child("layer_" .. cfg.shard, function()
  lt.run.log("score", cfg.shard == "a" and 0.25 or 0.75)
  lt.run.log_layers("contribution", { 0.1, 0.2 })
  lt.run.child("grandchild", function() lt.run.param("depth", 2) end)
end)
local f = io.open("art_" .. cfg.shard .. ".txt", "w"); f:write(cfg.shard); f:close()
lt.run.artifact("art_" .. cfg.shard .. ".txt")
L
"$LTRUN" --db a.db shard.lua --shard=a >/dev/null 2>a.err & pa=$!
"$LTRUN" --db b.db shard.lua --shard=b >/dev/null 2>b.err & pb=$!
wait $pa; wait $pb
"$LTRUN" --db b.db rerun 1 --yes >/dev/null 2>rerun.err  # run 4 in b.db: rerun_of 1
check "shards ran" equals "$(cat a.err b.err)" ""
check "overlapping ids" equals "$(sqlite3 a.db 'select group_concat(id) from runs')|$(sqlite3 b.db 'select group_concat(id) from runs where id<4')" "1,2,3|1,2,3"

out=$("$LTRUN" db merge all.db a.db b.db 2>&1); rc=$?
check "merge exits 0" equals "$rc" "0"
check "merge reports b's runs with new ids" contains "$out" "b.db: 6 of 6 runs added as runs 4..9"
q() { sqlite3 all.db "$1"; }
check "7 + 2 runs" equals "$(q 'select count(*) from runs')" "9"
check "uuids kept" equals "$(q 'select count(distinct uuid) from runs')" "9"
check "parents follow the new ids (b's run and its rerun)" equals \
  "$(q "select group_concat(c.id||'<'||p.id||':'||(select value from params where run_id=p.id and key='shard')) from runs c join runs p on p.id=c.parent_id where c.name='layer_b'")" "5<4:b,8<7:b"
check "grandchildren under b's children" equals \
  "$(q "select group_concat(g.id||'<'||c.id) from runs g join runs c on c.id=g.parent_id where g.name='grandchild' and c.name='layer_b'")" "6<5,9<8"
check "rerun link follows" equals \
  "$(q "select r.id||'->'||o.id from runs r join runs o on o.id=r.rerun_of")" "7->4"
check "metrics per run" equals "$(q "select group_concat(x, ' ') from (select r.name||'='||m.value as x from metrics m join runs r on r.id=m.run_id where m.name='score' order by r.id)")" "layer_a=0.25 layer_b=0.75 layer_b=0.75"
check "layer metrics copied" equals "$(q "select count(*) from layer_metrics")" "6"
check "artifacts copied" equals "$(q "select count(*) from artifacts a join runs r on r.id=a.run_id where a.path like '%art_b.txt' and r.name='shard'")" "2"
check "params copied" equals "$(q "select count(*) from params where key='depth'")" "3"
check "merged store opens" contains "$("$LTRUN" --db all.db runs --all 2>&1)" "layer_b"

out=$("$LTRUN" db merge all.db b.db 2>&1)
check "merged twice: detected" contains "$out" "none of 6 runs added, 6 already in all.db"
check "merged twice: nothing duplicated" equals "$(q 'select count(*) from runs')|$(q 'select count(*) from metrics')" "9|6"

# a later run in b.db: only it is added; the ids it links to are the merged ones
"$LTRUN" --db b.db --log -e 'lt.run.log("late", 1)' >/dev/null 2>&1
out=$("$LTRUN" db merge all.db b.db 2>&1)
check "only the new run is added" contains "$out" "1 of 7 runs added as runs 10..10"

out=$("$LTRUN" db merge all.db all.db 2>&1); rc=$?
check "OUT as input is an error" equals "$rc|$(contains "$out" "is the output store" && echo y)" "2|y"
out=$("$LTRUN" db merge all.db nope.db 2>&1); rc=$?
check "missing input named" equals "$rc|$(contains "$out" "nope.db does not exist" && echo y)" "2|y"
echo "not a db" > junk.db
out=$("$LTRUN" db merge all.db junk.db 2>&1); rc=$?
check "not a store is an error naming it" equals "$rc|$(contains "$out" "junk.db" && echo y)" "2|y"
check "failed merges left all.db as it was" equals "$(q 'select count(*) from runs')" "10"
"$LTRUN" db merge fresh.db junk.db >/dev/null 2>&1
check "a failed merge into a new OUT leaves no file" equals "$(ls fresh.db* 2>/dev/null)" ""
out=$("$LTRUN" db merge 2>&1); rc=$?
check "usage without arguments" equals "$rc|$(contains "$out" "db merge OUT.db" && echo y)" "2|y"

# --- inputs are read, never changed: md5 of every file beside them, no -wal/-shm made
as_reader() { if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; else "$@"; fi; }
snap() { (cd "$1" && for f in $(ls -A | sort); do echo "$f $(md5sum < "$f" | cut -c1-32)"; done); }
mode() { od -An -tu1 -j18 -N2 "$1" | tr -s ' '; }  # header bytes 18-19: 1 1 rollback, 2 2 WAL
mkdir -p src pub && chmod 777 pub
cp a.db src/del.db && sqlite3 src/del.db 'PRAGMA journal_mode=DELETE' >/dev/null
before=$(snap src)
out=$("$LTRUN" db merge pub/del_out.db src/del.db 2>&1); rc=$?
check "rollback-journal input: merged" equals "$rc|$(contains "$out" "3 of 3 runs added" && echo y)" "0|y"
check "rollback-journal input: files unchanged, none made (before: switched to WAL)" equals "$(snap src)" "$before"
check "rollback-journal input: still rollback-journal" equals "$(mode src/del.db)" " 1 1"

mkdir rw && chmod 777 rw && cp a.db rw/ro.db && cp src/del.db rw/rodel.db && chmod 444 rw/*  # ro.db: WAL, no -wal
before=$(snap rw)
out=$(as_reader "$LTRUN" db merge pub/ro_out.db rw/ro.db rw/rodel.db 2>&1); rc=$?
check "read-only input files: merged" equals \
  "$rc|$(contains "$out" "rw/ro.db: 3 of 3 runs added" && contains "$out" "rw/rodel.db: none of 3 runs added, 3 already" && echo y)" "0|y"
check "read-only input files: no -wal/-shm made beside them in their writable folder" equals "$(snap rw)" "$before"

mkdir rodir && cp a.db rodir/a.db && cp src/del.db rodir/del.db && chmod 444 rodir/* && chmod 555 rodir
before=$(snap rodir)
out=$(as_reader "$LTRUN" db merge pub/rodir_out.db rodir/a.db rodir/del.db 2>&1); rc=$?
check "read-only folder: merged (before: enabling WAL failed)" equals "$rc|$(contains "$out" "rodir/a.db: 3 of 3 runs added" && echo y)" "0|y"
check "read-only folder: unchanged" equals "$(snap rodir)" "$before"
chmod 755 rodir

# a writer killed after writing 300 rows to its -wal (never checkpointed into the file)
cat > hold.lua <<'L'
local study = require "lt.study"
local cfg = study.args{ n = 300, more = 0 }
for i = 1, cfg.n do lt.run.log("loss", i) end
lt.run.child("early", function() lt.run.log("x", 1) end)
lt.run.flush()
io.open("ready", "w"):close()
local t0 = os.time()  -- waits for ./go, 2 minutes at most (a failed test leaves no process behind)
while not io.open("go") and os.time() - t0 < 120 do os.execute("sleep 0.05") end
for i = 1, cfg.more do lt.run.log("loss", cfg.n + i) end
L
mkdir dead
(cd dead && exec "$LTRUN" --db k.db ../hold.lua --n=300 >/dev/null 2>&1) & pk=$!
for _ in $(seq 1 600); do [ -f dead/ready ] && break; sleep 0.1; done
kill -9 $pk; wait $pk 2>/dev/null
rm dead/ready
check "killed writer left its -wal and -shm" equals "$(ls dead | tr '\n' ' ')" "k.db k.db-shm k.db-wal "
before=$(snap dead)
out=$("$LTRUN" db merge pub/dead_out.db dead/k.db 2>&1); rc=$?
check "killed writer's store: merged" equals "$rc" "0"
check "killed writer's store: the -wal's rows read (immutable would see none)" equals \
  "$(sqlite3 pub/dead_out.db "select count(*) from metrics where name='loss'")" "300"
check "killed writer's store: its runs copied as crashed" equals \
  "$(sqlite3 pub/dead_out.db "select group_concat(status) from runs where name='hold'")|$(contains "$out" "copied as crashed" && echo y)" "crashed|y"
check "killed writer's store: db, -wal and -shm unchanged (before: recovered and checkpointed)" equals "$(snap dead)" "$before"
mkdir noshm && cp dead/k.db dead/k.db-wal noshm/ && chmod 555 noshm  # a shard copied without its -shm
before=$(snap noshm)
out=$(as_reader "$LTRUN" db merge pub/noshm_out.db noshm/k.db 2>&1); rc=$?
check "a -wal without -shm in a read-only folder: merged from a private copy" equals \
  "$rc|$(sqlite3 pub/noshm_out.db "select count(*) from metrics where name='loss'")|$(contains "$out" "private copy" && echo y)" "0|300|y"
check "a -wal without -shm: unchanged" equals "$(snap noshm)" "$before"
chmod 755 noshm

if command -v python3 >/dev/null; then  # a rollback-journal writer that died mid-transaction: a hot journal
  mkdir hot && cp src/del.db hot/h.db
  python3 -c '
import sqlite3, os, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA cache_size=1")
db.execute("BEGIN")
for i in range(3000): db.execute("INSERT INTO params(run_id, key, value) VALUES (1, ?, randomblob(300))", ("k%d" % i,))
os._exit(0)' hot/h.db
  before=$(snap hot)
  out=$("$LTRUN" db merge pub/hot_out.db hot/h.db 2>&1); rc=$?
  check "a hot journal: read from a private copy, rolled back there" equals \
    "$rc|$(contains "$out" "private copy" && echo y)|$(sqlite3 pub/hot_out.db "select count(*) from params where key like 'k%'")" "0|y|0"
  check "a hot journal: input and journal unchanged" equals "$(snap hot)" "$before"
fi

# --- a run still running: held back (with its child), copied partially on request, completed later
mkdir live
(cd live && exec "$LTRUN" --db s.db ../hold.lua --n=300 --more=200 >/dev/null 2>&1) & pl=$!
for _ in $(seq 1 600); do [ -f live/ready ] && break; sleep 0.1; done
out=$("$LTRUN" db merge live_out.db live/s.db 2>&1); rc=$?
check "live run: merge exits 0" equals "$rc" "0"
check "live run: said so" contains "$out" "still running, not copied: run 1 (hold): process $pl on"
check "live run: its child held with it" contains "$out" "with the 1 run(s) under it"
check "live run: nothing copied (before: a partial copy kept for good)" equals "$(sqlite3 live_out.db 'select count(*) from runs')" "0"
out=$("$LTRUN" db merge --include-running live_out.db live/s.db 2>&1); rc=$?
check "--include-running: a partial copy" equals "$rc|$(sqlite3 live_out.db "select count(*) from metrics where name='loss'")" "0|300"
check "--include-running: the copy says it is partial" contains "$(sqlite3 live_out.db "select error from runs where name='hold'")" "partial copy"
touch live/go; wait $pl
out=$("$LTRUN" db merge live_out.db live/s.db 2>&1); rc=$?
check "after the run ended: the copy completed (before: kept partial, a note)" contains "$out" "1 completed"
check "completed: all rows, status ok, no error, same id" equals \
  "$(sqlite3 live_out.db "select r.id||r.status||coalesce(r.error,'-')||count(*) from runs r join metrics m on m.run_id=r.id and m.name='loss' where r.name='hold'")" "1ok-500"
check "completed: the child links to it" equals "$(sqlite3 live_out.db "select count(*) from runs c join runs p on p.id=c.parent_id where c.name='early' and p.name='hold'")" "1"
out=$("$LTRUN" db merge live_out.db live/s.db 2>&1)
check "merged again: nothing to do" contains "$out" "none of 2 runs added, 2 already in live_out.db"

# --- text from the stores is escaped on the terminal
esc=$'evil\e]0;owned\a\e[31mred'
"$LTRUN" --db esc.db --run-name "$esc" --log -e 'lt.run.log("x", 1)' >/dev/null 2>&1
"$LTRUN" db merge esc_out.db esc.db >/dev/null 2>&1
sqlite3 esc_out.db "update runs set status='failed'"
out=$("$LTRUN" db merge esc_out.db esc.db 2>&1)
check "a run name's escapes in the note: escaped" contains "$out" 'evil\x1b]0;owned\x07\x1b[31mred'
check "no raw escape byte printed (before: printed raw)" equals "$(printf '%s' "$out" | tr -d -c '\033\007' | wc -c)" "0"
cp esc.db esc2.db && sqlite3 esc2.db $'CREATE TABLE "t\e[2Jx"(run_id INTEGER)'
out=$("$LTRUN" db merge esc_out.db esc2.db 2>&1); rc=$?
check "a table name in an error: escaped" equals "$rc|$(printf '%s' "$out" | tr -d -c '\033' | wc -c)|$(contains "$out" 't\x1b[2Jx' && echo y)" "2|0|y"

# --- a store from before run uuids: refused (upgrading writes it), unchanged
cp a.db old.db && sqlite3 old.db "DROP TRIGGER runs_uuid_default; DROP INDEX runs_uuid; ALTER TABLE runs DROP COLUMN uuid; PRAGMA user_version=2"
before=$(md5sum < old.db)
out=$("$LTRUN" db merge old_out.db old.db 2>&1); rc=$?
check "schema 2 input: refused, naming it and the way to upgrade" equals "$rc|$(contains "$out" "old.db: run store schema version 2 has no run uuids" && echo y)" "2|y"
check "schema 2 input: unchanged" equals "$(md5sum < old.db)" "$before"
out=$("$LTRUN" db merge --include-runing x.db a.db 2>&1); rc=$?
check "unknown option named" equals "$rc|$(contains "$out" "unknown option --include-runing" && echo y)" "2|y"
finish
