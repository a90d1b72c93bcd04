-- lt/tasks/mgsm.lua: MGSM (Shi et al. 2022, google-research/url-nlp): GSM8K's problems in
-- ten languages, read as lt.eval math items that keep their language, asked in the item's
-- language (its question label and answer phrase, M.languages) and scored per language with
-- answers read as that language writes numbers (M.extract: "Die Antwort lautet 1.000." is
-- 1000, "La réponse est 1 000." is 1000, Bengali, Thai and Telugu digits are digits). acc_macro
-- is the mean over languages.
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

-- ---- the languages: labels, answer phrases, numbers -----------------------------------------

-- Per language, as lm-evaluation-harness's native chain-of-thought MGSM tasks ask and read
-- (lm_eval/tasks/mgsm/native_cot): the question label, the step-by-step answer label, and the
-- phrase an answer follows (its regex "PHRASE (-?[0-9.,]+)"); plus the decimal mark, "," where
-- the language writes 1.000,5 or 1 000,5 (de, es, fr, ru), else ".". Russian's step label is
-- written with its space ("Пошаговое решение:"; the harness has the two words run together).
M.languages = {
  bn = { question = "প্রশ্ন:", steps = "ধাপে ধাপে উত্তর:", phrase = "উত্তর হল", decimal = "." },
  de = { question = "Frage:", steps = "Schritt-für-Schritt-Antwort:", phrase = "Die Antwort lautet", decimal = "," },
  en = { question = "Question:", steps = "Step-by-Step Answer:", phrase = "The answer is", decimal = "." },
  es = { question = "Pregunta:", steps = "Respuesta paso a paso:", phrase = "La respuesta es", decimal = "," },
  fr = { question = "Question :", steps = "Réponse étape par étape :", phrase = "La réponse est", decimal = "," },
  ja = { question = "問題:", steps = "ステップごとの答え:", phrase = "答えは", decimal = "." },
  ru = { question = "Задача:", steps = "Пошаговое решение:", phrase = "Ответ —", decimal = "," },
  sw = { question = "Swali:", steps = "Jibu la Hatua kwa Hatua:", phrase = "Jibu ni", decimal = "." },
  te = { question = "ప్రశ్న:", steps = "దశలవారీగా సమాధానం:", phrase = "సమాధానం", decimal = "." },
  th = { question = "โจทย์:", steps = "คำตอบทีละขั้นตอน:", phrase = "คำตอบคือ", decimal = "." },
  zh = { question = "问题:", steps = "逐步解答:", phrase = "答案是", decimal = "." },
}

local function language_info(lang)
  return M.languages[lang] or error(("mgsm: language '%s' has no prompt and answer phrase (known: %s)"):format(
    tostring(lang), table.concat(require("lt.study.args").sorted_keys(M.languages), ", ")), 0)
end

-- The prompt template of a language ("{question}" is replaced): its question label, the
-- question, and on the next line the answer phrase the number follows (mode "direct", the
-- default) or the step-by-step label (mode "cot", the harness's native chain of thought)
function M.template(lang, mode)
  local l = language_info(lang)
  if mode ~= nil and mode ~= "direct" and mode ~= "cot" then
    error(("mgsm.template: mode '%s': expected direct or cot"):format(tostring(mode)), 0)
  end
  return ("%s {question}\n%s"):format(l.question, mode == "cot" and l.steps or l.phrase)
end

-- decimal digits of other scripts → ASCII: Arabic-Indic, Extended Arabic-Indic, Devanagari,
-- Bengali, Telugu, Thai, full-width (each block of ten from its zero)
local digit_zeros = { 0x660, 0x6F0, 0x966, 0x9E6, 0xC66, 0xE50, 0xFF10 }
local function ascii_digits(s)
  if not s:find("[\128-\255]") then return s end
  -- every digit of these blocks is three bytes in UTF-8 except Arabic-Indic's two
  return (s:gsub("[\216-\239][\128-\191][\128-\191]?", function(ch)
    local b1, b2, b3 = ch:byte(1, 3)
    local cp
    if #ch == 2 and b1 >= 0xC0 and b1 < 0xE0 then cp = (b1 - 0xC0) * 64 + (b2 - 0x80)
    elseif #ch == 3 and b1 >= 0xE0 then cp = (b1 - 0xE0) * 4096 + (b2 - 0x80) * 64 + (b3 - 0x80)
    else return nil end
    for _, z in ipairs(digit_zeros) do if cp >= z and cp <= z + 9 then return tostring(cp - z) end end
    return nil
  end))
end

-- the characters that group thousands besides the other mark: space, no-break space (U+00A0),
-- narrow no-break space (U+202F), thin space (U+2009), apostrophe
local spaces_group = { " ", "\194\160", "\226\128\175", "\226\128\137", "'" }

-- The number starting at byte i of s (ASCII digits, after ascii_digits), read with the
-- decimal mark `dec`: groups of exactly three digits after a group mark join the number; the
-- decimal mark and its digits end it. → the number as canonical text ("1000", "12.5", "-3"),
-- the byte after it; nil when no digit is at i (a "-" before the digits is its sign)
local function read_number(s, i, dec)
  local neg = false
  if s:sub(i, i) == "-" then neg, i = true, i + 1 end
  local a, b = s:find("^%d+", i)
  if not a then return nil end
  local int, p = s:sub(a, b), b + 1
  local group = dec == "," and { "." } or { "," }
  for _, g in ipairs(spaces_group) do group[#group + 1] = g end
  local frac = ""
  while true do
    local joined = false
    for _, g in ipairs(group) do
      if s:sub(p, p + #g - 1) == g and s:find("^%d%d%d", p + #g) and not s:find("^%d", p + #g + 3) then
        int, p, joined = int .. s:sub(p + #g, p + #g + 2), p + #g + 3, true
        break
      end
    end
    if not joined then break end
  end
  -- the decimal mark; in a comma language a "." not grouping three digits is read as one too
  for _, mark in ipairs(dec == "," and { ",", "." } or { "." }) do
    local fa, fb = s:find("^%d+", p + 1)
    if s:sub(p, p) == mark and fa then frac, p = s:sub(fa, fb), fb + 1; break end
  end
  int = int:gsub("^0+(%d)", "%1")
  frac = frac:gsub("0+$", "")
  local text = int .. (frac ~= "" and ("." .. frac) or "")
  if neg and text:match("[1-9]") then text = "-" .. text end
  return text, p
end

-- The answer in a response in language `lang`: the number after the language's answer phrase
-- (its first occurrence with a number, as the harness takes the first match), else after a
-- GSM8K "####" marker (this tool's math models write one), else the last number of the text;
-- "" when there is none. Numbers are read as the language writes them (read_number).
function M.extract(text, lang)
  local l = language_info(lang)
  local s = ascii_digits(text)
  local function after(at)
    local p = s:find("[^%s:=]", at) or #s + 1
    if s:sub(p, p) == "$" then p = p + 1 end
    for _, g in ipairs{ "\194\160", "\226\128\175" } do if s:sub(p, p + #g - 1) == g then p = p + #g end end
    return read_number(s, p, l.decimal)
  end
  local at = 1
  while true do
    local a, b = s:find(l.phrase, at, true)
    if not a then break end
    local v = after(b + 1)
    if v then return v end
    at = b + 1
  end
  local mark, m = nil, s:find("####", 1, true)
  while m do mark, m = m, s:find("####", m + 4, true) end  -- the last marker
  if mark then
    local v = after(mark + 4)
    if v then return v end
  end
  local last, p = nil, 1
  while true do
    local a = s:find("%d", p)
    if not a then break end
    local start = (a > 1 and s:sub(a - 1, a - 1) == "-") and a - 1 or a
    local v, nxt = read_number(s, start, l.decimal)
    last, p = v, nxt
  end
  return last or ""
end

-- whether an extracted answer equals the item's (both numbers: "35" and "35.0" are equal)
function M.correct(prediction, answer)
  local a, b = tonumber(prediction), tonumber(answer)
  return a ~= nil and b ~= nil and a == b
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

-- The items of an MGSM file or folder, in file order (a folder: its mgsm_*.tsv and mgsm_*.jsonl
-- files by name). A .tsv line is "question<TAB>answer_number" (MGSM's files, no header, no quoting:
-- a quote is text), its language from the file name mgsm_XX.tsv or opts.language; a .jsonl line is
-- {"question", "answer_number", "language"} (language falls back likewise). Items are lt.eval math
-- items {id = "mgsm/LANG/N" (N: the item's number in that language), bench = "gsm8k", question,
-- answer, language, category = subject = LANG, source = "file:line"}. opts: language, languages (a
-- list: keep only these).
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

-- Given responses (a table id → text, or a function(item) → text) scored in their items'
-- languages: M.extract's answer, M.correct against the item's. → M.tally's result plus rows =
-- {{id, prediction, correct}}
function M.score_responses(responses, items)
  if type(responses) ~= "table" and type(responses) ~= "function" then
    fail("mgsm.score_responses: argument 1: expected responses by id or a function(item), got %s", type(responses))
  end
  local rows = {}
  for _, it in ipairs(items) do
    local r
    if type(responses) == "function" then r = responses(it) else r = responses[it.id] end
    if type(r) ~= "string" then fail("mgsm.score_responses: no response (a string) to item %s (%s)", it.id, it.source or "?") end
    local p = M.extract(r, it.language)
    rows[#rows + 1] = { id = it.id, prediction = p, correct = p ~= "" and M.correct(p, it.answer) }
  end
  local out = M.tally(rows, items)
  out.rows = rows
  return out
end

-- Model m scored on the items, each language asked in its own prompt (M.template, opts.mode
-- "direct" or "cot"; opts.template, "{question}" replaced, for every language instead) and
-- generated by lt.eval.score (one call per language: the run's eval_items and
-- BENCH/generate/acc/LANG hold lt.eval's own reading of the outputs); the outputs are then
-- scored in their language (M.extract, M.correct) and logged as BENCH/native/acc/LANG,
-- BENCH/native/acc and BENCH/native/acc_macro. opts: bench (default "mgsm"), mode, template,
-- max_new_tokens, batch_size, samples, temperature. → M.tally's result (first sample of each
-- item) plus items = the rows {id, output, prediction, correct, sample} with this scoring.
function M.score(m, items, opts)
  lt.check_options(opts, "mgsm.score", { "bench", "mode", "template", "max_new_tokens", "batch_size", "samples",
                                         "temperature" })
  opts = opts or {}
  local bench = opts.bench or "mgsm"
  local by_lang, langs = {}, {}
  for _, it in ipairs(items) do
    if not by_lang[it.language] then by_lang[it.language] = {}; langs[#langs + 1] = it.language end
    table.insert(by_lang[it.language], it)
  end
  local lang_of, answer_of, rows, first = {}, {}, {}, {}
  for _, it in ipairs(items) do lang_of[it.id], answer_of[it.id] = it.language, it.answer end
  for _, lang in ipairs(langs) do
    local res = lt.eval.score(m, by_lang[lang], {}, { protocols = { "generate" }, bench = bench,
                                                      template = opts.template or M.template(lang, opts.mode),
                                                      max_new_tokens = opts.max_new_tokens, batch_size = opts.batch_size,
                                                      samples = opts.samples, temperature = opts.temperature })
    for _, r in ipairs(res.items) do
      local id = tostring(r.id):gsub("#.*$", "")
      local p = M.extract(r.output or "", lang_of[id])
      local row = { id = r.id, output = r.output, prediction = p, sample = r.sample }
      row.correct = p ~= "" and M.correct(p, answer_of[id])
      rows[#rows + 1] = row
      if (r.sample or 0) == 0 then first[#first + 1] = row end
    end
  end
  local out = M.tally(first, items)
  for _, l in ipairs(out.languages) do lt.run.log(("%s/native/acc/%s"):format(bench, l), out.by_language[l].acc) end
  lt.run.log{ [bench .. "/native/acc"] = out.acc, [bench .. "/native/acc_macro"] = out.acc_macro }
  out.items = rows
  return out
end

return M
