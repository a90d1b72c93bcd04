-- lt/tasks/init.lua (lt.tasks): task data with spans for layer diagnostics. A prompt is t = s1 ..
-- s2, s1 the context (examples), s2 the query; after tokenization every sample knows which tokens
-- are context (I_c) and which are query (I_q), as 0-based token positions (tensor indices).
-- Sources: antonym pairs from WordNet's data files or an AntSynNET TSV, formatted as
-- "Example:hot->Cold, big->Small; Query:cold->"; or a JSONL file of {context, query[, target]}.
local M = {}

-- Debian's data packages (wordnet-base, fortunes); LTRUN_SHARE_DIR stands for /usr/share where
-- they are unpacked elsewhere (a GPU node: scripts/gpu-check; C++: ltrun::fs::share_path)
local share = os.getenv("LTRUN_SHARE_DIR")
M.share_dir = share and share ~= "" and share or "/usr/share"
M.wordnet_dir = M.share_dir .. "/wordnet"

local function fail(fmt, ...) error(fmt:format(...), 0) end

local function read_lines(path)
  local f, err = io.open(path, "rb")
  if not f then fail("%s", err) end
  local text = f:read("*a")
  f:close()
  local lines = {}
  for line in (text .. "\n"):gmatch("(.-)\r?\n") do lines[#lines + 1] = line end
  if lines[#lines] == "" then lines[#lines] = nil end
  return lines
end

-- A seeded generator (Park-Miller): the same seed gives the same task data, whatever else
-- draws from math.random. Returns pick(n) → an integer in 1..n. (Also lt.eval's built-ins.)
function M.generator(seed)
  local x = (math.floor(seed) % 2147483646) + 1
  return function(n)
    x = (x * 48271) % 2147483647  -- exact in doubles: x * 48271 < 2^47
    return 1 + x % n
  end
end

-- ---- sources ----------------------------------------------------------------------------

-- Antonym pairs {a, b} from one WordNet data file (data.adj, data.noun, data.verb, data.adv),
-- in the format of wndb(5): a synset per line,
--   offset lex_filenum ss_type w_cnt word lex_id [word lex_id...] p_cnt [ptr...] [frames] | gloss
-- w_cnt and lex_id in hex, p_cnt in decimal, each ptr = symbol offset pos source/target, the
-- last in hex: the source and target word numbers (0000 for pointers between synsets).
-- Antonymy is the lexical pointer "!". Licence lines start with spaces. Adjective markers
-- ("big(p)") are dropped, "_" becomes a space. opts.plain (default true) keeps only pairs of
-- single lower-case words. Each pair appears once, in file order.
function M.wordnet_pairs(path, opts)
  lt.check_options(opts, "tasks.wordnet_pairs", { "plain" })
  opts = opts or {}
  local plain = opts.plain ~= false
  local synsets, pointers = {}, {}
  local pos_of_file = path:match("data%.(%a+)$")
  local file_pos = ({ adj = "[as]", noun = "n", verb = "v", adv = "r" })[pos_of_file or ""] or "%a"
  for lineno, line in ipairs(read_lines(path)) do
    if not line:match("^%s") and line ~= "" then
      local where = ("%s:%d"):format(path, lineno)
      local head = line:match("^(.-)%s*|") or line
      local f = {}
      for w in head:gmatch("%S+") do f[#f + 1] = w end
      local offset, ss_type = f[1], f[3]
      if not (offset and offset:match("^%d+$") and ss_type and ss_type:match("^[nvasr]$")) then
        fail("%s: not a WordNet synset line (expected 'offset lex_filenum ss_type w_cnt ...')", where)
      end
      local w_cnt = tonumber(f[4] or "", 16)
      if not w_cnt or #f < 5 + 2 * w_cnt then fail("%s: bad word count '%s'", where, tostring(f[4])) end
      local words = {}
      for i = 1, w_cnt do
        words[i] = f[3 + 2 * i]:gsub("%(%a+%)$", ""):gsub("_", " ")
      end
      local k = 5 + 2 * w_cnt
      local p_cnt = tonumber(f[k] or "")
      if not p_cnt or not (f[k] or ""):match("^%d%d%d$") or #f < k + 4 * p_cnt then
        fail("%s: bad pointer count '%s'", where, tostring(f[k]))
      end
      synsets[offset] = words
      for i = 0, p_cnt - 1 do
        local sym, target, pos, st = f[k + 1 + 4 * i], f[k + 2 + 4 * i], f[k + 3 + 4 * i], f[k + 4 + 4 * i]
        if not (target:match("^%d+$") and st:match("^%x%x%x%x$")) then
          fail("%s: pointer %d is malformed ('%s %s %s %s')", where, i + 1, sym, target, pos, st)
        end
        if sym == "!" and pos:match("^" .. file_pos .. "$") then
          local src, dst = tonumber(st:sub(1, 2), 16), tonumber(st:sub(3, 4), 16)
          if src == 0 or src > w_cnt then fail("%s: antonym pointer %d names word %d of %d", where, i + 1, src, w_cnt) end
          pointers[#pointers + 1] = { words[src], target, dst, where }
        end
      end
    end
  end
  local pairs_, seen = {}, {}
  for _, p in ipairs(pointers) do
    local a, target, dst, where = p[1], p[2], p[3], p[4]
    local other = synsets[target]
    if not other then fail("%s: antonym pointer to synset %s, which %s does not hold", where, target, path) end
    local b = other[dst]
    if not b then fail("%s: antonym pointer to word %d of synset %s (it has %d)", where, dst, target, #other) end
    local key = a < b and a .. "\0" .. b or b .. "\0" .. a
    if a ~= b and not seen[key] and (not plain or (a:match("^%l+$") and b:match("^%l+$"))) then
      seen[key] = true
      pairs_[#pairs_ + 1] = { a, b }
    end
  end
  return pairs_
end

-- Antonym pairs from an AntSynNET-style TSV: word1 TAB word2 TAB label, label 1 (or True)
-- for antonyms, 0 (or False) otherwise; only antonyms are kept. Blank lines are skipped.
function M.tsv_pairs(path)
  local out = {}
  for lineno, line in ipairs(read_lines(path)) do
    if line:match("%S") then
      local a, b, label = line:match("^([^\t]+)\t([^\t]+)\t%s*([^\t]-)%s*$")
      label = label and label:lower()
      if not a or not (label == "1" or label == "0" or label == "true" or label == "false") then
        fail("%s:%d: expected word1<TAB>word2<TAB>label (label 1 or 0)", path, lineno)
      end
      if label == "1" or label == "true" then out[#out + 1] = { a, b } end
    end
  end
  return out
end

-- A deterministic split of antonym pairs into train and test pairs, the same on every machine and
-- independent of the order or number of the other pairs: a pair is a test pair when a hash of its
-- two words (sorted, joined by a space; h = (31 h + byte) mod 2^31 - 1) modulo 1000 is below 1000 *
-- opts.test (default 0.2). The default base model (experiments/pretrain_tiny/pretrain_tiny.lua)
-- sees train pairs in the task format and the benchmark format; test pairs only in plain antonym
-- statements. Returns train, test (pair lists, in the input order).
function M.pair_hash(a, b)
  if b < a then a, b = b, a end
  local s, h = a .. " " .. b, 0
  for i = 1, #s do
    h = (h * 31 + s:byte(i)) % 2147483647  -- exact in doubles: h * 31 < 2^36
  end
  return h
end

function M.split_pairs(pairs_, opts)
  lt.check_options(opts, "tasks.split_pairs", { "test" })
  local share = (opts and opts.test) or 0.2
  if share < 0 or share > 1 then fail("split_pairs: test share %s is not in [0, 1]", tostring(share)) end
  local train, test = {}, {}
  for _, p in ipairs(pairs_) do
    local t = M.pair_hash(p[1], p[2]) % 1000 < 1000 * share and test or train
    t[#t + 1] = p
  end
  return train, test
end

-- How often each adjective is tagged in WordNet's semantic concordance: the tagsense_cnt
-- field of M.wordnet_dir .. "/index.adj" (lemma pos synset_cnt p_cnt [ptr_symbol]*p_cnt
-- sense_cnt tagsense_cnt synset_offset...). A word with a count >= 1 occurs in ordinary
-- running text (hot, cold, early, clean); 0 for the dictionary's rarities (abaxial).
function M.wordnet_tag_counts(path)
  path = path or M.wordnet_dir .. "/index.adj"
  local counts = {}
  for lineno, line in ipairs(read_lines(path)) do
    if line ~= "" and not line:match("^%s") then
      local f = {}
      for w in line:gmatch("%S+") do f[#f + 1] = w end
      local p_cnt = tonumber(f[4] or "")
      local tagged = p_cnt and tonumber(f[6 + p_cnt] or "")
      if not tagged then fail("%s:%d: not a WordNet index line (lemma pos synset_cnt p_cnt ...)", path, lineno) end
      counts[f[1]:gsub("_", " ")] = tagged
    end
  end
  return counts
end

-- Antonym pairs of WordNet's adjectives (M.wordnet_dir .. "/data.adj"): split = "test"
-- (default: the held-out pairs of M.split_pairs), "train" or "all". opts.words says which:
--   "everyday" (default): both words tagged at least once in the semantic concordance
--               (M.wordnet_tag_counts) and at most 7 letters long: 187 pairs (hot/cold,
--               wet/dry, early/late), the vocabulary of the default tiny base model;
--   "common":   both words tagged: 496 pairs (unacceptable/acceptable too);
--   "all":      every pair of single lower-case words: 1773 (abaxial/adaxial too).
M.antonym_words = { everyday = { tagged = 1, letters = 7 }, common = { tagged = 1 }, all = {} }

function M.wordnet_antonyms(split, opts)
  lt.check_options(opts, "tasks.wordnet_antonyms", { "words" })
  local words = opts and opts.words or "everyday"
  local rule = M.antonym_words[words]
  if not rule then fail("tasks: words '%s': expected everyday, common or all", tostring(words)) end
  local all = M.wordnet_pairs(M.wordnet_dir .. "/data.adj")
  if rule.tagged or rule.letters then
    local counts, kept = rule.tagged and M.wordnet_tag_counts() or {}, {}
    local function ok(w)
      return (not rule.tagged or (counts[w] or 0) >= rule.tagged) and (not rule.letters or #w <= rule.letters)
    end
    for _, p in ipairs(all) do
      if ok(p[1]) and ok(p[2]) then kept[#kept + 1] = p end
    end
    all = kept
  end
  split = split or "test"
  if split == "all" then return all end
  local train, test = M.split_pairs(all)
  if split == "train" then return train elseif split == "test" then return test end
  fail("tasks: split '%s': expected test, train or all", tostring(split))
end

-- Multiple-choice antonym items (the built-in benchmark "antonyms" of lt.eval):
-- 'Which word means the opposite of "hot"?' with the antonym and three words of other pairs,
-- the answer at a random option. opts: n (default 200, at most #pairs), seed = 1.
function M.choice_items(pairs_, opts)
  lt.check_options(opts, "tasks.choice_items", { "n", "seed" })
  opts = opts or {}
  if #pairs_ < 4 then fail("choice_items: %d pairs are too few for 4 options", #pairs_) end
  local pick = M.generator(opts.seed or 1)
  local n = math.min(opts.n or 200, #pairs_)
  local items, used = {}, {}
  while #items < n do
    local i = pick(#pairs_)
    if not used[i] then
      used[i] = true
      local q, a = pairs_[i][1], pairs_[i][2]
      if pick(2) == 2 then q, a = a, q end
      local choices, seen = { a }, { [a] = true, [q] = true }
      while #choices < 4 do
        local other = pairs_[pick(#pairs_)][pick(2)]
        if not seen[other] then seen[other] = true; choices[#choices + 1] = other end
      end
      local slot = pick(4)  -- move the answer to a random option
      choices[1], choices[slot] = choices[slot], choices[1]
      -- the cloze protocol's form: 'Opposite of wet:' continued by ' "Dry"' (each option
      -- capitalised and quoted: the statement form pretrain_tiny.lua writes, whose antonym
      -- token is the one the task format asks for)
      local cloze_choices = {}
      for k, c in ipairs(choices) do cloze_choices[k] = ' "' .. c:gsub("^%l", string.upper) .. '"' end
      items[#items + 1] = {
        id = "antonyms/" .. #items, bench = "mcq", subject = "antonyms", category = "lexical",
        question = ('Which word means the opposite of "%s"?'):format(q),
        choices = choices, answer = string.char(64 + slot),
        cloze = ("Opposite of %s:"):format(q), cloze_choices = cloze_choices,
      }
    end
  end
  return items
end

-- Items {context, query[, target]} from a JSONL file, one JSON object per line.
function M.jsonl_items(path)
  local out = {}
  for lineno, line in ipairs(read_lines(path)) do
    if line:match("%S") then
      local ok, item = pcall(lt.json.decode, line)
      if not ok then fail("%s:%d: %s", path, lineno, tostring(item)) end
      if type(item) ~= "table" or type(item.context) ~= "string" or type(item.query) ~= "string" then
        fail("%s:%d: expected an object with string fields context and query", path, lineno)
      end
      if item.target ~= nil and type(item.target) ~= "string" then
        fail("%s:%d: target must be a string", path, lineno)
      end
      out[#out + 1] = { context = item.context, query = item.query, target = item.target }
    end
  end
  return out
end

-- ---- prompts ------------------------------------------------------------------------------

-- The paper's format: s1 = "Example:hot->Cold, big->Small;", s2 = " Query:cold->" (the
-- antonym of each example capitalised, as in the paper; the target is "Hot").
M.format = {
  example = function(w, a) return w .. "->" .. a end,
  context = function(examples) return "Example:" .. table.concat(examples, ", ") .. ";" end,
  query = function(w) return " Query:" .. w .. "->" end,
}

local function capital(w) return (w:gsub("^%l", string.upper)) end

-- n items from antonym pairs: each a query pair (distinct while n <= #pairs) and `examples`
-- other pairs, each pair in a random direction. opts: n = 500, examples = 2, seed = 1,
-- capitalize = true, format = M.format.
function M.antonym_items(pairs_, opts)
  lt.check_options(opts, "tasks.antonym_items", { "n", "examples", "format", "capitalize", "seed" })
  opts = opts or {}
  local n, k = opts.n or 500, opts.examples or 2
  local fmt, cap = opts.format or M.format, opts.capitalize ~= false and capital or function(w) return w end
  if #pairs_ < k + 1 then fail("antonym_items: %d pairs are too few for %d examples and a query", #pairs_, k) end
  local pick = M.generator(opts.seed or 1)
  local order = {}
  for i = 1, #pairs_ do order[i] = i end
  for i = #order, 2, -1 do
    local j = pick(i)
    order[i], order[j] = order[j], order[i]
  end
  local function directed(p)
    if pick(2) == 1 then return p[1], p[2] end
    return p[2], p[1]
  end
  local items = {}
  for i = 1, n do
    local qi = order[(i - 1) % #order + 1]
    local used, examples = { [qi] = true }, {}
    while #examples < k do
      local e = pick(#pairs_)
      if not used[e] then
        used[e] = true
        local w, a = directed(pairs_[e])
        examples[#examples + 1] = fmt.example(w, cap(a))
      end
    end
    local w, a = directed(pairs_[qi])
    items[i] = { context = fmt.context(examples), query = fmt.query(w), target = cap(a), pair = { w, a } }
  end
  return items
end

-- Items from a source: "wordnet" (adjective antonyms of M.wordnet_dir; opts.split = "test"
-- (default: the pairs the default base model never saw in the task format), "train" or
-- "all"), a .tsv of pairs or a .jsonl of items. opts as for antonym_items (n also caps a
-- JSONL file's items).
function M.load(source, opts)
  lt.check_options(opts, "tasks.load", { "split", "words", "n", "examples", "format", "capitalize", "seed" })
  opts = opts or {}
  -- which items: opts.seed, else the run's stream "tasks.items" (a prompt drawn here equals one
  -- of the ~1,200 task-format prompts the default base trained on with a chance of about
  -- 1,200 / (149 * 148 * 147 * 8) per prompt at 2 examples: the tracer's prompts are unseen)
  local items_opts = { n = opts.n, examples = opts.examples, format = opts.format, capitalize = opts.capitalize,
                       seed = opts.seed or lt.run.seed("tasks.items") }
  if source == "wordnet" then
    return M.antonym_items(M.wordnet_antonyms(opts.split, { words = opts.words }), items_opts)
  elseif source:match("%.tsv$") then
    return M.antonym_items(M.tsv_pairs(source), items_opts)
  elseif source:match("%.jsonl$") then
    local items = M.jsonl_items(source)
    for i = #items, (opts.n or #items) + 1, -1 do items[i] = nil end
    return items
  end
  fail("tasks: unknown source '%s' (expected wordnet, a .tsv of pairs or a .jsonl of items)", source)
end

-- ---- tokens -------------------------------------------------------------------------------

-- Token positions (0-based) of the context bytes [c1, c2] and the query bytes [q1, q2] given
-- the tokens' spans ({first, last} string positions, last < first for a token that covers no
-- text such as an added <|begin_of_text|>). A token with any query byte is a query token,
-- so one straddling the boundary counts as query (zeroing the context never hides query
-- text); a token with context bytes only is a context token; a token with no text is neither.
function M.token_sets(spans, c1, c2, q1, q2)
  local context, query = {}, {}
  for i, s in ipairs(spans) do
    local first, last = s[1], s[2]
    if last >= first then
      if first <= q2 and last >= q1 then query[#query + 1] = i - 1
      elseif first <= c2 and last >= c1 then context[#context + 1] = i - 1 end
    end
  end
  return context, query
end

-- One item as a sample: prompt = context .. query, ids, context / query positions (0-based).
function M.encode(tok, item)
  local prompt = item.context .. item.query
  local ids, spans = tok:encode_with_offsets(prompt)
  local c2 = #item.context
  local context, query = M.token_sets(spans, 1, c2, c2 + 1, #prompt)
  return { prompt = prompt, ids = ids, context = context, query = query, target_text = item.target }
end

-- Samples of items, split evenly into `groups` task groups (group = 1..G, consecutive items,
-- sizes differing by at most one). opts.target: "model" (default; t* = the model's argmax)
-- or "given" (t* = the first token of the item's target text, tokenized alone).
function M.build(tok, items, opts)
  lt.check_options(opts, "tasks.build", { "groups", "target" })
  opts = opts or {}
  local G, n = opts.groups or 1, #items
  if n == 0 then fail("tasks.build: no items") end
  if G < 1 or G > n then fail("tasks.build: %d groups for %d items", G, n) end
  local samples = {}
  for i, item in ipairs(items) do
    local s = M.encode(tok, item)
    s.group = math.floor((i - 1) * G / n) + 1
    if opts.target == "given" then
      if not item.target then fail("tasks.build: item %d has no target (target = \"given\")", i) end
      s.target = tok:encode(item.target, { special = false })[1]
    elseif opts.target ~= nil and opts.target ~= "model" then
      fail("tasks.build: target '%s': expected \"model\" or \"given\"", tostring(opts.target))
    end
    samples[i] = s
  end
  return samples
end

-- How often the model does the task: the share of items whose target's first token
-- (tokenized alone, as tasks.build's target = "given") is the model's top prediction right
-- after the prompt. Returns {acc, correct, n, example = 'prompt -> prediction (target)'}.
function M.task_accuracy(m, items)
  local samples = M.build(m.tokenizer, items, { target = "given" })
  local correct, example = 0, nil
  lt.no_grad(function()
    for _, s in ipairs(samples) do
      local top = m:forward(s.ids, { logits = "last" }).logits[0][-1]:argmax()
      if top == s.target then correct = correct + 1 end
      example = example or ("%q -> %q (target %q)"):format(s.prompt, m.tokenizer:decode({ top }), s.target_text)
    end
  end)
  return { acc = correct / #samples, correct = correct, n = #samples, example = example }
end

M.math = require "lt.tasks.math"  -- the math task of the RL studies

return M
