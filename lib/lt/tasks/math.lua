-- lt/tasks/math.lua: the math task of the RL studies (grpo.lua, the GRPO layer scans), one
-- place for what they share: the prompt template of the tiny math model, which prompts are
-- held out and how training prompts are decontaminated against them, the reward, and the
-- scores: greedy accuracy, avg@k of sampled answers (lt.eval.score) and self-consistency
-- (k samples per item voted by lt.eval.vote_items).
local M = {}

-- the prompt format of the tiny math model (lt.models.tiny_math)
M.template = "Question: {question}\nAnswer:"
M.rewards = { math = 1.0 }

-- Decontamination's n-gram length: a training prompt sharing a word n-gram with a held-out
-- question is dropped. 8 for given data; for the embedded default's own train.jsonl whole
-- questions (an n-gram longer than any question: exact match), since its problems come from
-- a few templates that share long word runs ("... in each box. How many eggs are there in
-- all?"): 8-grams would drop every multiplication problem (1135 of 2000 prompts) and leave a
-- set much harder than the held-out one; the recipe already keeps every test question out.
function M.decontamination_ngram(own_data) return own_data and 1000 or 8 end

-- the template text for a model: `template` ("default": lt.rl's own, the \boxed{} instruction;
-- nil: M.template), wrapped by the model folder's chat template when chat is true
function M.prompt_template(model_path, template, chat)
  local t = template == nil and M.template or template
  if t == "default" then t = nil end
  if chat then t = lt.rl.chat_prompt(t or "{question}", model_path .. "/tokenizer_config.json") end
  return t
end

-- The held-out items of a GSM8K-layout JSONL file ({"question", "answer": "... #### N"}): n of
-- them (0: all) drawn by the run's seed (stream rl.prompts), as lt.rl items ({question, answer})
-- and as lt.eval items ({id, question, answer = N}) in the same order. lt.rl.prompts reads each
-- answer's final answer (one "####", one \boxed{} or a bare answer) and refuses, by file:line,
-- an answer that has none or several: a sentence there could never be scored.
function M.heldout(path, n)
  local items = lt.rl.prompts(path, { n = n > 0 and n or nil })
  local evals = {}
  for i, it in ipairs(items) do
    evals[i] = { id = tostring(i), bench = "gsm8k", question = it.question, answer = it.answer }
  end
  return items, evals
end

-- avg@k of sampled answers on lt.eval items: k answers per item at `temperature` (seed: the
-- run's "eval" stream), logged as BENCH/avg@k; → avg@k and each item's number of right answers
function M.sampled(m, evals, o)
  local res = lt.eval.score(m, evals, {}, { protocols = { "generate" }, bench = o.bench or "math_heldout_avg",
                                            template = o.template, samples = o.samples, temperature = o.temperature,
                                            max_new_tokens = o.max_response, batch_size = 64 })
  local per, index = {}, {}
  for i, it in ipairs(evals) do per[i], index[it.id] = 0, i end
  for _, r in ipairs(res.items) do
    if r.correct then per[index[r.id]] = per[index[r.id]] + 1 end
  end
  return res.generate.avg_at_k or res.generate.acc, per
end

-- An evaluator of policy m on held-out items (M.heldout): score(when, step) logs WHEN_accuracy
-- (greedy, lt.rl.accuracy) and, with o.samples > 0, WHEN_sampled_accuracy (avg@k at
-- o.temperature); → {acc, ok = {per item}, sampled, per = {right answers per item}}.
-- o: template, chat, max_response, samples, temperature (the model folder for the chat template)
function M.evaluator(m, model_path, items, evals, o)
  local style = { template = M.prompt_template(model_path, o.template), chat = o.chat, max_response = o.max_response }
  local k_opts = { template = M.prompt_template(model_path, o.template, o.chat), samples = o.samples,
                   temperature = o.temperature, max_response = o.max_response }
  return function(when, step)
    local acc, ok = lt.rl.accuracy(m, items, style)
    lt.run.log(when .. "_accuracy", acc, { step = step })
    if (o.samples or 0) == 0 then return { acc = acc, ok = ok } end
    local s, per = M.sampled(m, evals, k_opts)
    lt.run.log(when .. "_sampled_accuracy", s, { step = step })
    return { acc = acc, ok = ok, sampled = s, per = per }
  end
end

-- The majority answer of each item's samples: results = rows {id =, sample = 0-based,
-- prediction =} (as lt.eval.score's items) in any order, voted by lt.eval.vote_items in
-- sample order with math equivalence (empty answers abstain; ties to the earliest sample) →
-- the share of items whose voted answer is right, {id = voted answer}
function M.majority(results, items)
  local preds = {}
  for _, r in ipairs(results) do
    preds[r.id] = preds[r.id] or {}
    preds[r.id][r.sample + 1] = r.prediction or ""
  end
  local v = lt.eval.vote_items(preds, items, "math")
  return v.acc, v.items
end

-- Self-consistency: k samples per item in one lt.eval.score call (bench BENCH, item ids ID#s),
-- the majority answer of each item (M.majority) scored → accuracy, {id = voted answer}
function M.self_consistency(m, evals, o)
  local res = lt.eval.score(m, evals, {}, { protocols = { "generate" }, bench = o.bench, samples = o.samples,
                                            temperature = o.temperature, template = o.template,
                                            max_new_tokens = o.max_response, batch_size = 64 })
  return M.majority(res.items, evals)
end

-- A folder given where a prompt JSONL file is expected (cfg[key] for each key, "" = the
-- default) is named before a model is made and scored; lt.rl.prompts would say the same later.
function M.check_prompt_files(cfg, keys)
  for _, key in ipairs(keys) do
    local path = cfg[key]
    if path and path ~= "" and lt.fs.is_dir(path) then
      local jsonl = {}
      for _, name in ipairs(lt.fs.list(path)) do
        if name:match("%.jsonl$") then jsonl[#jsonl + 1] = path .. "/" .. name end
      end
      table.sort(jsonl)
      error(("--%s=%s is a folder: expected a prompt JSONL file, one {\"question\", \"answer\"} object a line "
             .. "(GSM8K's layout; the answer ending \"#### N\")%s"):format(key, path,
             #jsonl > 0 and ": name one of its files, e.g. --" .. key .. "=" .. jsonl[1] or ""), 0)
    end
  end
end

return M
