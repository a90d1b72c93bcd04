-- tests/lua/eval.lua: the evaluation harness from Lua on a tiny model: the logit protocol's
-- option probabilities recomputed here from a plain forward pass, batching that does not
-- change answers, determinism, the generate protocol's letter extraction, eval_items rows.
local T = require "lt.test"
local data = arg[0]:match("^(.*)/lua/[^/]+$") .. "/data/eval"
local tmp = os.getenv("LTRUN_TEST_TMP") .. "/lua_eval"
os.execute("rm -rf '" .. tmp .. "'")
lt.model.new{ out = tmp, layers = 2, hidden = 32, heads = 4, kv_heads = 2, vocab = 400, seed = 3,
              corpus = data }
local m = lt.model.load(tmp)
local tok = m.tokenizer

-- P(letter) of each option of `it` from a plain forward pass over its prompt, summed over the
-- tokens "X" and " X"
local function option_probs(it)
  local p = m:forward(tok:encode(lt.eval.prompt(it)), { logits = "last" }).logits[0][0]:softmax()
  local probs = {}
  for c = 1, #it.choices do
    local letter = string.char(64 + c)
    local ids = {}
    for _, s_ in ipairs{ letter, " " .. letter } do
      local e = tok:encode(s_, { special = false })
      if #e == 1 then ids[e[1]] = true end
    end
    local total = 0
    for id in pairs(ids) do total = total + p[id] end
    probs[letter] = total
  end
  return probs
end

-- The harness's (batched, padded) pass and a plain one sum in other orders: through 2 blocks of
-- width 32 in fp32 a logit (|logit| < 1) moves by ~ 2 x 32 x 2^-24 = 4e-6 at most, a
-- probability by as much relative. A prediction is right when its option's probability is
-- within 1e-4 relative (25 times that) of the largest: two options closer than that are a tie
-- that another host's BLAS kernels may break the other way.
local TIE = 1e-4
local function check_prediction(it, prediction, what)
  local probs = option_probs(it)
  local best = 0
  for _, v in pairs(probs) do best = math.max(best, v) end
  T.ok(probs[prediction] and probs[prediction] >= best * (1 - TIE),
       ("%s: predicted %s (p %s), the largest p is %s"):format(what, tostring(prediction),
                                                               tostring(probs[prediction]), best))
end

T.case("logit protocol = P(letter) from a plain forward pass, summed over 'X' and ' X'", function()
  local s = lt.eval.run(m, "ceval:" .. data .. "/ceval", { protocols = { "logit" } })
  local items = lt.eval.load("ceval", data .. "/ceval")
  local by_id = {}
  for _, it in ipairs(items) do by_id[it.id] = it end
  T.ok(#s.items > 0, "items scored")
  for _, r in ipairs(s.items) do check_prediction(by_id[r.id], r.prediction, "prediction of " .. r.id) end
  T.eq(s.logit.n, 3)  -- the val split of the fixture, as the paper scores C-Eval
end)

T.case("batching and repetition do not change predictions", function()
  local a = lt.eval.run(m, "mc:" .. data .. "/mcq/sample.jsonl", { batch_size = 1 })
  local b = lt.eval.run(m, "mc:" .. data .. "/mcq/sample.jsonl", { batch_size = 16 })
  local c = lt.eval.run(m, "mc:" .. data .. "/mcq/sample.jsonl", { batch_size = 16 })
  local by_id = {}
  for _, it in ipairs(lt.eval.load("mcq", data .. "/mcq/sample.jsonl")) do by_id[it.id] = it end
  T.eq(#a.items, #b.items)
  for i = 1, #a.items do
    local x, y = a.items[i], b.items[i]
    T.eq(x.id .. x.protocol, y.id .. y.protocol, "the same item and protocol at " .. i)
    if x.protocol == "logit" then
      -- batch 1 and 16 sum in other orders: each is the largest option up to a tie (TIE above)
      check_prediction(by_id[x.id], x.prediction, "batch 1, item " .. x.id)
      check_prediction(by_id[y.id], y.prediction, "batch 16, item " .. y.id)
    else
      -- greedy text: a flip needs the two largest of 400 logits within ~4e-6 of each other at
      -- one of its steps; on these prompts the smallest such gap in 16 greedy steps is 1.7e-4,
      -- forty times that, so the outputs agree on every kernel
      T.eq(x.prediction, y.prediction, "batch 1 vs 16, item " .. x.id .. ", " .. x.protocol)
    end
    -- the same batch size again: the same computation, equal to the bit
    T.eq(y.prediction, c.items[i].prediction, "repeated run, item " .. y.id)
  end
end)

T.case("generate with refill (continuous batching): the same greedy outputs, sampled streams per item", function()
  lt.run.child("refill", function()  -- its eval items in a run of their own (the cases below count the run's)
  local mc = "mc:" .. data .. "/mcq/sample.jsonl"
  local a = lt.eval.run(m, mc, { protocols = { "generate" }, batch_size = 1 })
  local r1 = lt.eval.run(m, mc, { protocols = { "generate" }, batch_size = 1, refill = true })
  local r3 = lt.eval.run(m, mc, { protocols = { "generate" }, batch_size = 3, refill = true })
  T.eq(#r1.items, #a.items); T.eq(#r3.items, #a.items)
  for i = 1, #a.items do
    -- batch 1 with refill is each item alone, as without: equal to the bit. Three rows at once,
    -- joining as others finish: the argument of the case above (a flip needs a gap of ~4e-6,
    -- the smallest on these prompts is 1.7e-4)
    T.eq(r1.items[i].output, a.items[i].output, "refill at batch 1, item " .. a.items[i].id)
    T.eq(r3.items[i].output, a.items[i].output, "refill at batch 3, item " .. a.items[i].id)
  end
  -- math samples with refill: every item x sample present, predictions read from the outputs
  local gs = "gsm8k:" .. data .. "/gsm8k/test.jsonl"
  local s = lt.eval.run(m, gs, { samples = 3, max_new_tokens = 12, seed = 1, temperature = 1.0, refill = true, batch_size = 2 })
  T.eq(#s.items, 2 * 3)
  for _, r in ipairs(s.items) do T.eq(r.prediction, lt.eval.extract_math(r.output) or "") end
  T.raises(function() lt.eval.run(m, mc, { refil = true }) end, "refil")
  end)
end)

T.case("generate protocol extracts the first option letter of greedy text", function()
  local s = lt.eval.run(m, "mmlu:" .. data .. "/mmlu", { protocols = { "generate" }, max_new_tokens = 8 })
  for _, r in ipairs(s.items) do
    T.eq(r.prediction, lt.eval.extract_choice(r.output, 4), r.id)
  end
end)

T.case("math: samples, avg@k and pass@k, predictions extracted", function()
  local s = lt.eval.run(m, "gsm8k:" .. data .. "/gsm8k/test.jsonl", { samples = 3, max_new_tokens = 12, seed = 1 })
  T.eq(s.generate.k, 3)
  T.eq(#s.items, 2 * 3)
  for _, r in ipairs(s.items) do T.eq(r.prediction, lt.eval.extract_math(r.output) or "") end
  -- eval_items keep each output, and the prompt (lt.eval.prompt's) once per item: on sample 0's row
  lt.run.flush()
  local prompt_of = {}
  for _, it in ipairs(lt.eval.load("gsm8k", data .. "/gsm8k/test.jsonl")) do prompt_of[it.id] = lt.eval.prompt(it) end
  local stored = lt.run.query("SELECT item_id, prompt, output FROM eval_items WHERE run_id = ? AND bench = 'gsm8k' ORDER BY rowid", lt.run.id())
  T.eq(#stored, #s.items)
  local output_of = {}
  for _, r in ipairs(s.items) do output_of[r.sample == 0 and r.id or (r.id .. "#" .. r.sample)] = r.output end
  for _, row in ipairs(stored) do
    local base, k = row.item_id:match("^([^#]+)#?(%d*)$")
    if k == "" then T.eq(row.prompt, prompt_of[base], row.item_id) else T.eq(row.prompt, nil, row.item_id) end
    T.eq(row.output or "", output_of[row.item_id], row.item_id)
  end
end)

T.case("every prediction is a row of eval_items; accuracies are metrics", function()
  local rows = lt.run.query("SELECT bench, protocol, count(*) AS n FROM eval_items WHERE run_id = ? GROUP BY 1, 2 ORDER BY 1, 2", lt.run.id())
  T.same_table(rows[1], { bench = "ceval", protocol = "logit", n = 3 })
  local acc = lt.run.query("SELECT value FROM metrics WHERE name = 'ceval/logit/acc'")[1].value
  local right = lt.run.query("SELECT avg(correct) AS a FROM eval_items WHERE bench = 'ceval' AND protocol = 'logit'")[1].a
  T.near(acc, right, 1e-12)
end)

T.case("votes across runs, solved sets, newly solved", function()
  -- three "models" as child runs whose predictions we write: the vote is checkable by hand
  local function fake(name, preds)
    return lt.run.child(name, function()
      for id, p in pairs(preds) do
        lt.run.query("INSERT INTO eval_items(run_id, bench, item_id, category, protocol, prediction, answer, correct) VALUES (?, 'toy', ?, '', 'logit', ?, ?, ?)",
                     lt.run.id(), id, p, ({ q1 = "A", q2 = "B", q3 = "C" })[id], p == ({ q1 = "A", q2 = "B", q3 = "C" })[id] and 1 or 0)
      end
      return lt.run.id()
    end)
  end
  local r1 = fake("m1", { q1 = "A", q2 = "C", q3 = "D" })
  local r2 = fake("m2", { q1 = "B", q2 = "B", q3 = "C" })
  local r3 = fake("m3", { q1 = "A", q2 = "B", q3 = "B" })
  local v = lt.eval.vote_runs{ runs = { r1, r2, r3 }, bench = "toy" }
  T.eq(v.items.q1, "A"); T.eq(v.items.q2, "B")
  T.eq(v.items.q3, "D")  -- three-way tie: the earliest run's answer
  T.eq(v.correct, 2); T.near(v.acc, 2 / 3, 1e-12)
  local s1, s3 = lt.eval.solved(r1, "toy"), lt.eval.solved(r3, "toy")
  T.same_table(s1, { q1 = true })
  local new = lt.eval.newly_solved(s1, s3)
  T.same_table(new, { q2 = true })
  T.near(lt.stats.jaccard(s1, s3), 1 / 2, 1e-12)
end)

T.case("answer helpers and errors", function()
  T.eq(lt.eval.equivalent("\\frac{1}{2}", "0.5"), true)
  T.eq(lt.eval.extract_math("so #### 1,234"), "1,234")
  local v, n, total = lt.eval.vote({ "B", "A", "B", "" })
  T.eq(v, "B"); T.eq(n, 2); T.eq(total, 3)
  T.near(lt.eval.pass_at_k(5, 2, 2), 1 - (3 * 2) / (5 * 4), 1e-12)
  T.near(lt.stats.jaccard({ "a", "b" }, { "b", "c" }), 1 / 3, 1e-12)
  T.raises(function() lt.eval.run(m, "nope:" .. data) end, "unknown benchmark kind")
  T.raises(function() lt.eval.run(m, "ceval:/nonexistent") end, "/nonexistent")
end)

T.case("C-Eval Average = macro mean of the categories, beside the micro acc", function()
  local s = lt.eval.run(m, "ceval:" .. data .. "/ceval", { protocols = { "logit" } })
  local cat_of = {}
  for _, it in ipairs(lt.eval.load("ceval", data .. "/ceval")) do cat_of[it.id] = it.category end
  local per = {}
  for _, r in ipairs(s.items) do
    local c = assert(cat_of[r.id])
    per[c] = per[c] or { n = 0, ok = 0 }
    per[c].n, per[c].ok = per[c].n + 1, per[c].ok + (r.correct and 1 or 0)
  end
  local sum, k = 0, 0
  for _, c in pairs(per) do sum, k = sum + c.ok / c.n, k + 1 end
  T.near(s.logit.acc_macro, sum / k, 1e-12)
  lt.run.flush()
  local logged = lt.run.query("SELECT value FROM metrics WHERE run_id = ? AND name = 'ceval/logit/acc_macro' ORDER BY rowid DESC LIMIT 1", lt.run.id())[1]
  T.near(logged.value, sum / k, 1e-12)
end)

T.case("generate protocol, inclusion rule: the correct option anywhere in the same output", function()
  local s = lt.eval.run(m, "mmlu:" .. data .. "/mmlu", { protocols = { "generate" }, max_new_tokens = 16 })
  local by_id = {}
  for _, it in ipairs(lt.eval.load("mmlu", data .. "/mmlu")) do by_id[it.id] = it end
  local out, n, ok = {}, 0, 0
  for _, r in ipairs(s.items) do
    if r.protocol == "generate" then out[r.id] = r.output end
  end
  for _, r in ipairs(s.items) do
    if r.protocol == "generate_contains" then
      local it = by_id[r.id]
      local k = it.answer:byte() - 64
      T.eq(r.output, out[r.id], "the same output as the first-letter rule")
      local want = lt.eval.contains_option(r.output, it.answer, it.choices[k])
      T.eq(r.correct, want, r.id)
      n, ok = n + 1, ok + (want and 1 or 0)
    end
  end
  T.ok(n > 0, "generate_contains items")
  T.near(s.generate_contains.acc, ok / n, 1e-12)
  T.eq(lt.eval.contains_option("I pick B, Cold", "A", "cold"), true)
  T.eq(lt.eval.contains_option("I pick B", "A", "cold"), false)
end)

T.case("antonym split: a hash of the pair, 1 in 5 held out; the built-in benchmark asks held-out pairs", function()
  local tasks = require "lt.tasks"
  -- (31 h + byte) mod 2^31-1 over "cold hot" / "dry wet", computed by hand in Python
  T.eq(tasks.pair_hash("hot", "cold"), 1506066996)
  T.eq(tasks.pair_hash("wet", "dry"), 1932595099)
  local train, test = tasks.split_pairs({ { "hot", "cold" }, { "wet", "dry" } })
  T.same_table(train, { { "hot", "cold" } })  -- 996 >= 200
  T.same_table(test, { { "wet", "dry" } })    -- 99 < 200
  local all = tasks.wordnet_antonyms("all")
  local held = {}
  local n_test = #tasks.wordnet_antonyms("test")
  for _, p in ipairs(tasks.wordnet_antonyms("test")) do
    held[p[1]] = held[p[1]] or {}; held[p[1]][p[2]] = true
    held[p[2]] = held[p[2]] or {}; held[p[2]][p[1]] = true
  end
  T.ok(n_test > 0.15 * #all and n_test < 0.25 * #all, ("about 1 in 5 pairs: %d of %d"):format(n_test, #all))
  local items = tasks.choice_items(tasks.wordnet_antonyms("test"), { n = 20 })
  T.eq(#items, 20)
  for _, it in ipairs(items) do
    local q = it.question:match('"(%l+)"')
    T.ok(held[q] and held[q][it.choices[it.answer:byte() - 64]], "a held-out pair: " .. it.id)
  end
end)

T.case("common antonym words: tagsense_cnt of index.adj, both words tagged at least once", function()
  local tasks = require "lt.tasks"
  -- index.adj lines: lemma pos synset_cnt p_cnt [ptr]*p_cnt sense_cnt tagsense_cnt offsets...
  local path = tmp .. "/index.adj"
  local f = assert(io.open(path, "w"))
  f:write("  1 This software and database is being provided\n",
          "abaxial a 1 2 ! & 1 0 00002956\n",          -- p_cnt 2, tagsense 0
          "hot a 21 4 ! & ^ = 21 14 01247240 01248400\n", -- p_cnt 4, tagsense 14
          "new_york a 1 0 1 1 00000001\n")               -- p_cnt 0, tagsense 1; "_" -> " "
  f:close()
  local c = tasks.wordnet_tag_counts(path)
  T.eq(c.abaxial, 0)
  T.eq(c.hot, 14)
  T.eq(c["new york"], 1)
  f = assert(io.open(path, "w"))
  f:write("hot a 21 4 ! &\n")
  f:close()
  T.raises(function() tasks.wordnet_tag_counts(path) end, "index.adj:1: not a WordNet index line")
  -- "common": the pairs of "all" whose two words are tagged; "everyday" (the default): of
  -- those, the ones whose two words have at most 7 letters
  local all = tasks.wordnet_antonyms("all", { words = "all" })
  local common = tasks.wordnet_antonyms("all", { words = "common" })
  local everyday = tasks.wordnet_antonyms("all")
  local counts = tasks.wordnet_tag_counts()
  local n_common, n_everyday = 0, 0
  for _, p in ipairs(all) do
    if (counts[p[1]] or 0) >= 1 and (counts[p[2]] or 0) >= 1 then
      n_common = n_common + 1
      if #p[1] <= 7 and #p[2] <= 7 then n_everyday = n_everyday + 1 end
    end
  end
  T.eq(#common, n_common)
  T.eq(#everyday, n_everyday)
  T.ok(#everyday > 100 and #everyday < #common and #common < #all,
       ("pairs: %d everyday, %d common, %d all"):format(#everyday, #common, #all))
  T.raises(function() tasks.wordnet_antonyms("all", { words = "rare" }) end, "words 'rare'")
end)


T.case("cloze protocol = the option whose continuation has the highest summed log-prob, from plain forward passes", function()
  -- one item with its own cloze form (as the built-in antonyms items), two without (the
  -- default form: "{question}\nAnswer:" continued by " " .. option); batch 4 mixes rows of
  -- different lengths, so left padding is exercised against the unpadded reference here
  local items = {
    { id = "own", question = "unused", choices = { "dry", "hot", "early" }, answer = "A",
      cloze = "Opposite of wet:", cloze_choices = { ' "Dry"', ' "Hot"', ' "Early"' } },
    { id = "plain", question = "Which number follows 3?", choices = { "4", "seven hundred", "2" }, answer = "A" },
    { id = "long", question = "The early bird gets the", choices = { "worm", "cheese", "second mouse", "bus" }, answer = "A" },
  }
  local s = lt.eval.score(m, items, {}, { protocols = { "cloze" }, batch_size = 4, bench = "toy_cloze" })
  local function ref_logp(context, cont)
    local ctx, c = tok:encode(context), tok:encode(cont, { special = false })
    local ids = {}
    for _, x in ipairs(ctx) do ids[#ids + 1] = x end
    for _, x in ipairs(c) do ids[#ids + 1] = x end
    local lp = m:forward({ ids }).logits[0]:log_softmax()
    local sum = 0
    for j = 1, #c do sum = sum + lp[#ctx + j - 2][c[j]] end  -- 0-based row #ctx+j-2 predicts token #ctx+j
    return sum
  end
  T.eq(#s.items, 3)
  for k, r in ipairs(s.items) do
    local it = items[k]
    T.eq(r.id, it.id)
    local best, best_lp = nil, -math.huge
    for c, choice in ipairs(it.choices) do
      local context = it.cloze or (it.question .. "\nAnswer:")
      local want = ref_logp(context, it.cloze_choices and it.cloze_choices[c] or (" " .. choice))
      -- fp32, batched (left-padded, other rows beside) against unpadded: each log-prob is
      -- logit - logsumexp with both about |logit| + log V <= 20 here, rounded to a few ulps
      -- (1.2e-7 each) when the blocked sums differ, so <= ~2.5e-6 per token and 1e-5 for
      -- the <= 4 continuation tokens, relative to the sum's size (observed: 1e-6)
      T.near(r.choice_logp[c], want, 1e-5 * (1 + math.abs(want)), ("%s option %d"):format(it.id, c))
      if want > best_lp then best, best_lp = string.char(64 + c), want end
    end
    T.eq(r.prediction, best, it.id)
    T.eq(r.correct, best == it.answer, it.id)
  end
  T.raises(function()
    lt.eval.score(m, { { id = "bad", question = "q", choices = { "a", "b" }, answer = "A", cloze_choices = { " a" } } },
                  {}, { protocols = { "cloze" } })
  end, "item bad has 1 cloze_choices for 2 choices")
  T.raises(function() lt.eval.score(m, items, {}, { protocols = { "clozed" } }) end, "unknown protocol 'clozed' %(logit, generate, cloze%)")
end)

T.case("cloze shots: each shot's context continued by its correct option, then the item's context", function()
  -- the mc sample's dev item (q: 7, answer E = "11") is the only shot of subject "numbers"
  local pool = lt.eval.load("mcq", data .. "/mcq/sample.jsonl")
  local shot
  for _, it in ipairs(pool) do if it.split == "dev" then shot = it end end
  local item = { id = "x", subject = "numbers", question = "Which is even?", choices = { "3", "8" }, answer = "B" }
  local s = lt.eval.score(m, { item }, pool, { protocols = { "cloze" }, shots = 1, bench = "toy_cloze" })
  local ctx = tok:encode(shot.question .. "\nAnswer: 11\n\nWhich is even?\nAnswer:")
  local c = tok:encode(" 8", { special = false })
  local ids = {}
  for _, x in ipairs(ctx) do ids[#ids + 1] = x end
  for _, x in ipairs(c) do ids[#ids + 1] = x end
  local lp = m:forward({ ids }).logits[0]:log_softmax()
  local want = 0
  for j = 1, #c do want = want + lp[#ctx + j - 2][c[j]] end
  T.near(s.items[1].choice_logp[2], want, 1e-5 * (1 + math.abs(want)))  -- as above
end)

T.case("lt.eval.run reads and scores IFEval and MGSM through their task modules", function()
  local root = data:match("^(.*)/eval$")
  local ifeval, mgsm = require "lt.tasks.ifeval", require "lt.tasks.mgsm"
  local r = lt.eval.run(m, "ifeval:" .. root .. "/ifeval/sample.jsonl",
                        { limit = 3, max_new_tokens = 6, unsupported = "drop", bench = "ifeval_run" })
  T.eq(r.ifeval.n, 3)
  local items = ifeval.read(root .. "/ifeval/sample.jsonl", { unsupported = "drop" })
  for i = #items, 4, -1 do items[i] = nil end
  local direct = ifeval.evaluate(m, items, { max_new_tokens = 6, bench = "ifeval_direct" })
  T.eq(r.ifeval.acc, direct.strict.prompt_acc, "IFEval: strict prompt-level accuracy")
  T.eq(#r.items, 3)
  local g = lt.eval.run(m, "mgsm:" .. root .. "/mgsm", { limit = 2, max_new_tokens = 6, bench = "mgsm_run" })
  local per = {}
  for _, it in ipairs(g.items) do per[it.id:match("^mgsm/(%a+)/")] = true end
  T.ok(per.en and per.de, "MGSM: items of every language")
  local kept, count = {}, {}
  for _, it in ipairs(mgsm.read(root .. "/mgsm")) do
    count[it.language] = (count[it.language] or 0) + 1
    if count[it.language] <= 2 then kept[#kept + 1] = it end
  end
  T.eq(g.mgsm.n, #kept)
  T.eq(g.mgsm.acc, mgsm.score(m, kept, { max_new_tokens = 6, bench = "mgsm_direct" }).acc_macro,
       "MGSM: the mean over languages")
  T.raises(function() lt.eval.run(m, "mgsm:" .. root .. "/mgsm", { unsupported = "drop" }) end,
           "lt.eval.run mgsm: unknown option 'unsupported'")
end)

T.finish()
