-- lt/models/tiny_lm.lua: the recipe of the default base model of the studies (and of its Nemotron-H
-- donor): a tiny Qwen3 (8 decoder blocks) with its own byte-level BPE tokenizer, pre-trained on CPU
-- in a few minutes on Debian data. lt.models.get("tiny-qwen3") makes it with the fixed seed 1 (the
-- same model wherever it is made); experiments/pretrain_tiny/pretrain_tiny.lua runs it with other
-- sizes, architectures or the run's seed streams. --arch=nemotron_h --pattern=M*M- [--chunk=16]
-- makes another architecture on the same corpus (--chunk: the Mamba2 scan's chunk_size, HF's 128 by
-- default, which pads 64-token windows to 128 and is several times slower on CPU); --tokenizer=FILE
-- copies that tokenizer.json instead of training one.
--
-- The corpus (deterministic: fixed composition seeds, files read in sorted order):
--   * English: Debian's fortunes (fortunes-min/fortunes) and WordNet glosses (wordnet-base);
--     one document in `heldout_every` is held out and saved as OUT/heldout.txt (the base's
--     own domain, on which freeze_deep.lua measures what continued pre-training costs);
--   * antonym statements for every pair of WordNet's everyday adjectives (--words=everyday:
--     lt.tasks.wordnet_antonyms, 187 pairs; common or all for more), four templates in both
--     directions ("wet is the opposite of dry.", "The opposite of wet is dry.",
--     '"Wet" and "Dry" are antonyms.', 'Opposite of wet: "Dry".');
--   * task-format prompts with their answer ("Example:hot->Cold, big->Small; Query:wet->Dry",
--     lt.tasks.format) and 4-way benchmark items with their answer letter (the prompt of
--     lt.eval's built-in "antonyms"), both from the *train* pairs of lt.tasks.split_pairs only,
--     minus any prompt or item the studies ask later.
-- The test pairs (a hash of the pair, 1 in 5; lt.tasks.split_pairs) never appear in the task
-- or benchmark format. At the end it prints the task rate on fresh prompts of the train pairs
-- (what the studies trace by default) and of the test pairs (whether the model carries what it
-- only read as statements into the task format: at the defaults it does not), and both
-- built-in benchmarks.
local study = require "lt.study"
local tasks = require "lt.tasks"
local M = {}

M.args = study.merge_args(
  study.train_args{ steps = 1200, lr = 5e-3, warmup = 0.05, seq_len = 64, micro_batch = 16, eval_every = 0 },
  study.checkpoint_args,
  study.model_args{ layers = 8, vocab = 2048 },
  { out = { "models/tiny-qwen3", "the model folder to write" },
    english_bytes = { 150000, "bytes of English documents in the corpus", int = true, min = 0 },
    heldout_every = { 50, "one English document in N held out (OUT/heldout.txt)", int = true, min = 2 },
    statement_rounds = { 8, "repeats of each antonym statement", int = true, min = 0 },
    task_rounds = { 8, "rounds of task-format prompts of the train pairs", int = true, min = 0 },
    choice_rounds = { 6, "rounds of 4-way items of the train pairs", int = true, min = 0 },
    probe = { 200, "prompts of the task probe at the end", int = true, min = 1 },
    words = { "everyday", "WordNet adjective set", choices = { "everyday", "common", "all" } },
    arch = { "qwen3", "architecture (qwen3, nemotron_h, ...: lt.model.new)" },
    pattern = { "", "nemotron_h layer pattern (M Mamba2, * attention, - MLP)" },
    chunk = { 0, "Mamba2 scan chunk size (0: HF's default)", int = true, min = 0 },
    tokenizer = { "", "copy this tokenizer.json instead of training one" } })

-- make(cfg): cfg as M.args; cfg.seed (a number) fixes model init, packing and data order,
-- else they come from the run's seed streams. Returns the training result with task_acc,
-- heldout_task_acc and the benchmark accuracies.
function M.make(cfg)
  local checkpoints = study.checkpoints(cfg)()
  local work = cfg.out .. ".work"
  lt.fs.remove(work)  -- lt.fs: no shell; refuses a folder that ltrun did not make
  lt.fs.mkdir(work)

  local function sorted_list(dir)  -- lt.fs: no shell
    local names = lt.fs.is_dir(dir) and lt.fs.list(dir) or {}
    table.sort(names)
    return names
  end

  local function shuffle(list, seed)
    local pick = tasks.generator(seed)
    for i = #list, 2, -1 do
      local j = pick(i)
      list[i], list[j] = list[j], list[i]
    end
    return list
  end

  -- ---- English documents (the fortune format: "%" lines between documents) -------------------
  local english = {}
  local fortunes = tasks.share_dir .. "/games/fortunes"
  local not_english = { chinese = true, song100 = true, tang300 = true }
  for _, name in ipairs(sorted_list(fortunes)) do
    if not name:find("%.") and not not_english[name] then
      local f = io.open(fortunes .. "/" .. name)
      if f then
        local text = f:read("*a"):gsub("\27%[[%d;]*m", "")  -- ANSI colour codes
        f:close()
        for doc in (text .. "\n%\n"):gmatch("(.-)\n%%\n") do
          if doc:find("%S") then english[#english + 1] = doc end
        end
      end
    end
  end
  local n_fortunes = #english
  for _, part in ipairs{ "noun", "verb", "adj", "adv" } do
    local f = io.open("/usr/share/wordnet/data." .. part)
    if f then
      for line in f:lines() do
        local gloss = line:sub(1, 2) ~= "  " and line:match("| (.+)$")
        if gloss then english[#english + 1] = (gloss:gsub("%s+$", "")) end
      end
      f:close()
    end
  end
  assert(n_fortunes > 100 and #english > n_fortunes,
         "no English text found: install the fortunes-min (or fortunes) and wordnet-base packages")
  shuffle(english, 12345)
  local heldout, train_docs, bytes = {}, {}, 0
  for i, d in ipairs(english) do
    d = d:gsub("\n%%\n", "\n")
    if i % cfg.heldout_every == 0 then heldout[#heldout + 1] = d
    elseif bytes < cfg.english_bytes then train_docs[#train_docs + 1] = d; bytes = bytes + #d end
  end
  local n_english = #train_docs

  -- ---- antonym statements (all pairs) and task / benchmark formats (train pairs) --------------
  local all_pairs = tasks.wordnet_antonyms("all", { words = cfg.words })
  local train_pairs, test_pairs = tasks.split_pairs(all_pairs)
  local function cap(w) return (w:gsub("^%l", string.upper)) end
  -- Two templates give the antonym in the surface form of the task format's answer: capitalised
  -- and not preceded by a space ('"Dry"' and '->Dry' both start with the token of "D"), so that
  -- what the model reads about a test pair is about the token the task asks it to predict.
  local templates = {
    function(a, b) return a .. " is the opposite of " .. b .. "." end,
    function(a, b) return "The opposite of " .. a .. " is " .. b .. "." end,
    function(a, b) return '"' .. cap(a) .. '" and "' .. cap(b) .. '" are antonyms.' end,
    function(a, b) return "Opposite of " .. a .. ': "' .. cap(b) .. '".' end,
  }
  local statements = {}
  for _, p in ipairs(all_pairs) do
    for _, t in ipairs(templates) do
      for _ = 1, cfg.statement_rounds do
        statements[#statements + 1] = t(p[1], p[2])
        statements[#statements + 1] = t(p[2], p[1])
      end
    end
  end
  shuffle(statements, 777)
  for i = 1, #statements, 6 do  -- documents of six statements about different pairs
    train_docs[#train_docs + 1] = table.concat(statements, " ", i, math.min(i + 5, #statements))
  end
  -- What the studies ask later is never in the training data verbatim: the prompts of the
  -- probes below and of layer_tracer.lua's default (seeds 1 and 3), and the items of the
  -- built-in benchmark "antonyms" (lt.eval: fresh items on the train pairs, seed 1). A training
  -- prompt or item that happens to equal one of them is dropped (counted in *_dropped).
  local asked = {}
  for _, seed in ipairs{ 1, 3 } do
    for _, split in ipairs{ "train", "test" } do
      for _, it in ipairs(tasks.load("wordnet", { split = split, words = cfg.words, n = 500, seed = seed })) do
        asked[it.context .. it.query] = true
      end
    end
  end
  for _, it in ipairs(lt.eval.items("antonyms")) do asked[lt.eval.prompt(it)] = true end
  local n_task, task_dropped = 0, 0
  for r = 1, cfg.task_rounds do
    local items = tasks.antonym_items(train_pairs, { n = #train_pairs, examples = 1 + r % 3, seed = 100 + r })
    for _, it in ipairs(items) do
      if asked[it.context .. it.query] then task_dropped = task_dropped + 1
      else
        train_docs[#train_docs + 1] = it.context .. it.query .. it.target
        n_task = n_task + 1
      end
    end
  end
  local n_choice, choice_dropped = 0, 0
  for r = 1, cfg.choice_rounds do
    for _, it in ipairs(tasks.choice_items(train_pairs, { n = #train_pairs, seed = 200 + r })) do
      local prompt = lt.eval.prompt(it)
      if asked[prompt] then choice_dropped = choice_dropped + 1
      else
        train_docs[#train_docs + 1] = prompt .. " " .. it.answer
        n_choice = n_choice + 1
      end
    end
  end
  shuffle(train_docs, 4242)
  lt.run.param{ english_docs = n_english, fortune_docs = n_fortunes, heldout_docs = #heldout,
                antonym_pairs = #all_pairs, train_pairs = #train_pairs, test_pairs = #test_pairs,
                statement_docs = math.ceil(#statements / 6), task_docs = n_task, choice_docs = n_choice,
                task_dropped = task_dropped, choice_dropped = choice_dropped }

  local function write_docs(path, docs, limit)
    local f = assert(io.open(path, "w"))
    local n = 0
    for _, d in ipairs(docs) do
      if limit and n >= limit then break end
      f:write(d, "\n%\n")
      n = n + #d
    end
    f:close()
  end
  write_docs(work .. "/train.txt", train_docs)
  write_docs(work .. "/tokenizer_sample.txt", train_docs, 1500000)

  -- ---- the random model, a tokenizer trained on the sample, pre-training -----------------------
  local m, r, packed = require("lt.models").pretrain(cfg, work .. "/train.txt", checkpoints, {
    arch = cfg.arch, pattern = cfg.pattern, chunk = cfg.chunk > 0 and cfg.chunk or nil,
    tokenizer = cfg.tokenizer ~= "" and cfg.tokenizer or nil, tokenizer_corpus = work .. "/tokenizer_sample.txt" })
  lt.run.param{ train_tokens = packed.train_tokens, val_tokens = packed.val_tokens }
  write_docs(cfg.out .. "/heldout.txt", heldout)
  lt.run.artifact(cfg.out .. "/model.safetensors", { kind = "model" })
  lt.fs.remove(work)

  -- ---- what the base can do: the task on fresh prompts, the benchmarks ---------------------------
  -- known pairs (the train side of the split) in prompts never seen in training, and held-out
  -- pairs (the test side: read only as plain statements, never in the task format)
  local known = tasks.task_accuracy(m, tasks.load("wordnet", { split = "train", words = cfg.words, n = cfg.probe, seed = 3 }))
  local probe = tasks.task_accuracy(m, tasks.load("wordnet", { split = "test", words = cfg.words, n = cfg.probe, seed = 3 }))
  lt.run.log("task_acc", known.acc)
  lt.run.log("heldout_task_acc", probe.acc)
  local bench = lt.eval.run(m, "antonyms", { protocols = { "logit", "cloze" } })
  local bench_heldout = lt.eval.run(m, "antonyms_heldout", { protocols = { "logit", "cloze" } })
  print(("pretrain_tiny: %s: %d blocks, %d params, %d steps, %.0f tokens/s, %.1fs, loss %.3f"):format(
    cfg.out, m.n_layers, m:n_params(), r.steps, r.tokens_per_s, r.wall_s, r.final_loss or -1))
  print(("pretrain_tiny: the antonym task on prompts never seen in training (paper's format), top prediction = "
         .. "the antonym's first token:\n  known pairs (%d train pairs): %d of %d (%.1f%%); e.g. %s"
         .. "\n  held-out pairs (%d test pairs, read only as statements): %d of %d (%.1f%%); e.g. %s"):format(
    #train_pairs, known.correct, known.n, 100 * known.acc, known.example,
    #test_pairs, probe.correct, probe.n, 100 * probe.acc, probe.example))
  print(("pretrain_tiny: built-in benchmarks (4-way, chance 0.25), antonyms (known pairs, fresh items) / "
         .. "antonyms_heldout:\n  cloze (each option scored as the continuation of 'Opposite of wet:', the statement "
         .. "form): %.3f / %.3f\n  logit (the option letter after the question and its options): %.3f / %.3f"):format(
    bench.cloze.acc, bench_heldout.cloze.acc, bench.logit.acc, bench_heldout.logit.acc))
  r.task_acc, r.heldout_task_acc = known.acc, probe.acc
  r.bench_acc, r.bench_heldout_acc = bench.logit.acc, bench_heldout.logit.acc
  r.bench_cloze_acc, r.bench_heldout_cloze_acc = bench.cloze.acc, bench_heldout.cloze.acc
  return r
end

return M
