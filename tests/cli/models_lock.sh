# tests/cli/models_lock.sh: lt.models makes a missing model once, under a lock, however many
# processes ask for it at the same time: three processes ask for a toy recipe (its make takes
# a second and counts itself in a log) at once; it is made once, in one child run `model:toy`,
# and all three get its path. An unknown name is an error listing the known recipes.
root=$(realpath "$(dirname "$0")/../..")
source "$(dirname "$0")/common.bash"
export LTRUN_MODELS=$SCRATCH/shared_models
cat >toy_recipe.lua <<'LUA'
local M = { args = { out = { "", "the folder" } } }
function M.make(cfg)
  local log = assert(io.open(os.getenv("TOY_LOG"), "a"))
  log:write("made by ", lt.proc.pid(), "\n")
  log:close()
  lt.proc.sleep(1.0)
  lt.fs.mkdir(cfg.out)
  local f = assert(io.open(cfg.out .. "/config.json", "w"))
  f:write("{}")
  f:close()
  return true
end
return M
LUA
cat >ask.lua <<'LUA'
lt.models.recipes.toy = { "toy_recipe", {} }
print("path " .. lt.models.get("toy"))
LUA
export TOY_LOG=$SCRATCH/made.log
for i in 1 2 3; do "$LTRUN" ask.lua >out$i.txt 2>err$i.txt & done
wait
check "made once by three processes asking at once" equals "$(grep -c '^made by' made.log)" "1"
for i in 1 2 3; do
  check "process $i got the path" equals "$(cat out$i.txt)" "path $LTRUN_MODELS/toy"
done
check "one child run model:toy" equals "$(sql1 "select count(*) from runs where name = 'model:toy' and status = 'ok'")" "1"
"$LTRUN" -e 'lt.models.get("tiny-qwen-typo")' >/dev/null 2>err.txt
check "an unknown name lists the recipes" contains "$(cat err.txt)" "no recipe 'tiny-qwen-typo' (known: tiny-agent, tiny-code, tiny-code-8l, tiny-math, tiny-math-8l, tiny-nemotron, tiny-qwen3, tiny-qwen3-8l)"
finish
