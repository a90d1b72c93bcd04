-- tests/lua/rl.lua: lt.rl from Lua: advantages and policy_loss against hand-computed values
-- (the same formulas as tests/rl/test_loss.cpp), prompt sets in the five layouts with their
-- errors, templates, decontamination, rewards, and rollouts / log-probs / reference on a
-- tiny model.
local T = require "lt.test"
local tmp = os.getenv("LTRUN_TEST_TMP") .. "/lua_rl"
os.execute("rm -rf '" .. tmp .. "'")
os.execute("mkdir -p '" .. tmp .. "'")

local function write(name, text)
  local f = assert(io.open(tmp .. "/" .. name, "w"))
  f:write(text)
  f:close()
  return tmp .. "/" .. name
end

T.case("advantages: GRPO std and Dr. GRPO mean-only", function()
  local a = lt.rl.advantages({1, 0, 0, 1, 1, 1, 1, 1}, 4)
  local v = 0.866023903787  -- 0.5 / (sqrt(1/3) + 1e-6)
  for i, want in ipairs({v, -v, -v, v, 0, 0, 0, 0}) do T.near(a[i], want, 1e-10, "std " .. i) end
  local d = lt.rl.advantages({0.2, 0.9, 0.4}, 3, { norm = "none" })
  T.near(d[1], -0.3, 1e-12); T.near(d[2], 0.4, 1e-12); T.near(d[3], -0.1, 1e-12)
  T.raises(function() lt.rl.advantages({1, 2, 3}, 2) end, "multiple of group_size 2")
  T.raises(function() lt.rl.advantages({1, 2}, 2, { norm = "z" }) end, "expected std or none")
end)

T.case("policy_loss: hand values for the three aggregations", function()
  local args = {
    logp = lt.tensor{{-1.0, -2.0, -0.5}, {-1.5, -0.2, -3.0}},
    old_logp = lt.tensor{{-1.1, -1.5, -0.5}, {-1.0, -0.2, -3.0}},
    ref_logp = lt.tensor{{-1.2, -2.0, -0.4}, {-1.5, -0.3, -3.0}},
    mask = lt.tensor{{1, 1, 1}, {1, 1, 0}},
    adv = lt.tensor{1.0, -0.5},
    kl = 0.1, max_len = 4,
  }
  local want = {
    ["token-mean"] = { -0.361765533774, -0.362340315558, 0.00574781783792 },
    ["seq-mean-token-mean"] = { -0.226430966328, -0.226950262965, 0.00519296636793 },
    ["seq-mean-token-sum-norm"] = { -0.226103458609, -0.226462697224, 0.0035923861487 },
  }
  for agg, w in pairs(want) do
    args.agg = agg
    local r = lt.rl.policy_loss(args)
    T.near(r.loss:item(), w[1], 1e-6, agg .. " loss")
    T.near(r.pg, w[2], 1e-6, agg .. " pg")
    T.near(r.kl, w[3], 1e-5, agg .. " kl")
    T.near(r.clip_frac, 0.2, 1e-7, agg .. " clip_frac")
    T.near(r.approx_kl, 0.18, 1e-6, agg .. " approx_kl")
  end
  args.agg, args.kl, args.ref_logp, args.clip_high = "token-mean", 0, nil, 0.05
  T.near(lt.rl.policy_loss(args).loss:item(), -0.351306131943, 1e-6, "clip-higher")
  T.same_table(lt.rl.preset("dr_grpo"), { agg = "seq-mean-token-sum-norm", kl = 0, norm = "none" })
  T.same_table(lt.rl.preset("grpo"), { agg = "token-mean", kl = 0.001, norm = "std" })
  args.agg = "sum"
  T.raises(function() lt.rl.policy_loss(args) end, "aggregation 'sum'")
end)

T.case("prompt sets: five layouts, sampling, malformed lines", function()
  -- one line in the layout of each data set
  local numina = write("numina.jsonl", lt.json.encode{ source = "olympiads", problem = "Find x if 2x = 6.",
    solution = "Divide: x = 3, so \\boxed{3}.", messages = {} } .. "\n")
  local mathf = write("math.jsonl", lt.json.encode{ problem = "What is $\\frac{1}{2}+\\frac{1}{4}$?",
    solution = "We get $\\boxed{\\frac{3}{4}}$.", level = "Level 1", type = "Algebra" } .. "\n")
  local gsm = write("gsm8k.jsonl", lt.json.encode{ question = "Tom has 3 apples and buys 4. How many?",
    answer = "3 + 4 = <<3+4=7>>7\n#### 7" } .. "\n\n")
  local dsr = write("deepscaler.jsonl", lt.json.encode{ problem = "Compute 5*5.", answer = "25",
    solution = "It is \\boxed{25}." } .. "\n")
  local sky = write("skywork.jsonl", lt.json.encode{ data_source = "train-math", ability = "math",
    prompt = { { role = "user", content = "Sum of 2 and 9?" } },
    reward_model = { ground_truth = "[\"11\"]", style = "rule" } } .. "\n")
  local want = {
    { numina, "Find x if 2x = 6.", "3" }, { mathf, "What is $\\frac{1}{2}+\\frac{1}{4}$?", "\\frac{3}{4}" },
    { gsm, "Tom has 3 apples and buys 4. How many?", "7" }, { dsr, "Compute 5*5.", "25" },
    { sky, "Sum of 2 and 9?", "11" } }
  for _, w in ipairs(want) do
    local items = lt.rl.prompts(w[1])
    T.eq(#items, 1, w[1])
    T.eq(items[1].question, w[2], w[1])
    T.eq(items[1].answer, w[3], w[1])
    T.eq(items[1].source, w[1] .. ":1")
  end
  -- explicit fields
  local f = write("custom.jsonl", '{"q": "one?", "a": 1}\n{"q": "two?", "a": 2}\n')
  local items = lt.rl.prompts(f, { question = "q", answer = "a" })
  T.eq(items[2].answer, "2")
  -- malformed lines name file:line
  local bad = write("bad.jsonl", '{"question": "ok?", "answer": "1"}\n{"question": "x", \n')
  T.raises(function() lt.rl.prompts(bad) end, "bad.jsonl:2: invalid JSON")
  local noans = write("noans.jsonl", '{"question": "ok?", "answer": "1"}\n\n{"problem": "x", "solution": "no box"}\n')
  T.raises(function() lt.rl.prompts(noans) end, "noans.jsonl:3: no answer")
  local noq = write("noq.jsonl", '{"text": "x", "answer": "1"}\n')
  T.raises(function() lt.rl.prompts(noq) end, "noq.jsonl:1: no question")
  -- seeded down-sampling: same seed same subset, in file order
  local lines = {}
  for i = 1, 50 do lines[i] = lt.json.encode{ question = "q" .. i, answer = tostring(i) } end
  local big = write("big.jsonl", table.concat(lines, "\n") .. "\n")
  local a, b = lt.rl.prompts(big, { n = 10, seed = 3 }), lt.rl.prompts(big, { n = 10, seed = 3 })
  local c = lt.rl.prompts(big, { n = 10, seed = 4 })
  T.eq(#a, 10)
  local same, differ = true, false
  for i = 1, 10 do
    same = same and a[i].id == b[i].id
    differ = differ or a[i].id ~= c[i].id
    if i > 1 then T.ok(tonumber(a[i].id) > tonumber(a[i - 1].id), "file order") end
  end
  T.ok(same, "same seed, same sample"); T.ok(differ, "another seed, another sample")
end)

T.case("templates and decontamination", function()
  T.eq(lt.rl.format_prompt("What is 2+2?"),
       "What is 2+2?\nPlease reason step by step, and put your final answer within \\boxed{}.")
  T.eq(lt.rl.format_prompt("Q", "Question: {question}\nAnswer:"), "Question: Q\nAnswer:")
  local qwen = write("qwen_tc.json", lt.json.encode{ chat_template = "{% for message in messages %}<|im_start|>{{ message.role }}..." })
  T.eq(lt.rl.chat_prompt("Hi", qwen), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
  local other = write("other_tc.json", lt.json.encode{ chat_template = "[INST] {{ x }} [/INST]" })
  T.raises(function() lt.rl.chat_prompt("Hi", other) end, "neither ChatML")
  local items = {
    { id = "a", question = "Natalia sold clips to 48 of her friends in April, and then she sold half as many" },
    { id = "b", question = "A train leaves the station at noon travelling at sixty miles per hour" },
    { id = "c", question = "short one" },
  }
  local evals = { "NATALIA sold clips to 48 of her friends in April, and then...", "Short one!" }
  local kept, removed, ids = lt.rl.decontaminate(items, evals, { n = 8 })
  T.eq(removed, 2)
  T.eq(#kept, 1); T.eq(kept[1].id, "b")
  T.same_table(ids, { "a", "c" })
end)

T.case("rewards", function()
  T.eq(lt.rl.math_reward("so the total is 7.\n#### 7", "7"), 1)
  T.eq(lt.rl.math_reward("thus \\boxed{\\dfrac{3}{4}}", "0.75"), 1)
  T.eq(lt.rl.math_reward("#### 8", "7"), 0)
  T.eq(lt.rl.format_reward("x #### 7", "hash"), 1)
  T.eq(lt.rl.format_reward("x #### \n", "hash"), 0)
  T.eq(lt.rl.format_reward("\\boxed{2}", "boxed"), 1)
  T.eq(lt.rl.format_reward("\\boxed{2", "any"), 0)
  T.raises(function() lt.rl.format_reward("x", "json") end, "expected boxed, hash or any")
end)

T.case("rollouts, log-probs and the shared-prefix reference on a tiny model", function()
  lt.model.new{ out = tmp .. "/m", arch = "qwen3", layers = 3, hidden = 32, heads = 4,
                kv_heads = 2, vocab = 300, seed = 5 }
  local m = lt.model.load(tmp .. "/m")
  local opts = { group_size = 3, max_response = 6, temperature = 1.0, seed = 7 }
  local r = lt.rl.rollout(m, { "the cat", "a dog sat" }, opts)
  local r2 = lt.rl.rollout(m, { "the cat", "a dog sat" }, opts)
  T.eq(r.ids:size(0), 6)
  T.ok(r.ids:equal(r2.ids), "same seed, same rollouts")
  T.ok(r.logprobs:equal(r2.logprobs), "same log-probs")
  T.same_table(r.prompt_index, { 1, 1, 1, 2, 2, 2 })
  T.eq(#r.texts, 6)
  -- at most 2 rows decode at once, waiting rows taking finished ones' places or not: the same
  -- tokens (each row draws from its own stream; exact unless a draw falls within the fp32
  -- rounding of other batch shapes of a boundary of its CDF, ~1e-5 per token); stop ids on a
  -- fifth of the vocabulary so that rows end at different steps and places free up
  local stops = {}
  for i = 1, 60 do stops[i] = i * 5 - 1 end
  local ro = { group_size = 3, max_response = 6, temperature = 1.0, seed = 7, stop_ids = stops }
  local base = lt.rl.rollout(m, { "the cat", "a dog sat" }, ro)
  ro.max_rows, ro.refill = 2, true
  local on = lt.rl.rollout(m, { "the cat", "a dog sat" }, ro)
  ro.refill = false
  local off = lt.rl.rollout(m, { "the cat", "a dog sat" }, ro)
  T.ok(on.ids:equal(base.ids) and off.ids:equal(base.ids), "refill on / off / no cap: the same rollouts")
  -- the schedule from the response lengths (a row samples once per step, its stop id kept):
  -- rows 1, 2 start; a row leaves after its last token; waiting rows fill free places at once
  -- (refill) or when the batch is empty; a decode step runs while rows remain
  local function schedule(lens, cap, refill)
    local running, nextr, steps, refilled = {}, 1, 0, 0
    local function admit(k, into_running)
      for _ = 1, k do running[#running + 1] = { row = nextr, left = lens[nextr] }; nextr = nextr + 1 end
      if into_running then refilled = refilled + k end
    end
    admit(math.min(cap, #lens), false)
    while #running > 0 do
      local keep = {}
      for _, x in ipairs(running) do
        x.left = x.left - 1
        if x.left > 0 then keep[#keep + 1] = x end
      end
      running = keep
      if #running > 0 then steps = steps + 1 end
      local free = cap - #running
      if nextr <= #lens and free > 0 and (#running == 0 or refill) then
        admit(math.min(free, #lens - nextr + 1), #running > 0)
      end
    end
    return steps, refilled
  end
  local lens = {}
  for i, resp in ipairs(base.responses) do lens[i] = #resp end
  local s_on, f_on = schedule(lens, 2, true)
  local s_off, f_off = schedule(lens, 2, false)
  T.eq(on.decode_steps, s_on, "decode steps with refill")
  T.eq(on.refilled_rows, f_on, "rows refilled")
  T.eq(off.decode_steps, s_off, "decode steps without refill")
  T.eq(off.refilled_rows, 0)
  T.eq(base.refilled_rows, 0)
  T.ok(on.refilled_rows > 0, "rows joined a running batch (response lengths " .. table.concat(lens, " ") .. ")")
  T.raises(function() lt.rl.rollout(m, { "the cat" }, { max_rows = -1 }) end, "max_rows must be >= 0")
  T.raises(function() lt.rl.rollout(m, { "the cat" }, { refil = true }) end, "refil")
  T.raises(function() lt.rl.rollout(m, { "the cat" }, { refill = 1 }) end, "refill")
  local lp = lt.rl.logprobs(m, r, { temperature = 1.0 })  -- on m's device; rollouts are on the cpu
  -- KV-cache decoding and one full pass over the packed batch sum in other orders: in fp32
  -- through 3 blocks of width 32, a log-prob (|log p| < 10) moves by ~ 3 x 32 x 2^-24 x 10,
  -- 2e-5 at most (5e-7 seen); 1e-4 is five times the bound
  T.ok(((lp:to("cpu") - r.logprobs) * r.response_mask):abs():max() < 1e-4, "sampling log-probs = recomputed")
  m:train_only(lt.layers.range(2, 2))
  local shared, copied = lt.rl.reference(m), lt.rl.reference(m, { copy = true })
  T.eq(shared.from_layer, 2)
  T.ok(shared.bytes < copied.bytes / 2, "the reference keeps one block")
  local a, b = shared:logprobs(m, r), copied:logprobs(m, r)
  -- the same blocks on the same rows, the copy in its own batch: a few fp32 roundings of
  -- |log p| < 10 (2^-24 x 10 = 6e-7 each); 1e-5 is some 15 of them
  T.ok(((a - b):to("cpu") * r.response_mask):abs():max() < 1e-5, "shared prefix = copy")
  -- from the policy's own hidden state at block 2 (as GRPO runs it): the same values
  local e = lt.rl.entry(m, r, 2)
  T.same_table(e:size(), { r.ids:size(0), r.ids:size(1), m.config.hidden_size })
  local c = shared:logprobs(m, r, { entry = e })
  -- the given entry is the hidden state the reference computes itself (same blocks, same rows,
  -- same batch): the same sums, equal to the bit; 1e-6 allows one rounding of |log p| < 10
  T.ok(((c - a):to("cpu") * r.response_mask):abs():max() < 1e-6, "shared prefix from the given entry = running the prefix")
  T.raises(function() lt.rl.entry(m, r, 0) end, "block 0 is not in 1")
  T.raises(function() shared:logprobs(m, r, { entry = e:narrow(1, 0, 3) }) end, "entry must be the hidden state")

  -- the eval harness's math prompt template (the layer scan's math_heldout): its greedy
  -- output is m:generate's on the template with the question put in
  local items = { { id = "q1", bench = "gsm8k", question = "the cat", answer = "4" },
                  { id = "q2", bench = "gsm8k", question = "a dog sat", answer = "7" } }
  -- batch_size 1: each prompt alone, as m:generate runs it, so the two greedy outputs are the
  -- same computation (a padded batch sums in another order, and a near tie of this random
  -- model's logits could then go the other way on some host's BLAS kernels)
  local res = lt.eval.score(m, items, {}, { protocols = { "generate" }, template = "Q: {question} / {question} =",
                                            max_new_tokens = 5, bench = "tmpl", batch_size = 1 })
  for i, it in ipairs(items) do
    local want = m:generate("Q: " .. it.question .. " / " .. it.question .. " =", { max_new_tokens = 5 })
    T.eq(res.items[i].output, want, "templated prompt " .. i)
  end
  T.raises(function() lt.eval.score(m, items, {}, { template = "no placeholder", bench = "tmpl" }) end, "has no {question}")

  -- lt.rl.accuracy's per-item list: item i is right when m:generate's greedy answer to its
  -- templated prompt, read by lt.eval.extract_math, is its answer. Items 1 and 3 get questions
  -- this random model answers with a number, their answers set to those numbers (right); 2 and
  -- 4 an answer it does not give (wrong). Which questions it answers with a number depends on
  -- the host's rounding (on the GPU none of the first four did), so they are picked from a pool
  local pool = { "a dog sat", "the red hat", "the cat", "a cat sat on the mat", "the dog", "red", "a hat",
                 "the mat sat", "cat dog", "a red dog", "the hat sat", "sat on", "a b c", "dog cat hat" }
  local answered = {}
  for _, q in ipairs(pool) do
    local got = lt.eval.extract_math(m:generate("Q: " .. q .. " =", { max_new_tokens = 12 }))
    if got and got ~= "" then answered[#answered + 1] = { q = q, a = got } end
  end
  T.ok(#answered >= 1, "some question of the pool is answered with a number (none of " .. #pool .. ")")
  local a1, a3 = answered[1] or { q = "x", a = "x" }, answered[2] or answered[1] or { q = "x", a = "x" }
  local acc_items = { { id = "a1", question = a1.q, answer = a1.a }, { id = "a2", question = "the red hat", answer = "-12345" },
                      { id = "a3", question = a3.q, answer = a3.a }, { id = "a4", question = "the cat", answer = "-12345" } }
  local qs = acc_items
  -- batch 1: each prompt alone, the computation m:generate made above (see batch_size above)
  local frac, each = lt.rl.accuracy(m, acc_items, { template = "Q: {question} =", max_response = 12, batch = 1 })
  local want, n = {}, 0
  for i, it in ipairs(acc_items) do
    want[i] = it.answer ~= "-12345"
    n = n + (want[i] and 1 or 0)
  end
  T.same_table(each, want)
  T.near(frac, n / #qs, 1e-12)
  T.ok(n >= 1 and n < #qs, "some items right, some wrong")
end)

T.case("lt.rl.grpo takes the rollout's batching options (max_rows, refill, share_prefill, drop_finished)", function()
  local m = lt.model.load(tmp .. "/m"):train_only(lt.layers.range(2, 2))
  local items = {}
  for i = 1, 4 do items[i] = { question = ("q %d"):format(i), answer = tostring(i) } end
  local seen = 0
  local r = lt.rl.grpo(m, { data = items, template = "Q: {question} =", prompts = 2, group_size = 3, max_response = 4,
                            iterations = 1, micro_batch = 6, lr = 1e-4, progress = false, max_rows = 2, refill = true,
                            share_prefill = false, drop_finished = true,
                            rewards = { r = { weight = 1, fn = function() seen = seen + 1; return 0 end } } })
  T.eq(r.steps, 1)
  T.eq(seen, 6, "every row of 2 prompts x 3 samples was rolled out and rewarded")
  T.raises(function() lt.rl.grpo(m, { data = items, refil = true }) end, "refil")
  T.raises(function() lt.rl.grpo(m, { data = items, max_rows = -1, progress = false, iterations = 1 }) end, "max_rows")
end)

T.finish()
