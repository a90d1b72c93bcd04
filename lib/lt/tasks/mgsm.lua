-- lt/tasks/mgsm.lua: MGSM (Shi et al. 2022, google-research/url-nlp): GSM8K's problems in
-- ten languages, read as lt.eval math items that keep their language, and accuracy per
-- language. The item's language is its category, so lt.eval.score's by_category and the run's
-- BENCH/generate/acc/LANG metrics are per language, and acc_macro is their mean.
--   local mgsm = require "lt.tasks.mgsm"
--   local items = mgsm.read("data/mgsm")        -- a folder of mgsm_XX.tsv, or one file
--   local res = mgsm.score(m, items)             -- res.by_language.de = {n, correct, acc}
local M = {}

local function fail(fmt, ...) error(fmt:format(...), 0) end

-- without a trailing-anchored pattern ("%s+$" is quadratic on long runs of spaces)
local function strip(s)
  local a = s:find("%S")
  if not a then return "" end
  local b = #s
  while s:byte(b) == 32 or (s:byte(b) >= 9 and s:byte(b) <= 13) do b = b - 1 end
  return s:sub(a, b)
end

-- an answer_number as the item's answer text: a (signed) decimal number, integers without ".0"
local function answer_text(v, where)
  if type(v) == "number" then
    if v ~= v or v == math.huge or v == -math.huge then fail("%s: answer_number %s is not a number", where, tostring(v)) end
    if v == math.floor(v) and math.abs(v) < 2^53 then return ("%d"):format(v) end
    return ("%.17g"):format(v)
  end
  if type(v) ~= "string" or not strip(v):match("^%-?%d+%.?%d*$") then
    fail("%s: answer_number must be a number, got '%s'", where, tostring(v))
  end
  return strip(v)
end

local function check_language(lang, where)
  if type(lang) ~= "string" or not lang:match("^[%a][%w_%-]*$") then
    fail("%s: language must be a code such as \"de\", got %s", where, tostring(lang))
  end
  return lang
end

-- the language a file's name gives (mgsm_de.tsv → "de"), or nil
local function language_of_file(path)
  return path:match("mgsm_([%a][%w%-]*)%.%w+$")
end

local function read_lines(path)
  local f, err = io.open(path, "rb")
  if not f then fail("mgsm.read: %s", err) end
  local text = f:read("*a")
  f:close()
  local lines = {}
  for line in (text .. "\n"):gmatch("(.-)\r?\n") do lines[#lines + 1] = line end
  return lines
end

-- the items of one file, appended to `items` (counters: the next number per language)
local function read_file(path, lang_opt, items, counters, ids)
  local file_lang = lang_opt or language_of_file(path)
  local jsonl = path:match("%.jsonl$") ~= nil
  if not jsonl and not path:match("%.tsv$") then fail("mgsm.read: %s: expected a .tsv or .jsonl file", path) end
  for lineno, line in ipairs(read_lines(path)) do
    if line:find("%S") then
      local where = ("%s:%d"):format(path, lineno)
      local question, answer, lang
      if jsonl then
        local ok, rec = pcall(lt.json.decode, line)
        if not ok then fail("%s: not JSON: %s", where, tostring(rec)) end
        if type(rec) ~= "table" or rec[1] ~= nil then fail("%s: expected a JSON object", where) end
        question, answer = rec.question, rec.answer_number
        if answer == nil or answer == lt.json.null then fail("%s: field 'answer_number' is missing", where) end
        lang = rec.language
        if lang == nil or lang == lt.json.null then lang = file_lang end
        if lang == nil then
          fail("%s: field 'language' is missing (and neither the file name mgsm_XX.jsonl nor option language gives it)", where)
        end
      else
        local fields = {}
        for f in (line .. "\t"):gmatch("(.-)\t") do fields[#fields + 1] = f end
        if #fields ~= 2 then fail("%s: expected 2 tab-separated fields (question, answer_number), got %d", where, #fields) end
        question, answer, lang = fields[1], fields[2], file_lang
        if lang == nil then fail("%s: no language: name the file mgsm_XX.tsv or pass option language", where) end
      end
      if type(question) ~= "string" or strip(question) == "" then fail("%s: field 'question' is missing or empty", where) end
      lang = check_language(lang, where)
      counters[lang] = (counters[lang] or 0) + 1
      local id = ("mgsm/%s/%d"):format(lang, counters[lang])
      if ids[id] then fail("%s: item %s was read before, from %s", where, id, ids[id]) end
      ids[id] = where
      items[#items + 1] = { id = id, bench = "gsm8k", question = question, answer = answer_text(answer, where),
                            language = lang, subject = lang, category = lang, source = where }
    end
  end
end

-- The items of an MGSM file or folder, in file order (a folder: its mgsm_*.tsv and
-- mgsm_*.jsonl files by name). A .tsv line is "question<TAB>answer_number" (MGSM's files, no
-- header, no quoting: a quote is text), its language from the file name mgsm_XX.tsv or opts.language; a .jsonl line is
-- {"question", "answer_number", "language"} (language falls back likewise). Items are lt.eval
-- math items {id = "mgsm/LANG/N" (N: the item's number in that language), bench = "gsm8k",
-- question, answer, language, category = subject = LANG, source = "file:line"}.
-- opts: language, languages (a list: keep only these).
function M.read(path, opts)
  lt.check_options(opts, "mgsm.read", { "language", "languages" })
  opts = opts or {}
  if type(path) ~= "string" then fail("mgsm.read: argument 1: expected a file or folder path, got %s", type(path)) end
  if opts.language ~= nil then check_language(opts.language, "mgsm.read: option language") end
  local files = {}
  if lt.fs.is_dir(path) then
    for _, name in ipairs(lt.fs.list(path)) do
      if name:match("^mgsm_.*%.tsv$") or name:match("^mgsm_.*%.jsonl$") then files[#files + 1] = path .. "/" .. name end
    end
    table.sort(files)
    if #files == 0 then fail("mgsm.read: %s holds no mgsm_*.tsv or mgsm_*.jsonl file", path) end
  else
    files[1] = path
  end
  local items, counters, ids = {}, {}, {}
  for _, f in ipairs(files) do read_file(f, opts.language, items, counters, ids) end
  if opts.languages then
    if type(opts.languages) ~= "table" or #opts.languages == 0 then fail("mgsm.read: option languages must be a non-empty list") end
    local keep, kept = {}, {}
    for _, l in ipairs(opts.languages) do keep[l] = true end
    for _, it in ipairs(items) do if keep[it.language] then kept[#kept + 1] = it end end
    for _, l in ipairs(opts.languages) do
      if not counters[l] then fail("mgsm.read: %s has no items in language '%s'", path, tostring(l)) end
    end
    items = kept
  end
  if #items == 0 then fail("mgsm.read: %s holds no items", path) end
  return items
end

-- Accuracy per language of scored rows {id, correct} (as lt.eval.score's items; samples after
-- the first, ids "ID#k", are left out) on `items` → {acc, n, correct, acc_macro (the mean over
-- languages), by_language = {LANG = {n, correct, acc}}, languages = sorted list}
function M.tally(rows, items)
  local lang_of = {}
  for _, it in ipairs(items) do lang_of[it.id] = it.language end
  local out = { n = 0, correct = 0, by_language = {}, languages = {} }
  for _, r in ipairs(rows) do
    local lang = lang_of[r.id]
    if lang == nil and not tostring(r.id):find("#", 1, true) then fail("mgsm.tally: row id %s is not an item's", tostring(r.id)) end
    if lang then
      local b = out.by_language[lang]
      if not b then
        b = { n = 0, correct = 0 }
        out.by_language[lang] = b
        out.languages[#out.languages + 1] = lang
      end
      b.n, out.n = b.n + 1, out.n + 1
      if r.correct then b.correct, out.correct = b.correct + 1, out.correct + 1 end
    end
  end
  table.sort(out.languages)
  local sum = 0
  for _, l in ipairs(out.languages) do
    local b = out.by_language[l]
    b.acc = b.correct / b.n
    sum = sum + b.acc
  end
  out.acc = out.n > 0 and out.correct / out.n or 0
  out.acc_macro = #out.languages > 0 and sum / #out.languages or 0
  return out
end

-- Given responses (a table id → text, or a function(item) → text) scored as lt.eval's math
-- protocol scores a generation: the answer lt.eval.extract_math finds, equivalent
-- (lt.eval.equivalent) to the item's. → M.tally's result plus rows = {{id, prediction, correct}}
function M.score_responses(responses, items)
  if type(responses) ~= "table" and type(responses) ~= "function" then
    fail("mgsm.score_responses: argument 1: expected responses by id or a function(item), got %s", type(responses))
  end
  local rows = {}
  for _, it in ipairs(items) do
    local r
    if type(responses) == "function" then r = responses(it) else r = responses[it.id] end
    if type(r) ~= "string" then fail("mgsm.score_responses: no response (a string) to item %s (%s)", it.id, it.source or "?") end
    local p = lt.eval.extract_math(r) or ""
    rows[#rows + 1] = { id = it.id, prediction = p, correct = p ~= "" and lt.eval.equivalent(p, it.answer) }
  end
  local out = M.tally(rows, items)
  out.rows = rows
  return out
end

-- Model m scored on the items with lt.eval's math protocol (generate, extract, compare; the
-- run gets BENCH/generate/acc, acc_macro and acc/LANG). opts: bench (default "mgsm"),
-- template ("{question}" replaced; default lt.eval's GSM8K prompt, in English), max_new_tokens,
-- batch_size, samples, temperature. → M.tally's result (first sample of each item) plus
-- summary = lt.eval.score's generate summary and items = its rows.
function M.score(m, items, opts)
  lt.check_options(opts, "mgsm.score", { "bench", "template", "max_new_tokens", "batch_size", "samples", "temperature" })
  opts = opts or {}
  local res = lt.eval.score(m, items, {}, { protocols = { "generate" }, bench = opts.bench or "mgsm",
                                            template = opts.template, max_new_tokens = opts.max_new_tokens,
                                            batch_size = opts.batch_size, samples = opts.samples,
                                            temperature = opts.temperature })
  local first = {}
  for _, r in ipairs(res.items) do if (r.sample or 0) == 0 then first[#first + 1] = r end end
  local out = M.tally(first, items)
  out.summary, out.items = res.generate, res.items
  return out
end

return M
