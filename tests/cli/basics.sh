# tests/cli/basics.sh: the command line as a user meets it.
source "$(dirname "$0")/common.bash"

out=$("$LTRUN" --help); check "help lists commands" contains "$out" "ltrun sql @NAME"
out=$("$LTRUN" --version); check "version names LibTorch" contains "$out" "LibTorch"

out=$("$LTRUN" --log -e 'print(1 + 1)'); check "-e runs a chunk" equals "$out" "2"
check "the -e run is ok" equals "$(sql1 "select name, status from runs")" "-e,ok"

cat > hello.lua <<'L'
local study = require "lt.study"
local cfg = study.args{ steps = 3, who = "world" }
print(("hello %s %d %s %s"):format(cfg.who, cfg.steps, arg[0]:match("[^/]+$"), select("#", ...)))
for i = 1, cfg.steps do lt.run.log("loss", 1 / i) end
print(("%.6f"):format(math.random()))
L
out=$("$LTRUN" hello.lua --steps=5 --who=ltrun --seed 7)
check "script args reach the script (study.args, arg, ...)" contains "$out" "hello ltrun 5 hello.lua 2"
id=$(sql1 "select max(id) from runs")
check "args stored" equals "$(sql1 "select args_json from runs where id=$id")" '"[""--steps=5"",""--who=ltrun""]"'
check "seed stored" equals "$(sql1 "select seed from runs where id=$id")" "7"
check "metrics stored" equals "$(sql1 "select count(*) from metrics where run_id=$id")" "5"
check "params stored" equals "$(sql1 "select value from params where run_id=$id and key='who'")" "ltrun"
out2=$("$LTRUN" hello.lua --steps=5 --who=ltrun --seed 7)
check "same seed, same random numbers" equals "$out2" "$out"

# rerun: same script text and args, a new run pointing to the old one
out3=$("$LTRUN" rerun "$id" --yes 2>/dev/null)
check "rerun reproduces the output" equals "$out3" "$out"
new=$(sql1 "select max(id) from runs")
check "rerun points to the old run" equals "$(sql1 "select rerun_of, seed from runs where id=$new")" "$id,7"
echo 'print("changed")' > hello.lua
out4=$("$LTRUN" rerun "$id" --yes 2>/dev/null)
check "rerun uses the stored text, not the file" equals "$out4" "$out"

# failures
printf 'local x = \nprint(\n' > syntax.lua
err=$("$LTRUN" syntax.lua 2>&1); rc=$?
check "syntax error exits 1" equals "$rc" "1"
check "syntax error names the file and line" contains "$err" "syntax.lua:3:"
check "syntax error run is failed" equals "$(sql1 "select status from runs order by id desc limit 1")" "failed"

printf 'local function f() error("deep failure") end\nlocal function g() f() end\ng()\n' > boom.lua
err=$("$LTRUN" boom.lua 2>&1); rc=$?
check "runtime error exits 1" equals "$rc" "1"
check "full traceback" contains "$err" "in function 'g'"
check "error text with traceback in the DB" equals "$(sql1 "select instr(error, 'stack traceback') > 0 from runs order by id desc limit 1")" "1"

cat > child.lua <<'L'
lt.run.child("ok_plan", function() lt.run.log("loss", 1) end)
lt.run.child("bad_plan", function() lt.run.log("loss", 2); local t = nil; return t.x end)
print("not reached")
L
out=$("$LTRUN" child.lua 2>err.txt); rc=$?
check "error inside a child run: exit 1" equals "$rc" "1"
check "error inside a child run: rest of the script skipped" equals "$out" ""
check "error inside a child run: message" contains "$(cat err.txt)" "attempt to index local 't'"
root=$(sql1 "select max(id) from runs where parent_id is null")
check "child statuses" equals "$("$LTRUN" sql "select name || '=' || status from runs where parent_id=$root order by id" --csv | tail -n +2 | tr '\n' ' ')" "ok_plan=ok bad_plan=failed "
check "root failed too" equals "$(sql1 "select status from runs where id=$root")" "failed"
check "metrics of the failed child kept" equals "$(sql1 "select count(*) from metrics m join runs r on r.id=m.run_id where r.name='bad_plan'")" "1"

err=$("$LTRUN" missing.lua 2>&1); rc=$?
check "missing script exits 2" equals "$rc" "2"
check "missing script is named" contains "$err" "missing.lua: no such script"

err=$("$LTRUN" --device cuda -e 'print(1)' 2>&1); rc=$?
if "$LTRUN" -e 'os.exit(lt.cuda_available() and 0 or 1)' >/dev/null 2>&1; then :; else
  check "CUDA asked for without CUDA: exit 2" equals "$rc" "2"
  check "CUDA asked for without CUDA: clear message" contains "$err" "--device cuda"
fi
err=$("$LTRUN" --seed abc -e 'print(1)' 2>&1); check "bad seed" contains "$err" "--seed abc"

# C++ exceptions become Lua errors that scripts can catch
out=$("$LTRUN" -e 'local ok, e = pcall(lt.zeros(2).matmul, lt.zeros(2), lt.zeros(3)); print(ok, type(e))')
check "C++ error caught by pcall" equals "$out" "false	string"

# sql
out=$("$LTRUN" sql "select status, count(*) from runs group by 1 order by 1")
check "aligned table" contains "$out" $'status  count(*)\n------  --------'  # no run is left crashed (os.exit closes it)
check "row count" contains "$out" "rows)"
out=$("$LTRUN" sql "select 1 as a, 'x,y' as b" --csv)
check "csv quoting" equals "$out" $'a,b\n1,"x,y"'
out=$("$LTRUN" sql "select 1 as a, null as b" --json)
check "json" equals "$(tr -d ' \n' <<<"$out")" '[{"a":1,"b":null}]'
out=$("$LTRUN" sql @status); check "named query" contains "$out" "failed"
# a wide result fits 100 columns: the leading columns that fit, then a line naming the rest
wide="select 1 as $(for i in $(seq -w 1 12); do printf 'column_%s_of_twelve, 1 as ' "$i"; done)last_column"
out=$("$LTRUN" sql "$wide")
check "sql: an aligned table fits 100 columns" equals "$(awk 'length > 100' <<<"$out")" ""
check "sql: the columns left out are named" contains "$out" "more columns past 100 characters: "
check "sql: ... the last of them too" contains "$out" "last_column;"
check "sql: ... and how to see them" contains "$out" "--wide or --csv shows them)"
out=$("$LTRUN" sql "$wide" --wide)
check "sql --wide: every column" contains "$(head -1 <<<"$out")" "column_12_of_twelve  last_column"
check "sql --csv: every column" contains "$("$LTRUN" sql "$wide" --csv | head -1)" ",last_column"
err=$("$LTRUN" sql @nope 2>&1); check "unknown named query lists known ones" contains "$err" "known: "
err=$("$LTRUN" sql "selec nothing" 2>&1); rc=$?
check "bad SQL: exit 2 with sqlite's message" equals "$rc" "2"
check "bad SQL message" contains "$err" "syntax error"

out=$("$LTRUN" runs --limit 3); check "runs lists the latest" contains "$out" "(3 rows)"
out=$("$LTRUN" show "$id"); check "show lists params" contains "$out" "params"
check "show lists metrics" contains "$out" "loss"
err=$("$LTRUN" show 99999 2>&1); check "show unknown run" contains "$err" "no run with id 99999"

# a mistyped attention setting fails the run with the variable named, on every build
"$LTRUN" model new --layers 1 --hidden 16 --heads 2 --kv-heads 1 --vocab 300 m1 >/dev/null 2>&1
err=$(LTRUN_ATTENTION=flash "$LTRUN" -e 'lt.model.load("m1"):forward({1, 2, 3})' 2>&1); rc=$?
check "bad LTRUN_ATTENTION: exit 1" equals "$rc" "1"
check "bad LTRUN_ATTENTION: named" contains "$err" 'LTRUN_ATTENTION must be "sdpa" or "eager", found "flash"'
out=$(LTRUN_ATTENTION=eager "$LTRUN" -e 'print(lt.model.load("m1"):forward({1, 2, 3}).logits.shape[3])')
check "LTRUN_ATTENTION=eager runs" equals "$out" "300"

# a file that is not a run store
echo "this is not sqlite" > notadb.db
err=$("$LTRUN" --db notadb.db runs 2>&1); rc=$?
check "foreign file: exit 2" equals "$rc" "2"
check "foreign file: named" contains "$err" "notadb.db: not an ltrun run store"

finish
