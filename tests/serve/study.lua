-- tests/serve/study.lua: a small real study whose run store the `ltrun serve` tests read: a
-- tiny model (made here), a metric with known values (loss = 1/(1+step)), a logit-lens profile
-- per prompt (layer_metrics, one group per prompt), C-Eval items scored with the logit
-- and generate protocols (eval_items, with their prompts and outputs), an SVG artifact and two
-- child runs, each scored on the same four-item quiz with answer keys made so that, whatever
-- the model predicts, both solve q1, only plan_a q2, only plan_b q3 and neither q4 (the
-- item-level comparison of two runs).
-- ltrun --db DB tests/serve/study.lua --out=DIR [--steps=N]
local study = require "lt.study"
local svg = require "lt.report.svg"
local cfg = study.args{ out = "serve_study", steps = 50 }
local data = arg[0]:match("^(.*)/serve/[^/]+$") .. "/data/eval"

lt.model.new{ out = cfg.out .. "/model", layers = 3, hidden = 32, heads = 4, kv_heads = 2, vocab = 400,
              seed = 3, corpus = data }
local m = lt.model.load(cfg.out .. "/model")
lt.run.param("model", cfg.out .. "/model")
lt.run.param("steps", cfg.steps)

for s = 0, cfg.steps - 1 do lt.run.log("loss", 1 / (1 + s), { step = s }) end
lt.run.log("lr", 0.001, { step = 0 })

local prompts = { "hot cold", "big small", "up down" }
local rows = {}
for g, text in ipairs(prompts) do
  local out = m:forward(m.tokenizer:encode(text), { capture = true })
  local vals = {}
  for l = 0, m.n_layers - 1 do vals[l + 1] = m:lens(out.hidden[l + 1])[0][-1]:softmax():max() end
  lt.run.log_layers("p_max", vals, { grp = "g" .. g })
  rows[g] = vals
end

lt.eval.run(m, "ceval:" .. data .. "/ceval", { protocols = { "logit", "generate" }, max_new_tokens = 4 })

-- the quiz: the model's predictions first (bench "probe", the same prompts: an answer key is
-- not part of a prompt, and one process gives the same letters for the same prompts), then
-- answer keys from them: right for q1 and q2 in plan_a, q1 and q3 in plan_b
local quiz = {}
for k, q in ipairs{ "hot or cold", "big or small", "up or down", "left or right" } do
  quiz[k] = { id = "q" .. k, question = "Which is first: " .. q .. "?", choices = { "first", "second", "third" }, category = "quiz" }
end
local predicted = {}
local function key(plan)
  local right = plan == "plan_a" and { true, true, false, false } or { true, false, true, false }
  local items = {}
  for k, it in ipairs(quiz) do
    local p = predicted[k]
    items[k] = { id = it.id, question = it.question, choices = it.choices, category = it.category,
                 answer = right[k] and p or (p == "A" and "B" or "A") }
  end
  return items
end

local cols = {}
for l = 0, m.n_layers - 1 do cols[l + 1] = tostring(l) end
svg.heatmap(cfg.out .. "/p_max.svg", { title = "p_max", rows = prompts, cols = cols,
                                       panels = { { title = "p_max", values = rows } } })
lt.run.artifact(cfg.out .. "/p_max.svg")

for _, plan in ipairs{ "plan_a", "plan_b" } do
  lt.run.child(plan, function()
    lt.run.param("plan", plan)
    if plan == "plan_a" then
      for k, r in ipairs(lt.eval.score(m, quiz, nil, { protocols = { "logit" }, bench = "probe" }).items) do predicted[k] = r.prediction end
    end
    lt.eval.score(m, key(plan), nil, { protocols = { "logit", "generate" }, bench = "quiz", max_new_tokens = 3 })
    lt.run.param("quiz_prompt_q1", lt.eval.prompt(quiz[1]))  -- what eval_items.prompt of q1 must hold
    for s = 0, 9 do lt.run.log("loss", (plan == "plan_a" and 2 or 3) / (1 + s), { step = s }) end
    lt.run.log_layers("p_max", rows[1], { grp = "g1" })
  end)
end
