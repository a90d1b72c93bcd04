# tests/cli/share.sh: a run travels as one file and replays with its own code (issue 26).
# Folder A (the author) runs a study that requires a module of its own and lib/lt (a copy,
# LTRUN_LIB), then both change; the run is exported, A is moved away, and folder B (another
# absolute path, with the changed module and lib/lt) imports and replays it: the metrics are
# bit-identical to the original (checked in SQL, beside `compare`); with --sources=current
# they differ and `compare` names the changed sources and the first diverging metric.
# Tampered, truncated and future-schema files are refused and nothing is imported; a changed
# model stops a replay before it runs; a model is hashed once per version of its files.
SRC=$(cd "$(dirname "$0")/../.." && pwd)
source "$(dirname "$0")/common.bash"
unset LTRUN_MODELS LTRUN_DATA
runs() { sqlite3 "$1" "select count(*) from runs"; }

mkdir -p A/proj A/lib B
cp -r "$SRC/lib/lt" A/lib/
cat > A/proj/helper.lua <<'LUA'
local M = {}
function M.scale() return 1.0 end
return M
LUA
cat > A/proj/study.lua <<'LUA'
local h = require "helper"
local study = require "lt.study"
local cfg = study.args{ model = "models/tiny", text = "hot cold big small" }
local m = lt.model.load(cfg.model)
local out = m:forward(m.tokenizer:encode(cfg.text), { capture = true })
for l = 0, m.n_layers - 1 do
  lt.run.log("hidden_abs_sum", out.hidden[l + 1]:abs():sum() * h.scale(), { step = l })
end
lt.run.child("kid", function()
  lt.run.log_layers("lens", { out.hidden[1]:abs():mean() * h.scale(), out.hidden[2]:abs():mean() * h.scale() })
end)
LUA
cd A
export LTRUN_LIB=$PWD/lib LTRUN_DB=$PWD/runs.db
"$LTRUN" model new models/tiny --layers 2 --hidden 32 >/dev/null
"$LTRUN" proj/study.lua; rc=$?
check "A: the study runs" equals "$rc" "0"
out=$("$LTRUN" show 1 --sources)
check "show --sources lists the user module" contains "$out" "helper"
check "show --sources lists lib/lt's modules (origin lib)" contains "$out" "lt/study/init.lua"
check "show --sources lists the model with its hash" contains "$out" "$(sqlite3 runs.db "select substr(sha256,1,16) from run_inputs where kind='model'")"
check "the model lies below the models folder: recorded relative" equals "$(sqlite3 runs.db "select root||':'||rel from run_inputs")" "models:tiny"
n_src=$(sqlite3 runs.db "select count(*) from sources")
"$LTRUN" proj/study.lua
check "sources are stored once however many runs execute them" equals "$(sqlite3 runs.db "select count(*) from sources")" "$n_src"

# afterwards the author changes the module and lib/lt (every logged value doubles)
sed -i 's/return 1.0/return 1.5/' proj/helper.lua
sed -i '$i local log = lt.run.log\nlt.run.log = function(name, v, ...) return log(name, v * 2, ...) end' lib/lt/init.lua
check "lib/lt changed" contains "$(tail -3 lib/lt/init.lua)" "v * 2" 
"$LTRUN" export 1 --children -o run.ltrun >/dev/null; rc=$?
check "export writes one file" equals "$rc:$(ls run.ltrun* | tr '\n' ' ')" "0:run.ltrun "
err=$("$LTRUN" export 1 -o run.ltrun 2>&1); rc=$?
check "export never overwrites" contains "$rc $err" "2 ltrun: export: run.ltrun exists"
cd ..
cp -r A/proj A/lib A/models A/run.ltrun B/
mv A A.moved   # nothing of the author's folder is reachable by its path any more

cd B
export LTRUN_LIB=$PWD/lib LTRUN_DB=$PWD/b.db
out=$("$LTRUN" import run.ltrun); rc=$?
check "import into a fresh store" contains "$rc $out" "0 imported run.ltrun"
check "import: both runs" equals "$(runs b.db)" "2"
orig=$(sqlite3 b.db "select id from runs where parent_id is null")
out=$("$LTRUN" rerun run.ltrun:1 --yes 2>&1); rc=$?
new=$(sqlite3 b.db "select max(id) from runs where parent_id is null")
n=$(sqlite3 b.db "select (select count(*) from metrics m join runs r on r.id = m.run_id where $orig in (r.id, r.parent_id)) + (select count(*) from layer_metrics m join runs r on r.id = m.run_id where $orig in (r.id, r.parent_id))")
check "replay with the stored sources runs" equals "$rc" "0"
check "replay: says it reproduced every metric" contains "$out" "reproduced: all $n metrics equal"
# the same, independently of compare: every value equal as a double, by name and step
same() {  # same ORIG NEW: values of metrics and layer metrics of both trees that are not identical
  sqlite3 b.db "select count(*) from (select coalesce(p.name, '') k, m.name, m.step, m.value from metrics m join runs r on r.id = m.run_id left join runs p on p.id = r.parent_id and r.parent_id = $1 where $1 in (r.id, r.parent_id)) a
    left join (select coalesce(p.name, '') k, m.name, m.step, m.value from metrics m join runs r on r.id = m.run_id left join runs p on p.id = r.parent_id and r.parent_id = $2 where $2 in (r.id, r.parent_id)) b
    using (name, step) where b.value is not a.value;
    select count(*) from (select l.name, l.layer, l.value from layer_metrics l join runs r on r.id = l.run_id where r.parent_id = $1) a
    left join (select l.name, l.layer, l.value from layer_metrics l join runs r on r.id = l.run_id where r.parent_id = $2) b
    using (name, layer) where b.value is not a.value" | paste -sd' '
}
check "replay: metrics and layer metrics bit-identical (SQL)" equals "$(same "$orig" "$new")" "0 0"
check "replay: $n values to compare" equals "$([ "$n" -ge 3 ] && echo yes)" "yes"
check "replay: the user module came from the file, not B's changed copy" equals \
  "$(sqlite3 b.db "select count(distinct sha256) from run_sources where name='helper'")" "1"

out=$("$LTRUN" rerun "$orig" --yes --sources=current 2>&1); rc=$?
cur=$(sqlite3 b.db "select max(id) from runs where parent_id is null")
check "replay with today's sources runs" equals "$rc" "0"
check "replay with today's sources: not reproduced" contains "$out" "not reproduced: 0 of $n metrics equal"
check "today's sources: B's folder stands in for the moved one" contains "$out" "today's modules beside the script come from $PWD/proj"
cmp=$("$LTRUN" compare "$orig" "$cur")
check "compare names the changed module" contains "$cmp" "changed: helper"
check "compare shows the module's diff" contains "$cmp" "+function M.scale() return 1.5 end"
check "compare shows the removed line" contains "$cmp" "-function M.scale() return 1.0 end"
check "compare names the changed lib/lt module" contains "$cmp" "changed: lt ("
first=$(sqlite3 b.db "select printf('%!.17g | %!.17g', a.value, b.value) from metrics a join metrics b on b.run_id = $cur and b.name = a.name and b.step = a.step where a.run_id = $orig and a.step = 0")
check "compare: the first diverging metric, both values" contains "$cmp" "first divergence: hidden_abs_sum step 0: "
check "compare: metrics different" contains "$cmp" "metrics: 0 of $n equal"
cmp=$("$LTRUN" compare "$orig" "$new")
check "compare of the faithful replay: sources equal" equals "$(grep '^sources:' <<<"$cmp" | sed 's/.*, //')" "0 different"
check "compare of the faithful replay: no divergence" contains "$cmp" "first divergence: none"

# --- tampered files are refused, naming what is wrong, and nothing is imported (into c.db,
# a store that holds none of these runs yet; db merge's own check runs inside its transaction,
# after the runs were copied: refused, it leaves no run behind)
imported() { [ -e c.db ] && runs c.db || echo 0; }
cp run.ltrun t_src.ltrun
sqlite3 t_src.ltrun "update sources set text = text || '-- changed' where sha256 = (select sha256 from run_sources where name = 'helper')"
err=$("$LTRUN" --db c.db import t_src.ltrun 2>&1); rc=$?
check "tampered source: refused" equals "$rc" "2"
check "tampered source: names the module and the hash" contains "$err" "source helper does not match its hash"
err=$("$LTRUN" db merge c.db t_src.ltrun 2>&1); rc=$?
check "db merge also refuses the tampered source (checked inside its transaction)" contains "$rc $err" "source helper does not match its hash"
check "db merge: the runs it had copied before the check are rolled back" equals "$(imported)" "0"
cp run.ltrun t_script.ltrun
sqlite3 t_script.ltrun "update runs set script_text = 'os.exit(3)' where parent_id is null"
err=$("$LTRUN" --db c.db import t_script.ltrun 2>&1)
check "tampered script: refused" contains "$err" "script does not match its script_sha256"
size=$(stat -c %s run.ltrun)
head -c $((size - 4096)) run.ltrun > t_trunc.ltrun
err=$("$LTRUN" --db c.db import t_trunc.ltrun 2>&1); rc=$?
check "truncated file: refused (exit 2)" equals "$rc" "2"
check "truncated file: says so" contains "$err" "truncated"
head -c 5000 run.ltrun > t_trunc2.ltrun
err=$("$LTRUN" --db c.db import t_trunc2.ltrun 2>&1)
check "truncated mid-page: says so" contains "$err" "truncated"
cp run.ltrun t_future.ltrun
sqlite3 t_future.ltrun "pragma user_version = 99"
err=$("$LTRUN" --db c.db import t_future.ltrun 2>&1)
check "schema from the future: refused, naming the version" contains "$err" "schema version 99 is newer than this ltrun knows"
check "nothing of any refused file was imported" equals "$(imported)" "0"
out=$("$LTRUN" --db c.db import run.ltrun); rc=$?
check "the untampered file imports into that store" equals "$rc:$(runs c.db)" "0:2"
check "no source of a refused file was stored" equals "$(sqlite3 c.db "select count(*) from sources where text like '%-- changed'")" "0"

# --- a changed model stops a replay before it runs, naming the file and both hashes
want=$(sqlite3 b.db "select sha256 from run_inputs where run_id = $orig and kind = 'model'")
"$LTRUN" --seed 7 model new other --layers 2 --hidden 32 >/dev/null
cp other/model.safetensors models/tiny/model.safetensors
before=$(runs b.db)
err=$("$LTRUN" rerun "$orig" --yes 2>&1); rc=$?
check "changed model: refused (exit 2)" equals "$rc" "2"
check "changed model: names the file and the expected hash" contains "$err" "model models:tiny changed: expected sha256 $want, found "
check "changed model: and where it was found" contains "$err" "at models/tiny"
check "changed model: nothing ran" equals "$(runs b.db)" "$before"
out=$("$LTRUN" rerun "$orig" --yes --allow-changed-inputs 2>&1); rc=$?
last=$(sqlite3 b.db "select max(id) from runs where parent_id is null")
check "--allow-changed-inputs: runs" equals "$rc" "0"
check "--allow-changed-inputs: recorded with the run" contains "$(sqlite3 b.db "select value from params where run_id = $last and key = 'rerun.changed_inputs'")" "model models:tiny changed"

# --- hashing a model once per version of its files (cache by path, size, mtime)
st=$PWD/models/tiny/model.safetensors
check "the hash cache holds the model's file" equals "$(sqlite3 b.db "select count(*) from input_hashes where path = '$st'")" "1"
sqlite3 b.db "update input_hashes set sha256 = 'cached' where path = '$st'"
"$LTRUN" proj/study.lua >/dev/null 2>&1
h1=$(sqlite3 b.db "select sha256 from run_inputs where kind = 'model' order by rowid desc limit 1")
check "an unchanged file is not hashed again (the cached value is used)" equals "$([ "$h1" != "$(sqlite3 b.db "select sha256 from run_inputs where run_id = $last and kind='model'")" ] && echo cached)" "cached"
touch -d '2020-01-01' "$st"
"$LTRUN" proj/study.lua >/dev/null 2>&1
h2=$(sqlite3 b.db "select sha256 from run_inputs where kind = 'model' order by rowid desc limit 1")
check "a new version of the file (mtime) is hashed again" equals "$h2" "$(sqlite3 b.db "select sha256 from run_inputs where run_id = $last and kind='model'")"
# --- export --artifacts: the files ride along up to the limit; a changed one is refused
printf 'local f = io.open("fig.svg", "w"); f:write("<svg/>"); f:close(); lt.run.artifact("fig.svg")\nlocal g = io.open("big.txt", "w"); g:write(string.rep("x", 2 * 1048576)); g:close(); lt.run.artifact("big.txt")\n' > art.lua
"$LTRUN" art.lua
aid=$(sqlite3 b.db "select max(id) from runs")
out=$("$LTRUN" export "$aid" --artifacts --max-artifact-mb 1 -o art.ltrun)
check "export --artifacts: the small file is carried" equals "$(sqlite3 art.ltrun "select size || ':' || (data = cast('<svg/>' as blob)) from artifact_files")" "6:1"
check "export --artifacts: one past the limit is named and left out" contains "$out" "big.txt (2097152 bytes) is past the limit of 1048576 bytes"
cp art.ltrun t_art.ltrun
sqlite3 t_art.ltrun "update artifact_files set data = cast('<svg>' as blob)"
err=$("$LTRUN" --db c.db import t_art.ltrun 2>&1)
check "a changed artifact file: refused" contains "$err" "the artifact file $PWD/fig.svg carried in it does not match its hash"

# --- rerun --sandbox: bubblewrap, no network, nothing writable but a fresh working folder and
# a store of its own (where bwrap can make its namespaces; tests/cli/sandbox.sh says why where
# it cannot; tests/cli/replay_sandbox.sh tries the host from a bundle)
export LTRUN_LIB=$SRC/lib  # lib/lt as shipped (B's copy doubles every logged value)
if bwrap --unshare-all --ro-bind / / true 2>/dev/null; then
  probe=$SCRATCH/outside_probe  # the scratch folder: above B, the store's folder
  cat > sb.lua <<LUA
local f = io.open("$probe", "w")
lt.run.log("wrote_outside", f and 1 or 0)
if f then f:close(); os.remove("$probe") end
local n = 0
for line in io.lines("/proc/net/dev") do if line:find(":") then n = n + 1 end end
lt.run.log("net_interfaces", n)
local g = io.open("in_store_folder.txt", "w")
lt.run.log("wrote_store_folder", g and 1 or 0)
if g then g:close() end
LUA
  "$LTRUN" sb.lua
  sid=$(sqlite3 b.db "select max(id) from runs")
  check "outside a sandbox the script can write above the store's folder" equals "$(sqlite3 b.db "select value from metrics where run_id = $sid and name = 'wrote_outside'")" "1.0"
  out=$("$LTRUN" rerun "$sid" --sandbox </dev/null 2>&1); rc=$?
  rid=$(sqlite3 b.db "select max(id) from runs")
  check "--sandbox runs without asking (the sandbox stands for it)" equals "$rc:$([ "$rid" -gt "$sid" ] && echo new)" "0:new"
  check "--sandbox says what it is" contains "$out" "in a sandbox (bubblewrap): no network"
  v() { sqlite3 b.db "select value from metrics where run_id = $rid and name = '$1'"; }
  check "--sandbox: nothing written outside its working folder" equals "$(v wrote_outside):$([ -e "$probe" ] && echo exists)" "0.0:"
  check "--sandbox: no network (only the loopback interface)" equals "$(v net_interfaces)" "1.0"
  check "--sandbox: its (fresh) working folder is writable" equals "$(v wrote_store_folder)" "1.0"
  check "--sandbox: recorded with the run" contains "$(sqlite3 b.db "select value from params where run_id = $rid and key = 'rerun.sandbox'")" "bubblewrap"
else
  echo "note: bwrap cannot make namespaces here: --sandbox not checked" >&2
fi
finish
