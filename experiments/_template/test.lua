-- experiments/_template/test.lua (ctest lua._template): the template study runs as shipped, on a
-- tiny random model, and returns a row per plan whose loss is a number below the untrained one
-- (a few steps of plain next-token training on a repeated text always lower it).
local T = require "lt.test"
local tmp = os.getenv("LTRUN_TEST_TMP") .. "/lua_template"
lt.fs.remove(tmp)
lt.fs.mkdir(tmp)
lt.model.new{ out = tmp .. "/m", layers = 2, hidden = 32, heads = 2, kv_heads = 1, vocab = 300,
              seed = 3, corpus = "/usr/share/games/fortunes/chinese" }
local corpus = tmp .. "/text.txt"
local f = assert(io.open(corpus, "w"))
for i = 1, 200 do  -- documents (fortune files end each with a "%" line), a share of them held out
  f:write(("line %d: the same words again and again, so that they are learnt\n%%\n"):format(i % 7))
end
f:close()

local study = require "experiments._template._template"
local rows = study.run{ model = tmp .. "/m", corpus = corpus, steps = 8, lr = 3e-3, seq_len = 16,
                        micro_batch = 4, out = tmp .. "/out" }
T.case("a row per plan, the loss lower after training", function()
  T.eq(#rows, 2)
  for i, plan in ipairs{ "all", "shallow" } do
    T.eq(rows[i].plan, plan)
    T.ok(rows[i].after < rows[i].before,
         ("%s: %g < %g"):format(plan, rows[i].after, rows[i].before))
  end
end)
T.case("a child run per plan, ok, with its heldout_loss", function()
  local got = lt.run.query([[SELECT r.name, r.status, count(m.value) AS n FROM runs r
    LEFT JOIN metrics m ON m.run_id = r.id AND m.name = 'heldout_loss' WHERE r.parent_id = ?
    GROUP BY r.id ORDER BY r.name]], lt.run.id())
  T.eq(#got, 2)
  for _, r in ipairs(got) do T.eq(r.status .. ":" .. r.n, "ok:1", r.name) end
end)
T.finish()
