-- tests/lua/freeze_deep.lua: experiments/freeze_deep.lua end to end on a tiny model with a
-- few steps: the four child runs, what each may train, frozen weights untouched, the
-- benchmark scores, and db/queries/freeze_deep.sql over them.
local T = require "lt.test"
local root = debug.getinfo(1, "S").source:match("^@(.*)/tests/lua/[^/]*$")
local tmp = os.getenv("LTRUN_TEST_TMP") .. "/lua_freeze_deep"
os.execute("rm -rf '" .. tmp .. "'")
lt.model.new{ out = tmp .. "/m", layers = 4, hidden = 32, heads = 4, kv_heads = 2, vocab = 300, seed = 4,
              corpus = "/usr/share/games/fortunes/chinese" }
local corpus = tmp .. "/zh.txt"
local f = assert(io.open(corpus, "w"))
for i = 1, 200 do f:write(("第%d条：学而时习之，不亦说乎？有朋自远方来，不亦乐乎？\n%%\n"):format(i)) end
f:close()

arg = { "--model=" .. tmp .. "/m", "--corpus=" .. corpus, "--steps=4", "--eval_every=2", "--seq_len=32",
        "--micro_batch=4", "--bench_limit=8" }
dofile(root .. "/experiments/freeze_deep.lua")
lt.run.flush()
local study = lt.run.id()

local function child(name)
  return lt.run.query("SELECT id, status FROM runs WHERE parent_id = ? AND name = ?", study, name)[1]
end

T.case("one ok child run per plan and the base", function()
  for _, name in ipairs{ "base", "full", "train_shallow", "train_deep" } do
    local c = child(name)
    T.ok(c, "child " .. name)
    T.eq(c.status, "ok", name)
  end
end)

T.case("trainable parameters follow the plans", function()
  local m = lt.model.load(tmp .. "/m")
  local total = m:n_params()
  local function trainable(name)
    return tonumber(lt.run.query("SELECT value FROM params WHERE run_id = ? AND key = 'trainable_params'", child(name).id)[1].value)
  end
  T.eq(trainable("full"), total)
  -- each half-plan freezes two of the four blocks and nothing else
  local per_block = 0
  for _, t in pairs(m:parameters(0)) do per_block = per_block + t:numel() end
  T.eq(trainable("train_shallow"), total - 2 * per_block)
  T.eq(trainable("train_deep"), total - 2 * per_block)
end)

T.case("frozen blocks do not move; trained ones do", function()
  local rows = lt.run.query("SELECT layer, value FROM layer_metrics WHERE run_id = ? AND name = 'weight_change' ORDER BY layer",
                            child("train_shallow").id)
  T.eq(#rows, 4)
  T.ok(rows[1].value > 0 and rows[2].value > 0, "shallow blocks trained")
  T.eq(rows[3].value, 0); T.eq(rows[4].value, 0)
  local deep = lt.run.query("SELECT layer, value FROM layer_metrics WHERE run_id = ? AND name = 'weight_change' ORDER BY layer",
                            child("train_deep").id)
  T.eq(deep[1].value, 0); T.eq(deep[2].value, 0)
  T.ok(deep[3].value > 0 and deep[4].value > 0, "deep blocks trained")
end)

T.case("benchmark scores and the named query", function()
  local n = lt.run.query("SELECT count(*) AS n FROM eval_items WHERE run_id = ?", child("full").id)[1].n
  T.eq(n, 8 * 2)  -- bench_limit items under two protocols
  local t = lt.run.query(assert(io.open(root .. "/db/queries/freeze_deep.sql")):read("*a"))
  T.eq(#t, 4)
  T.eq(t[1].plan, "base")
  T.ok(t[2].val_loss ~= nil and t[2].acc_logit ~= nil, "val loss and accuracy in the table")
end)

T.finish()
