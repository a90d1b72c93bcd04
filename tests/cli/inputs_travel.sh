# tests/cli/inputs_travel.sh: the files a run reads travel with it and are checked at replay
# (issue 38 item 8). A study loads a model, reads a data file with io.lines, a config with
# dofile and its own output back (not an input), and /proc (not an input): the model and the
# two files are recorded as inputs. `export --with-inputs` carries their bytes; imported into a
# fresh store in an empty folder, with the author's files gone, the rerun reads them from the
# store's restored copies and says "reproduced". A cap stops a large export (naming the biggest file) and a large import; a
# changed carried file is refused; a run from elsewhere never exports a file of this machine.
# At replay a changed or missing input refuses the rerun up front in one line naming the file,
# storing nothing. `rerun --sources=current` takes modules from the folder it runs in, and a
# replay that fails midway says so instead of "reproduced: 0 of N".
source "$(dirname "$0")/common.bash"
unset LTRUN_MODELS LTRUN_DATA
runs() { sqlite3 "$1" "select count(*) from runs"; }

mkdir -p A/data A/proj B C
cd A
export LTRUN_DB=$PWD/runs.db
printf 'alpha\nbeta\ngamma delta\n' > data/words.txt
printf 'return { scale = 3 }\n' > data/conf.lua
"$LTRUN" model new models/tiny --layers 2 --hidden 32 >/dev/null
cat > proj/study.lua <<'LUA'
local conf = dofile("data/conf.lua")
local m = lt.model.load("models/tiny")
local i = 0
for line in io.lines("data/words.txt") do
  i = i + 1
  lt.run.log("len", #line * conf.scale, { step = i })
  lt.run.log("hidden", m:forward(m.tokenizer:encode(line), { capture = true }).hidden[2]:abs():sum(), { step = i })
end
local out = io.open("out.txt", "w"); out:write("written by the run\n"); out:close()
lt.run.log("own_output", #io.open("out.txt"):read("*a"))
for _ in io.lines("/proc/self/stat") do end
if (...) == "--fail" then error("stopped midway, as asked") end
LUA
"$LTRUN" proj/study.lua; rc=$?
check "the study runs" equals "$rc" "0"
check "io.lines and dofile files are the run's inputs; its own output and /proc are not" equals \
  "$(sqlite3 runs.db "select group_concat(kind || ' ' || root || ':' || rel || ' ' || case when kind = 'model' then 'folder' else size end, ', ') from (select * from run_inputs where run_id = 1 order by rel)")" \
  "data workdir:data/conf.lua 21, data workdir:data/words.txt 23, model models:tiny folder"
n=$(sqlite3 runs.db "select count(*) from metrics where run_id = 1")
check "a study with metrics to compare" equals "$n" "7"
nfiles=$(find models/tiny -maxdepth 1 -type f ! -name '.*' ! -name '*.lock' | wc -l)
check "recorded with its hash" equals "$(sqlite3 runs.db "select sha256 from run_inputs where rel = 'data/words.txt'")" \
  "$(sha256sum data/words.txt | cut -d' ' -f1)"

# --- at replay, a changed or missing input refuses the rerun before it starts, in one line
cp data/words.txt words.orig
printf 'alpha\nBETA\ngamma delta\n' > data/words.txt
err=$("$LTRUN" rerun 1 --yes 2>&1 >/dev/null); rc=$?
check "changed input: refused (exit 2)" equals "$rc" "2"
check "changed input: names the file and the hashes" contains "$err" \
  "data workdir:data/words.txt changed: expected sha256 $(sha256sum words.orig | cut -d' ' -f1), found $(sha256sum data/words.txt | cut -d' ' -f1) at data/words.txt"
check "changed input: one line" equals "$(grep -c . <<<"$err")" "1"
check "changed input: nothing ran, nothing stored" equals "$(runs runs.db)" "1"
mv data/conf.lua conf.moved
err=$("$LTRUN" rerun 1 --yes 2>&1 >/dev/null); rc=$?
check "missing input: refused, named" contains "$rc $err" "2 ltrun: rerun: run 1 did not start: data workdir:data/conf.lua is missing"
mv conf.moved data/conf.lua
cp words.orig data/words.txt
out=$("$LTRUN" rerun 1 --yes 2>&1); rc=$?
check "inputs as recorded: reproduced" contains "$rc $out" "0 "
check "inputs as recorded: says reproduced" contains "$out" "run 2 against run 1: reproduced: all $n metrics equal"

# --- a replay that fails midway says that it failed, not "reproduced: 0 of N"
out=$("$LTRUN" rerun 1 --yes --fail 2>&1); rc=$?
check "failed replay: exit 1" equals "$rc" "1"
check "failed replay: says so" contains "$out" "run 3 (the replay of run 1) failed: the replay failed, so it is not compared"
check "failed replay: no reproduced line" equals "$(grep -c 'reproduced' <<<"$out")" "0"

# --- export --with-inputs: the bytes travel; caps on export and import
"$LTRUN" export 1 --with-inputs -o run.ltrun > export.out; rc=$?
check "export --with-inputs" contains "$rc $(cat export.out)" "0 exported run 1"
check "export --with-inputs: says what it carries" contains "$(cat export.out)" "with the bytes of $((nfiles + 2)) input file(s)"
check "the bundle holds both files' bytes, the model's files and its manifest" equals \
  "$(sqlite3 run.ltrun "select count(*), sum(size = 23), sum(size = 21) from input_files")" "$((nfiles + 3))|1|1"
check "an export without --with-inputs holds none" equals \
  "$("$LTRUN" export 1 -o plain.ltrun >/dev/null; sqlite3 plain.ltrun "select count(*) from sqlite_master where name = 'input_files'")" "0"
head -c 3000000 /dev/urandom > data/big.bin
printf 'local f = io.open("data/big.bin", "rb"); lt.run.log("n", #f:read("*a")); f:close()\nfor _ in io.lines("data/words.txt") do end\n' > big.lua
"$LTRUN" big.lua
bid=$(sqlite3 runs.db "select max(id) from runs")
err=$("$LTRUN" export "$bid" --with-inputs --max-input-mb 2 -o big.ltrun 2>&1); rc=$?
check "past the cap: refused" equals "$rc" "2"
check "past the cap: names the run, the cap and the biggest input" contains "$err" "the 2 inputs of run $bid hold 2.9 MiB (3000023 bytes), past the cap of 2.0 MiB (--max-input-mb 2); the biggest: data $PWD/data/big.bin (2.9 MiB), data $PWD/data/words.txt (23 B)"
check "past the cap: no file written" equals "$(ls big.ltrun* 2>/dev/null)" ""
"$LTRUN" export "$bid" --with-inputs -o big.ltrun >/dev/null
err=$("$LTRUN" --db cap.db import big.ltrun --max-input-mb 2 2>&1); rc=$?
check "import past its cap: refused" contains "$rc $err" "2 ltrun: import: big.ltrun: carries 2.9 MiB of input files"
check "import past its cap: nothing imported, nothing restored" equals "$(runs cap.db 2>/dev/null || echo 0):$(ls -d cap.db.inputs 2>/dev/null)" "0:"
cp run.ltrun bad.ltrun
sqlite3 bad.ltrun "update input_files set data = cast('alpha' as blob), size = 5 where size = 23"
err=$("$LTRUN" --db bad.db import bad.ltrun 2>&1); rc=$?
check "a changed carried file: refused" contains "$rc $err" "2 ltrun: import: bad.ltrun: a carried input file does not match its hash"
check "a changed carried file: nothing restored" equals "$(ls -d bad.db.inputs 2>/dev/null)" ""
# a model manifest (hashes all consistent) naming a file outside its folder: refused before
# anything is written
cp run.ltrun evil.ltrun
payload_sha=$(printf 'evil\n' | sha256sum | cut -d' ' -f1)
manifest=$(printf '../../evil\t5\t%s\n' "$payload_sha")
msha=$(printf '%s\n' "$manifest" | sha256sum | cut -d' ' -f1)
old=$(sqlite3 evil.ltrun "select sha256 from run_inputs where kind = 'model'")
sqlite3 evil.ltrun "update run_inputs set sha256 = '$msha' where kind = 'model';
  update input_files set sha256 = '$msha', data = cast(char($(printf '%s\n' "$manifest" | od -An -tu1 | tr -s ' \n' ',' | sed 's/^,//; s/,$//')) as blob), size = $(( ${#manifest} + 1 )) where sha256 = '$old';
  insert into input_files values ('$payload_sha', 5, cast('evil' || char(10) as blob))"
err=$("$LTRUN" --db evil.db import evil.ltrun 2>&1); rc=$?
check "a manifest naming ../../evil: refused" contains "$rc $err" "is not NAME<tab>SIZE<tab>SHA256 of a plain file name; nothing imported"
check "a manifest naming ../../evil: nothing written" equals "$(ls -d evil.db.inputs ../evil 2>/dev/null)$(runs evil.db 2>/dev/null || echo 0)" "0"

# --- an empty folder elsewhere, the author's files gone: the bundle replays on its own
cd ..
mv A/run.ltrun B/
rm -r A/data/words.txt A/data/conf.lua A/models
cd B
export LTRUN_DB=$PWD/b.db
out=$("$LTRUN" import run.ltrun); rc=$?
check "import into a fresh store" contains "$rc $out" "0 imported run.ltrun"
check "import restores the carried files and the model" contains "$out" "restored 3 input(s) into $PWD/b.db.inputs"
mh=$(sqlite3 b.db "select sha256 from run_inputs where kind = 'model'")
check "the model folder restored by content, its files read-only" equals \
  "$(ls b.db.inputs/models/$mh | wc -l):$(find b.db.inputs/models/$mh -type f ! -perm 444 | wc -l)" "$nfiles:0"
h=$(sqlite3 b.db "select sha256 from run_inputs where rel = 'data/words.txt'")
check "restored by content, read-only" equals "$(stat -c %a "b.db.inputs/sha256/${h:0:2}/$h")" "444"
check "nothing written outside the store's folder for it" equals "$(find . -type f ! -path './b.db*' ! -name run.ltrun | wc -l)" "0"
out=$("$LTRUN" rerun 1 --yes 2>&1); rc=$?
check "rerun in the empty folder: runs" equals "$rc" "0"
check "rerun: reads the restored copies" contains "$out" "data workdir:data/words.txt: not here; read from its copy restored from a bundle (verified)"
check "rerun: loads the restored model" contains "$out" "model models:tiny: not here; read from its copy restored from a bundle (verified)"
check "rerun in the empty folder: reproduced" contains "$out" "run 2 against run 1: reproduced: all $n metrics equal"
check "the replay's inputs: recorded as the originals" equals \
  "$(sqlite3 b.db "select count(*) from run_inputs a join run_inputs b on a.root = b.root and a.rel = b.rel and a.sha256 = b.sha256 where a.run_id = 1 and b.run_id = 2"):$(sqlite3 b.db "select count(*) from run_inputs where run_id = 2")" "3:3"
if bwrap --unshare-all --ro-bind / / true 2>/dev/null; then  # (tests/cli/sandbox.sh says why it may not)
  out=$("$LTRUN" rerun 1 --sandbox 2>&1); rc=$?
  check "rerun --sandbox: the restored copy mounted where the script looks" contains "$out" \
    "b.db.inputs/sha256/${h:0:2}/$h at "
  check "rerun --sandbox: reproduced" contains "$rc $out" "reproduced: all $n metrics equal"
fi
chmod u+w "b.db.inputs/sha256/${h:0:2}/$h"; printf 'tampered\n' > "b.db.inputs/sha256/${h:0:2}/$h"
err=$("$LTRUN" rerun 1 --yes 2>&1); rc=$?
check "a changed restored copy is not used" contains "$rc $err" "2 ltrun: rerun: run 1 did not start: data workdir:data/words.txt is missing"
# a run from another machine names paths of that machine: exporting it never carries a file of
# this one, even one with the recorded content
printf 'secret\n' > secret.txt
rm -f "b.db.inputs/sha256/${h:0:2}/$h"
sqlite3 b.db "update run_inputs set path = '$PWD/secret.txt', sha256 = '$(sha256sum secret.txt | cut -d' ' -f1)' where run_id = 1 and rel = 'data/words.txt';
  update runs set machine_id = 'elsewhere', host = 'elsewhere' where id = 1"
err=$("$LTRUN" export 1 --with-inputs -o leak.ltrun 2>&1); rc=$?
check "a run from elsewhere: its recorded path is not read" contains "$rc $err" "2 ltrun: export --with-inputs: data $PWD/secret.txt of run 1 is not in $PWD/b.db.inputs and the run was made on another machine"

# --- rerun --sources=current from another folder: modules from the folder it runs in, while
# the recorded folder still exists
cd ../A
export LTRUN_DB=$PWD/runs.db
printf 'local M = {}\nfunction M.value() return 1 end\nreturn M\n' > proj/helper.lua
printf 'lt.run.log("value", require("helper").value())\n' > proj/mod.lua
"$LTRUN" proj/mod.lua
mid=$(sqlite3 runs.db "select max(id) from runs")
mkdir -p ../C/proj && sed 's/return 1/return 2/' proj/helper.lua > ../C/proj/helper.lua
cd ../C
out=$("$LTRUN" rerun "$mid" --yes --sources=current 2>&1); rc=$?
nid=$(sqlite3 "$LTRUN_DB" "select max(id) from runs")
check "--sources=current elsewhere: runs" equals "$rc" "0"
check "--sources=current: says where modules come from" contains "$out" "today's modules beside the script come from $PWD/proj"
check "--sources=current: this folder's module ran" equals "$(sqlite3 "$LTRUN_DB" "select value from metrics where run_id = $nid and name = 'value'")" "2.0"
finish
