-- lt/tasks/ifeval.lua: IFEval (Zhou et al. 2023, google-research/instruction_following_eval):
-- its JSONL reader, the checkers of all its instructions, strict and loose accuracy at prompt and
-- instruction level, and a model's responses scored. Each checker follows the reference's
-- check_following, with Python's text semantics: str.split()/strip() and \s take any Unicode
-- whitespace (U+00A0, U+3000, ...), \d any decimal digit (full-width ones too), \w any letter or
-- number (M.is_word, python_word.lua), json.loads its own grammar (M.json_loads_ok); where the
-- reference calls a library (nltk, langdetect) this file says what it does instead
-- (M.approximations): languages are identified with libexttextcat's profiles (M.language).
--   local ifeval = require "lt.tasks.ifeval"
--   local items = ifeval.read("input_data.jsonl")
--   local res = ifeval.score({ [1000] = "response text", ... }, items)   -- or a function(item)
--   local res = ifeval.evaluate(m, items, { max_new_tokens = 512 })      -- generate, score, log
local M = {}

M.approximations = {
  ["length_constraints:number_sentences"] =
    "nltk's punkt (english) is replaced by a rule: a sentence ends at ?, ! or . (closing quotes and brackets may follow) " ..
    "before whitespace; not after a common abbreviation (Mr., Dr., e.g., U.S., ...) or a single-letter initial; " ..
    "an ellipsis (..) ends one only when an upper-case word follows. Line breaks alone end nothing (as punkt).",
  ["change_case:capital_word_frequency"] =
    "nltk's word_tokenize is replaced by whitespace splitting plus its splits that make words: the marks " ..
    ", ; : @ # $ % & ? ! \" ( ) [ ] { } < > * ` « “ ‘ „ » ” ’, -- and .. split, contractions (n't 's 'm 'd 'll 're 've) and cannot/gonna/gotta/" ..
    "wanna/gimme/lemme split in two. Its quote rules around apostrophes ('A, '') are not followed: on 16,800 random " ..
    "strings of markdown, quotes and mixed-case words 6 counts differ from nltk's.",
  language = "langdetect (language:response_language, and the 'en' of change_case:english_capital and " ..
    "english_lowercase) is replaced by libexttextcat's n-gram profiles (M.language): the same 55 candidate " ..
    "languages, Telugu by its script (no profile); on short or mixed texts the two can disagree.",
  case = "upper/lower case is known for ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic; other letters are uncased.",
  regex = "keywords, forbidden words, section splitters and postscript markers are IFEval regular expressions; only " ..
    "'.' (any character but a line break) is read as one, any other regular-expression syntax is refused.",
  json = "json.loads is followed (M.json_loads_ok) except nesting deeper than 1000, where Python raises " ..
    "RecursionError (uncaught by the reference's check); here it is not JSON.",
}

local function fail(fmt, ...) error(fmt:format(...), 0) end

-- ---- text: UTF-8 code points, word characters, case -------------------------------------

-- the code point of s at byte i → cp, the byte after it; a malformed byte is a code point of its
-- own
local function decode(s, i)
  local c = s:byte(i)
  local len, cp = 1, c
  if c >= 0xC0 and c < 0xE0 then len, cp = 2, c - 0xC0
  elseif c >= 0xE0 and c < 0xF0 then len, cp = 3, c - 0xE0
  elseif c >= 0xF0 and c < 0xF8 then len, cp = 4, c - 0xF0 end
  if len > 1 then
    if i + len - 1 > #s then return c, i + 1 end
    for k = 1, len - 1 do
      local b = s:byte(i + k)
      if b < 0x80 or b > 0xBF then return c, i + 1 end
      cp = cp * 64 + (b - 0x80)
    end
  end
  return cp, i + len
end

-- for cp, first, last in codepoints(s): the code points of s with their bytes (no tables made:
-- a long response costs no memory per character)
local function codepoints(s)
  local i = 1
  return function()
    if i > #s then return nil end
    local first = i
    local cp, nxt = decode(s, i)
    i = nxt
    return cp, first, nxt - 1
  end
end

local function count_codepoints(s)
  local n = 0
  for _ in codepoints(s) do n = n + 1 end
  return n
end

local function utf8_char(cp)
  if cp < 0x80 then return string.char(cp) end
  if cp < 0x800 then return string.char(0xC0 + math.floor(cp / 64), 0x80 + cp % 64) end
  if cp < 0x10000 then
    return string.char(0xE0 + math.floor(cp / 4096), 0x80 + math.floor(cp / 64) % 64, 0x80 + cp % 64)
  end
  return string.char(0xF0 + math.floor(cp / 262144), 0x80 + math.floor(cp / 4096) % 64,
                     0x80 + math.floor(cp / 64) % 64, 0x80 + cp % 64)
end

-- whether code point cp is a word character: Python's \w on str (c.isalnum() or "_": general
-- category L* or N*), from the table python_word.py generates; a combining mark (a Devanagari
-- vowel sign or virama, a Thai vowel mark, an Arabic haraka, U+0300-036F) ends a word
local word_ranges = require "lt.tasks.python_word"
local word_lo, word_hi = word_ranges.lo, word_ranges.hi
local function is_word(cp)
  if cp < 0x80 then
    return (cp >= 48 and cp <= 57) or (cp >= 65 and cp <= 90) or (cp >= 97 and cp <= 122) or cp == 95
  end
  local a, b = 1, #word_lo  -- the last range starting at or below cp
  if cp < word_lo[1] then return false end
  while a < b do
    local m = math.floor((a + b + 1) / 2)
    if word_lo[m] <= cp then a = m else b = m - 1 end
  end
  return cp <= word_hi[a]
end
M.is_word = is_word

-- Python's str.isspace(), which str.split(), str.strip() and re's \s (on str) follow: ASCII
-- \t \n \v \f \r, \x1c-\x1f and space, U+0085, U+00A0 (no-break space), U+1680, U+2000-U+200A,
-- U+2028, U+2029, U+202F, U+205F and U+3000 (ideographic space)
local function is_space(cp)
  if cp < 0x80 then return (cp >= 9 and cp <= 13) or (cp >= 0x1C and cp <= 0x20) end
  return cp == 0x85 or cp == 0xA0 or cp == 0x1680 or (cp >= 0x2000 and cp <= 0x200A) or cp == 0x2028
         or cp == 0x2029 or cp == 0x202F or cp == 0x205F or cp == 0x3000
end
M.is_space = is_space

-- s with every whitespace code point that Lua's %s does not know (\x1c-\x1f and the non-ASCII
-- ones above) replaced by one ASCII space: Lua patterns with %s, %S and gmatch("%S+") on it
-- then split and match as Python's str.split() and \s do, one code point for one byte
local function unispace(s)
  if not s:find("[\28-\31\128-\255]") then return s end
  local out, from = {}, 1
  for cp, first, last in codepoints(s) do
    if is_space(cp) and not (cp == 32 or (cp >= 9 and cp <= 13)) then
      out[#out + 1] = s:sub(from, first - 1)
      out[#out + 1] = " "
      from = last + 1
    end
  end
  out[#out + 1] = s:sub(from)
  return table.concat(out)
end
M.unispace = unispace

-- Python's \d on str: the decimal digits (Unicode category Nd), each block of ten from its zero:
-- ASCII, Arabic-Indic, Extended Arabic-Indic, NKo, Devanagari, Bengali, Gurmukhi, Gujarati,
-- Oriya, Tamil, Telugu, Kannada, Malayalam, Sinhala, Thai, Lao, Tibetan, Myanmar (two), Khmer,
-- Mongolian, Limbu, New Tai Lue, Tai Tham (two), Balinese, Sundanese, Lepcha, Ol Chiki, Vai,
-- Saurashtra, Kayah Li, Javanese, Myanmar Extended-B, Cham, Meetei Mayek, full-width, and the
-- mathematical digits (U+1D7CE-1D7FF, five blocks)
local digit_zeros = { 0x30, 0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66,
                      0xDE6, 0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90,
                      0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0,
                      0xFF10, 0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6 }
local function is_digit(cp)
  for _, z in ipairs(digit_zeros) do
    if cp >= z and cp <= z + 9 then return true end
  end
  return false
end
M.is_digit = is_digit

-- "u", "l" or nil (uncased) for code point cp, and its lower-case code point
local function case_of(cp)
  if cp < 0x80 then
    if cp >= 65 and cp <= 90 then return "u", cp + 32 end
    if cp >= 97 and cp <= 122 then return "l", cp end
    return nil, cp
  end
  if cp == 0xB5 or cp == 0xAA or cp == 0xBA then return "l", cp end
  if cp >= 0xC0 and cp <= 0xDE and cp ~= 0xD7 then return "u", cp + 32 end
  if cp >= 0xDF and cp <= 0xFF and cp ~= 0xF7 then return "l", cp end
  if cp >= 0x100 and cp <= 0x17F then
    if cp == 0x130 then return "u", 0x69 end
    if cp == 0x131 or cp == 0x138 or cp == 0x149 or cp == 0x17F then return "l", cp end
    if cp == 0x178 then return "u", 0xFF end
    local odd_upper = (cp >= 0x139 and cp <= 0x148) or (cp >= 0x179 and cp <= 0x17E)
    if (cp % 2 == 1) == odd_upper then return "u", cp + 1 end
    return "l", cp
  end
  if cp >= 0x370 and cp <= 0x3FF then
    if cp >= 0x391 and cp <= 0x3A9 and cp ~= 0x3A2 then return "u", cp + 32 end
    if cp == 0x386 then return "u", 0x3AC end
    if cp >= 0x388 and cp <= 0x38A then return "u", cp + 37 end
    if cp == 0x38C then return "u", 0x3CC end
    if cp == 0x38E or cp == 0x38F then return "u", cp + 63 end
    if cp >= 0x3AC and cp <= 0x3CE then return "l", cp end
    return nil, cp
  end
  if cp >= 0x400 and cp <= 0x4FF then
    if cp <= 0x40F then return "u", cp + 80 end
    if cp <= 0x42F then return "u", cp + 32 end
    if cp <= 0x45F then return "l", cp end
    if (cp >= 0x460 and cp <= 0x481) or (cp >= 0x48A and cp <= 0x4BF) then
      if cp % 2 == 0 then return "u", cp + 1 end
      return "l", cp
    end
    return nil, cp
  end
  return nil, cp
end

-- s in lower case (Python's str.lower within the known cases, M.approximations.case)
local function lower(s)
  if not s:find("[\128-\255]") then return s:lower() end
  local out = {}
  for cp, a, b in codepoints(s) do
    local kind, lc = case_of(cp)
    out[#out + 1] = kind == "u" and utf8_char(lc) or s:sub(a, b)
  end
  return table.concat(out)
end

-- Python's str.isupper / str.islower: at least one cased character, none of the other case
local function has_case_only(s, want)
  local any = false
  for cp in codepoints(s) do
    local kind = case_of(cp)
    if kind then
      if kind ~= want then return false end
      any = true
    end
  end
  return any
end
local function isupper(s) return has_case_only(s, "u") end
local function islower(s) return has_case_only(s, "l") end

-- Python's strip() (Unicode whitespace, is_space) / rstrip(chars) / lstrip(chars), without a
-- trailing-anchored pattern: Lua retries "%s+$" at every position, quadratic on a long run of
-- spaces before a non-space
local function strip(s)
  local a
  for cp, first in codepoints(s) do
    if not is_space(cp) then a = first; break end
  end
  if not a then return "" end
  local b = #s
  while b >= a do
    local j = b  -- the first byte of the code point ending at b
    while j > a and j > b - 3 and s:byte(j) >= 0x80 and s:byte(j) < 0xC0 do j = j - 1 end
    local cp, nxt = decode(s, j)
    if nxt ~= b + 1 then j, cp = b, s:byte(b) end  -- a malformed byte, a code point of its own
    if not is_space(cp) then break end
    b = j - 1
  end
  return s:sub(a, b)
end
M.strip = strip
local function rstrip_byte(s, byte)
  local b = #s
  while b > 0 and s:byte(b) == byte do b = b - 1 end
  return s:sub(1, b)
end
local function lstrip_byte(s, byte)
  local a = 1
  while a <= #s and s:byte(a) == byte do a = a + 1 end
  return s:sub(a)
end

-- s split at every (non-overlapping) occurrence of the plain string sep, as Python's str.split(sep)
local function split_plain(s, sep)
  local out, at = {}, 1
  while true do
    local a, b = s:find(sep, at, true)
    if not a then out[#out + 1] = s:sub(at); return out end
    out[#out + 1] = s:sub(at, a - 1)
    at = b + 1
  end
end

local function starts_with(s, p) return s:sub(1, #p) == p end
local function ends_with(s, p) return p == "" or s:sub(-#p) == p end

-- ---- the counters the reference takes from nltk ------------------------------------------

-- nltk RegexpTokenizer(r"\w+"): the number of runs of word characters
function M.count_words(text)
  local n, inword = 0, false
  for cp in codepoints(text) do
    local w = is_word(cp)
    if w and not inword then n = n + 1 end
    inword = w
  end
  return n
end

local abbreviations = {}
for w in ([[mr mrs ms dr prof sr jr st mt inc ltd co corp vs e.g i.e u.s u.k a.m p.m jan feb aug sept oct
            nov dec approx dept fig gen gov sen rep rev sgt capt lt col]]):gmatch("%S+") do
  abbreviations[w] = true
end

-- t without the closing quotes and brackets after a sentence's end: " ' ) ] } * ’ ” »
local closers = { [34] = true, [39] = true, [41] = true, [93] = true, [125] = true, [42] = true }
local function strip_closers(t)
  local b = #t
  while b > 0 do
    local z = t:byte(b)
    if closers[z] then
      b = b - 1
    elseif b >= 3 and (z == 153 or z == 157) and t:byte(b - 1) == 128 and t:byte(b - 2) == 226 then
      b = b - 3
    elseif b >= 2 and z == 187 and t:byte(b - 1) == 194 then
      b = b - 2
    else
      break
    end
  end
  return t:sub(1, b)
end

-- The number of sentences (punkt's, approximated: M.approximations)
function M.count_sentences(text)
  local tokens = {}
  for t in unispace(text):gmatch("%S+") do tokens[#tokens + 1] = t end
  if #tokens == 0 then return 0 end
  local n = 1
  for i = 1, #tokens - 1 do
    local body, punct = strip_closers(tokens[i]):match("^(.-)([.?!]+)$")
    if punct then
      local boundary
      if punct:find("[?!]") then
        boundary = true
      elseif #punct >= 2 then  -- an ellipsis: only before an upper-case word
        boundary = tokens[i + 1]:gsub("^[\"'(%[{]+", ""):match("^%u") ~= nil
      else
        local word = lower((body:gsub("^[\"'(%[{]+", "")))
        boundary = not (abbreviations[word] or word:match("^%a$"))
      end
      if boundary then n = n + 1 end
    end
  end
  return n
end

-- « “ ‘ „ » ” ’: nltk's tokenizer splits at them
local unicode_quotes = { "\194\171", "\226\128\156", "\226\128\152", "\226\128\158", "\194\187",
                         "\226\128\157", "\226\128\153" }

-- nltk word_tokenize's words, approximated (M.approximations)
local function word_tokens(text)
  local out = {}
  local spaced = unispace(text):gsub("[,;:@#%$%%&%?!\"%(%)%[%]{}<>%*`]", " "):gsub("%-%-", " "):gsub("%.%.+", " ")
  for _, q in ipairs(unicode_quotes) do spaced = spaced:gsub(q, " ") end
  for t in spaced:gmatch("%S+") do
    local l = t:lower()
    local a, b = l:match("^(can)(not)$")
    if not a then a, b = l:match("^(gon)(na)$") end
    if not a then a, b = l:match("^(got)(ta)$") end
    if not a then a, b = l:match("^(wan)(na)$") end
    if not a then a, b = l:match("^(gim)(me)$") end
    if not a then a, b = l:match("^(lem)(me)$") end
    if a then
      out[#out + 1] = t:sub(1, #a); out[#out + 1] = t:sub(#a + 1)
    else
      local cut = l:find("n't$") or l:find("'[smd]$") or l:find("'ll$") or l:find("'re$") or l:find("'ve$")
      if cut and cut > 1 then
        out[#out + 1] = t:sub(1, cut - 1); out[#out + 1] = t:sub(cut)
      else
        out[#out + 1] = t
      end
    end
  end
  return out
end
M.word_tokens = word_tokens

-- ---- language identification: libexttextcat's profiles ---------------------------------

-- The reference asks langdetect. This file asks the n-gram profiles of libexttextcat (Debian
-- package libexttextcat-data, scripts/setup), read here as its library reads them: a profile is the
-- 400 most frequent 1- to 5-grams of a language's text, words padded with '_', in rank order; a
-- text's profile is made the same way (whitespace and ASCII digits separate words) and the language
-- whose ranks are nearest (Cavnar and Trenkle's out-of-place distance, 400 for an n-gram the
-- language lacks) wins. The candidates are langdetect's 55 languages (its codes: no for Norwegian,
-- zh-cn, zh-tw); Telugu, which has no profile, is named by its script. (under LTRUN_SHARE_DIR where
-- Debian's /usr/share is unpacked elsewhere: a GPU node, scripts/gpu-check)
M.textcat_dir = os.getenv("LTRUN_TEXTCAT_DIR")
  or (os.getenv("LTRUN_SHARE_DIR") or "/usr/share") .. "/libexttextcat"
M.languages = { af = "af", ar = "ar", bg = "bg", bn = "bn", ca = "ca", cs = "cs", cy = "cy", da = "da", de = "de",
                el = "el", en = "en", es = "es", et = "et", fa = "fa", fi = "fi", fr = "fr", gu = "gu", he = "he",
                hi = "hi", hr = "hr", hu = "hu", id = "id", it = "it", ja = "ja", kn = "kn", ko = "ko", lt = "lt",
                lv = "lv", mk = "mk", ml = "ml", mr = "mr", ne = "ne", nl = "nl", no = "nb", pa = "pa", pl = "pl",
                pt = "pt", ro = "ro", ru = "ru", sk = "sk", sl = "sl", so = "so", sq = "sq", sv = "sv", sw = "sw",
                ta = "ta", th = "th", tl = "tl", tr = "tr", uk = "uk", ur = "ur", vi = "vi", ["zh-cn"] = "zh-Hans",
                ["zh-tw"] = "zh-Hant" }
local MAX_NGRAMS = 400

local profiles  -- code → {ngram → rank, 0-based}, read once
local function load_profiles()
  if profiles then return profiles end
  local out = {}
  for code, file in pairs(M.languages) do
    local path = ("%s/%s.lm"):format(M.textcat_dir, file)
    local f = io.open(path, "rb")
    if not f then
      fail("ifeval: no language profile %s (install the Debian package libexttextcat-data: scripts/setup; or set "
           .. "LTRUN_TEXTCAT_DIR)", path)
    end
    local ranks, r = {}, 0
    for line in f:lines() do
      local g = line:match("^([^\t ]+)")
      if g and ranks[g] == nil and r < MAX_NGRAMS then ranks[g], r = r, r + 1 end
    end
    f:close()
    out[code] = ranks
  end
  profiles = out
  return out
end

-- the n-grams of text, most frequent first (ties in byte order), at most MAX_NGRAMS
local function text_profile(text)
  local counts = {}
  for word in unispace(text):gmatch("[^%s0-9]+") do
    local cps = { "_" }
    for _, first, last in codepoints(word) do cps[#cps + 1] = word:sub(first, last) end
    cps[#cps + 1] = "_"
    for i = 1, #cps - 1 do  -- (the final "_" alone is the next word's first)
      local g = ""
      for k = i, math.min(i + 4, #cps) do
        g = g .. cps[k]
        counts[g] = (counts[g] or 0) + 1
      end
    end
  end
  local grams = {}
  for g in pairs(counts) do grams[#grams + 1] = g end
  table.sort(grams, function(a, b)
    if counts[a] ~= counts[b] then return counts[a] > counts[b] end
    return a < b
  end)
  for i = MAX_NGRAMS + 1, #grams do grams[i] = nil end
  return grams
end

-- The language of text as a langdetect code, or nil when it has no letter (langdetect raises
-- then, and IFEval counts the instruction as followed). An all-upper-case text is read in lower
-- case (the profiles are mostly lower case).
function M.language(text)
  local letters, telugu = 0, 0
  for cp in codepoints(text) do
    if is_word(cp) and not is_digit(cp) and cp ~= 95 then
      letters = letters + 1
      if cp >= 0xC00 and cp <= 0xC7F then telugu = telugu + 1 end
    end
  end
  if letters == 0 then return nil end
  if telugu > letters / 2 then return "te" end
  if isupper(text) then text = lower(text) end
  local grams, best, best_d = text_profile(text), nil, math.huge
  local codes = {}
  for code in pairs(load_profiles()) do codes[#codes + 1] = code end
  table.sort(codes)
  for _, code in ipairs(codes) do
    local ranks, d = profiles[code], 0
    for i, g in ipairs(grams) do
      local r = ranks[g]
      d = d + (r and math.abs(r - (i - 1)) or MAX_NGRAMS)
      if d >= best_d then break end
    end
    if d < best_d then best, best_d = code, d end
  end
  return best
end

-- ---- IFEval regular expressions, as far as they are plain text ---------------------------

-- A Lua pattern for an IFEval regex that is literal text except '.' (any character but a
-- line break); other regex syntax is an error naming `what`.
local function literal_pattern(re, what)
  local bad = re:match("[%*%+%?%(%)%[%]{}|%^%$\\]")
  if bad then
    fail("%s '%s' uses regular-expression syntax ('%s') this reader does not implement (only '.' is read as a regex)",
         what, re, bad)
  end
  return (re:gsub("[%%%-]", "%%%0"):gsub("%.", "[^\n]"))
end

-- the (non-overlapping) matches of Lua pattern pat in s
local function count_matches(s, pat)
  local n = 0
  for _ in s:gmatch(pat) do n = n + 1 end
  return n
end

-- the code point ending right before byte position i (nil at the start)
local function cp_before(s, i)
  if i <= 1 then return nil end
  for j = i - 1, math.max(1, i - 4), -1 do
    local b = s:byte(j)
    if b < 0x80 or b >= 0xC0 then
      local cp, nxt = decode(s, j)
      if nxt == i then return cp end
      break
    end
  end
  return s:byte(i - 1)  -- a malformed byte, a code point of its own (as codepoints reads it)
end
local function cp_at(s, i)
  if i > #s then return nil end
  return (decode(s, i))
end
local function word_at(cp) return cp ~= nil and is_word(cp) end

-- re.search(r"\b" + word + r"\b", s, IGNORECASE), s and pat already lower case
local function has_bounded(s, pat)
  local at = 1
  while true do
    local a, b = s:find(pat, at)
    if not a then return false end
    local first, last = cp_at(s, a), cp_before(s, b + 1)
    if word_at(cp_before(s, a)) ~= word_at(first) and word_at(last) ~= word_at(cp_at(s, b + 1)) then return true end
    at = a + 1
  end
end

-- ---- Python's json.loads, as a yes or no ------------------------------------------------

-- Whether Python's json.loads(s) returns (CPython's C scanner): RFC 8259 JSON plus what it also
-- takes: NaN, Infinity, -Infinity; numbers beyond the double range (1e400 reads as inf); lone
-- UTF-16 surrogates in \u escapes; duplicate keys. It refuses what RFC 8259 refuses (raw control
-- characters in strings, trailing commas, single quotes, a leading BOM, text after the value),
-- and an integer of more than 4300 digits (int()'s limit, a ValueError). Nesting deeper than
-- 1000 raises RecursionError there, which IFEval's check does not catch; here it is false.
function M.json_loads_ok(s)
  local pos, n, depth = 1, #s, 0
  local function ws() pos = s:find("[^ \t\n\r]", pos) or n + 1 end
  local value
  local function string_()
    pos = pos + 1  -- the opening quote
    while true do
      local a = s:find('["\\%z\1-\31]', pos)
      if not a then return false end
      local c = s:byte(a)
      if c == 34 then pos = a + 1; return true end
      if c < 32 then return false end  -- a raw control character (strict)
      local e = s:sub(a + 1, a + 1)
      if e == "u" then
        if not s:sub(a + 2, a + 5):match("^%x%x%x%x$") then return false end
        pos = a + 6  -- any code unit, a lone surrogate too
      elseif e ~= "" and ('"\\/bfnrt'):find(e, 1, true) then
        pos = a + 2
      else
        return false
      end
    end
  end
  -- the C scanner's number: -?(0|[1-9][0-9]*), then .[0-9]+ and [eE][-+]?[0-9]+ where complete
  local function number()
    local p = pos
    if s:sub(p, p) == "-" then p = p + 1 end
    local d = s:sub(p, p)
    if d == "0" then p = p + 1
    elseif d:match("^[1-9]$") then p = (s:find("[^0-9]", p) or n + 1)
    else return false end
    local int_end, float = p, false
    if s:sub(p, p) == "." and s:sub(p + 1, p + 1):match("^%d$") then p, float = s:find("[^0-9]", p + 1) or n + 1, true end
    if s:sub(p, p):match("^[eE]$") then
      local q = p + 1
      if s:sub(q, q):match("^[%+%-]$") then q = q + 1 end
      if s:sub(q, q):match("^%d$") then p, float = s:find("[^0-9]", q) or n + 1, true end
    end
    if not float and int_end - pos - (s:sub(pos, pos) == "-" and 1 or 0) > 4300 then return false end
    pos = p
    return true
  end
  function value()
    ws()
    local c = s:sub(pos, pos)
    if c == "{" or c == "[" then
      depth = depth + 1
      if depth > 1000 then return false end
      local close = c == "{" and "}" or "]"
      pos = pos + 1
      ws()
      if s:sub(pos, pos) == close then pos = pos + 1; depth = depth - 1; return true end
      while true do
        if c == "{" then
          if s:sub(pos, pos) ~= '"' or not string_() then return false end
          ws()
          if s:sub(pos, pos) ~= ":" then return false end
          pos = pos + 1
        end
        if not value() then return false end
        ws()
        local d = s:sub(pos, pos)
        pos = pos + 1
        if d == close then depth = depth - 1; return true end
        if d ~= "," then return false end
        ws()
      end
    elseif c == '"' then
      return string_()
    end
    for _, lit in ipairs{ "null", "true", "false", "NaN", "Infinity", "-Infinity" } do
      if s:sub(pos, pos + #lit - 1) == lit then pos = pos + #lit; return true end
    end
    return number()
  end
  if s:byte(1) == 0xEF and s:byte(2) == 0xBB and s:byte(3) == 0xBF then return false end  -- "Unexpected UTF-8 BOM"
  if not value() then return false end
  ws()
  return pos > n
end

-- ---- the checkers -----------------------------------------------------------------------

local function compare(count, relation, threshold)
  if relation == "less than" then return count < threshold end
  return count >= threshold
end

-- re.findall(r"^\s*M.*$", s, re.MULTILINE) counted, M the character `marker` (with `star`,
-- r"^\s*\*[^\*].*$": a character other than * must follow, a line break included). \s* may
-- run over blank lines, and [^\*] over a line break, so the scan follows the regex's matches.
local function count_line_marks(s, marker, star)
  -- the first line start at or after byte position `from`
  local function line_start(from)
    if from == 1 or s:sub(from - 1, from - 1) == "\n" then return from end
    local nl = s:find("\n", from, true)
    return nl and nl + 1 or nil
  end
  local n, p = 0, line_start(1)
  while p do
    local q = s:find("%S", p)
    if not q then break end
    local body, ok = q + 1, s:sub(q, q) == marker
    if ok and star then
      local c = s:sub(q + 1, q + 1)
      ok, body = c ~= "" and c ~= "*", q + 2
    end
    if ok then
      n = n + 1
      p = line_start(s:find("\n", body, true) or #s + 1)  -- .*$ ends before the next line break
    else
      p = line_start(q + 1)  -- line starts up to q lead to the same q
    end
  end
  return n
end

-- re.findall(r"\[.*?\]", s) counted in one pass: a [ matches up to the first ] on its line;
-- with no ] before the line's end no [ of that line matches (a per-[ scan is quadratic)
local function count_placeholders(s)
  local n, at = 0, 1
  while true do
    local a = s:find("[", at, true)
    if not a then return n end
    local b = s:find("[%]\n]", a + 1)
    if not b then return n end
    if s:sub(b, b) == "]" then n, at = n + 1, b + 1 else at = b + 1 end
  end
end

local checkers = {}
M.checkers = checkers

-- each: args = {name = kind}, kinds int | relation | string | list | letter; check(value, kw, item)
checkers["change_case:capital_word_frequency"] = {
  args = { capital_frequency = "int", capital_relation = "relation" },
  check = function(v, kw)
    local n = 0
    for _, w in ipairs(word_tokens(v)) do if isupper(w) then n = n + 1 end end
    return compare(n, kw.capital_relation, kw.capital_frequency)
  end,
}
-- value.isupper() / islower() and langdetect.detect(value) == "en" (no letter: followed)
local function english(v)
  local l = M.language(v)
  return l == nil or l == "en"
end
checkers["change_case:english_capital"] = {
  args = {}, check = function(v) return isupper(v) and english(v) end,
}
checkers["change_case:english_lowercase"] = {
  args = {}, check = function(v) return islower(v) and english(v) end,
}
checkers["combination:repeat_prompt"] = {
  args = { prompt_to_repeat = "string" },
  check = function(v, kw) return starts_with(lower(strip(v)), lower(strip(kw.prompt_to_repeat))) end,
}
checkers["combination:two_responses"] = {
  args = {},
  check = function(v)
    local parts, valid = split_plain(v, "******"), {}
    for i, p in ipairs(parts) do
      if strip(p) == "" then
        if i ~= 1 and i ~= #parts then return false end
      else
        valid[#valid + 1] = p
      end
    end
    return #valid == 2 and strip(valid[1]) ~= strip(valid[2])
  end,
}
checkers["detectable_content:number_placeholders"] = {
  args = { num_placeholders = "int" },
  check = function(v, kw) return count_placeholders(v) >= kw.num_placeholders end,
}
checkers["detectable_content:postscript"] = {
  args = { postscript_marker = "string" },
  prepare = function(kw) kw._pattern = literal_pattern(lower(strip(kw.postscript_marker)), "postscript_marker") end,
  check = function(v, kw)
    local m = strip(kw.postscript_marker)
    local pat = m == "P.P.S" and "p%.%s?p%.%s?s" or m == "P.S." and "p%.%s?s%." or kw._pattern
    return lower(unispace(v)):find(pat) ~= nil
  end,
}
checkers["detectable_format:constrained_response"] = {
  args = {},
  check = function(v)
    v = strip(v)
    for _, o in ipairs{ "My answer is yes.", "My answer is no.", "My answer is maybe." } do
      if v:find(o, 1, true) then return true end
    end
    return false
  end,
}
checkers["detectable_format:json_format"] = {
  args = {},
  check = function(v)
    v = strip(v)
    -- value.strip().removeprefix("```json").removeprefix("```Json").removeprefix("```JSON")
    -- .removeprefix("```").removesuffix("```").strip(): each prefix in turn, not the first found
    for _, p in ipairs{ "```json", "```Json", "```JSON", "```" } do
      if starts_with(v, p) then v = v:sub(#p + 1) end
    end
    if ends_with(v, "```") then v = v:sub(1, -4) end
    return M.json_loads_ok(strip(v))
  end,
}
checkers["detectable_format:multiple_sections"] = {
  args = { section_spliter = "string", num_sections = "int" },
  prepare = function(kw) kw._pattern = literal_pattern(strip(kw.section_spliter), "section_spliter") end,
  -- re.split(r"\s?" + spliter + r"\s?\d+\s?", v) has one part more than the matches: \s any
  -- whitespace (U+00A0 too), \d any decimal digit (full-width ones too)
  check = function(v, kw)
    v = unispace(v)
    local n, at = 0, 1
    while true do
      local a, b = v:find(kw._pattern, at)
      if not a then break end
      local p = b + 1
      if v:find("^%s", p) then p = p + 1 end
      local digits = 0
      while p <= #v do
        local cp, nxt = decode(v, p)
        if not is_digit(cp) then break end
        digits, p = digits + 1, nxt
      end
      if digits > 0 then n, at = n + 1, p else at = a + 1 end
    end
    return n >= kw.num_sections
  end,
}
checkers["detectable_format:number_bullet_lists"] = {
  args = { num_bullets = "int" },
  check = function(v, kw)
    v = unispace(v)  -- ^\s* over any whitespace
    local stars = count_line_marks(v, "*", true)
    return stars + count_line_marks(v, "-") == kw.num_bullets
  end,
}
checkers["detectable_format:number_highlighted_sections"] = {
  args = { num_highlights = "int" },
  check = function(v, kw)
    local n = 0
    for h in v:gmatch("%*[^\n%*]*%*") do
      if strip(rstrip_byte(lstrip_byte(h, 42), 42)) ~= "" then n = n + 1 end
    end
    for h in v:gmatch("%*%*[^\n%*]*%*%*") do
      if strip(h:sub(3, -3)) ~= "" then n = n + 1 end
    end
    return n >= kw.num_highlights
  end,
}
checkers["detectable_format:title"] = {
  args = {},
  check = function(v)
    for line in (v .. "\n"):gmatch("(.-)\n") do
      -- <<[^\n]+>> takes the first << and the last >> of the line (greedy), one character apart at
      -- least
      local a = line:find("<<", 1, true)
      local b
      for p = #line - 1, 1, -1 do
        if line:byte(p) == 62 and line:byte(p + 1) == 62 then b = p; break end
      end
      if a and b and b >= a + 3 then
        local inner = rstrip_byte(lstrip_byte(line:sub(a, b + 1), 60), 62)
        if strip(inner) ~= "" then return true end
      end
    end
    return false
  end,
}
checkers["keywords:existence"] = {
  args = { keywords = "list" },
  prepare = function(kw)
    kw._patterns = {}
    for i, k in ipairs(kw.keywords) do kw._patterns[i] = literal_pattern(lower(k), "keyword") end
  end,
  check = function(v, kw)
    local l = lower(v)
    for _, p in ipairs(kw._patterns) do
      if not l:find(p) then return false end
    end
    return true
  end,
}
checkers["keywords:forbidden_words"] = {
  args = { forbidden_words = "list" },
  prepare = function(kw)
    kw._patterns = {}
    for i, k in ipairs(kw.forbidden_words) do kw._patterns[i] = literal_pattern(lower(k), "forbidden word") end
  end,
  check = function(v, kw)
    local l = lower(v)
    for _, p in ipairs(kw._patterns) do
      if has_bounded(l, p) then return false end
    end
    return true
  end,
}
checkers["keywords:frequency"] = {
  args = { keyword = "string", frequency = "int", relation = "relation" },
  prepare = function(kw) kw._pattern = literal_pattern(lower(strip(kw.keyword)), "keyword") end,
  check = function(v, kw) return compare(count_matches(lower(v), kw._pattern), kw.relation, kw.frequency) end,
}
checkers["keywords:letter_frequency"] = {
  args = { letter = "letter", let_frequency = "int", let_relation = "relation" },
  check = function(v, kw)
    local letter = lower(strip(kw.letter))
    local n = select(2, lower(v):gsub(letter:gsub("%W", "%%%0"), ""))
    return compare(n, kw.let_relation, kw.let_frequency)
  end,
}
checkers["length_constraints:nth_paragraph_first_word"] = {
  args = { num_paragraphs = "int", nth_paragraph = "int", first_word = "string" },
  check = function(v, kw)
    local paragraphs = split_plain(v, "\n\n")
    local n = #paragraphs
    for _, p in ipairs(paragraphs) do if strip(p) == "" then n = n - 1 end end
    if kw.nth_paragraph > n then return false end
    local p = strip(paragraphs[kw.nth_paragraph])
    if p == "" then return false end
    local word = unispace(p):match("^%S+"):gsub("^'+", ""):gsub('^"+', "")  -- p.split()[0]
    local first = word:match("^[^%.,%?!'\"]*")
    return n == kw.num_paragraphs and lower(first) == lower(kw.first_word)
  end,
}
checkers["length_constraints:number_paragraphs"] = {
  args = { num_paragraphs = "int" },
  check = function(v, kw)
    local paragraphs = split_plain(v, "***")
    local n = #paragraphs
    for i, p in ipairs(paragraphs) do
      if strip(p) == "" then
        if i == 1 or i == #paragraphs then n = n - 1 else return false end
      end
    end
    return n == kw.num_paragraphs
  end,
}
checkers["length_constraints:number_sentences"] = {
  args = { num_sentences = "int", relation = "relation" },
  check = function(v, kw) return compare(M.count_sentences(v), kw.relation, kw.num_sentences) end,
}
checkers["length_constraints:number_words"] = {
  args = { num_words = "int", relation = "relation" },
  check = function(v, kw) return compare(M.count_words(v), kw.relation, kw.num_words) end,
}
checkers["punctuation:no_comma"] = {
  args = {}, check = function(v) return not v:find(",", 1, true) end,
}
checkers["startend:end_checker"] = {
  args = { end_phrase = "string" },
  check = function(v, kw)
    local s = rstrip_byte(lstrip_byte(strip(v), 34), 34)  -- strip('"')
    return ends_with(lower(s), lower(strip(kw.end_phrase)))
  end,
}
checkers["startend:quotation"] = {
  args = {},
  check = function(v)
    v = strip(v)
    return #v > 1 and v:sub(1, 1) == '"' and v:sub(-1) == '"'
  end,
}

checkers["language:response_language"] = {
  args = { language = "string" },
  check = function(v, kw)
    local l = M.language(v)
    return l == nil or l == kw.language  -- langdetect finding no letter: followed, as the reference
  end,
}

-- IFEval's instructions this file does not check, and why (none now)
M.unsupported = {}

-- the instruction ids checked, sorted
function M.supported()
  local ids = {}
  for id in pairs(checkers) do ids[#ids + 1] = id end
  table.sort(ids)
  return ids
end

-- ---- instructions and items -------------------------------------------------------------

local function is_null(v) return v == nil or v == lt.json.null end

-- whether t is a list (keys exactly 1..#t; {} counts)
local function is_list(t)
  if type(t) ~= "table" then return false end
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n == #t
end

local function show(v)
  local ok, s = pcall(lt.json.encode, v)
  return ok and s or tostring(v)
end

-- An instruction {id, kwargs, check = function(response) → bool} from an id and its kwargs
-- (null values dropped, as IFEval's HF copy pads every dict with all keys); `where` names
-- the input (file:line) in errors. A kwarg IFEval would draw at random when missing is required.
function M.instruction(id, kwargs, where)
  where = where or "ifeval"
  if type(id) ~= "string" then fail("%s: an instruction id must be a string, got %s", where, type(id)) end
  if M.unsupported[id] then
    fail("%s: instruction '%s' is not supported: %s (read with unsupported = \"drop\" to score the rest)",
         where, id, M.unsupported[id])
  end
  local c = checkers[id]
  if not c then
    fail("%s: unknown IFEval instruction id '%s' (known: %s)", where, id, table.concat(M.supported(), ", "))
  end
  if not is_null(kwargs) and type(kwargs) ~= "table" then
    fail("%s: kwargs of '%s' must be an object, got %s", where, id, type(kwargs))
  end
  local kw = {}
  local keys = {}
  for k in pairs(type(kwargs) == "table" and kwargs or {}) do
    if type(k) ~= "string" then fail("%s: kwargs of '%s' must be an object (name → value), found the key %s", where, id, show(k)) end
    keys[#keys + 1] = k
  end
  table.sort(keys)
  for _, k in ipairs(keys) do
    local v = kwargs[k]
    if not is_null(v) then
      local kind = c.args[k]
      if not kind then
        local known = {}
        for a in pairs(c.args) do known[#known + 1] = a end
        table.sort(known)
        fail("%s: '%s' takes no kwarg '%s' (its kwargs: %s)", where, id, k, #known > 0 and table.concat(known, ", ") or "none")
      end
      local bad
      if kind == "int" then
        bad = not (type(v) == "number" and v == math.floor(v) and v >= 0 and v < 2^53) and "a whole number >= 0"
      elseif kind == "relation" then
        bad = not (v == "less than" or v == "at least") and "'less than' or 'at least'"
      elseif kind == "string" then
        bad = not (type(v) == "string" and strip(v) ~= "") and "a non-empty string"
      elseif kind == "letter" then
        bad = not (type(v) == "string" and count_codepoints(strip(v)) == 1) and "one character"
      elseif kind == "list" then
        local ok = type(v) == "table" and #v > 0
        for i = 1, ok and #v or 0 do ok = ok and type(v[i]) == "string" and v[i] ~= "" end
        bad = not ok and "a non-empty list of non-empty strings"
      end
      if bad then fail("%s: kwarg '%s' of '%s' must be %s, got %s", where, k, id, bad, show(v)) end
      kw[k] = v
    end
  end
  for a in pairs(c.args) do
    if kw[a] == nil then fail("%s: '%s' needs kwarg '%s' (IFEval would draw it at random)", where, id, a) end
  end
  if id == "length_constraints:nth_paragraph_first_word" and kw.nth_paragraph > kw.num_paragraphs then
    fail("%s: '%s': nth_paragraph %d is beyond num_paragraphs %d", where, id, kw.nth_paragraph, kw.num_paragraphs)
  end
  if id == "length_constraints:nth_paragraph_first_word" and kw.nth_paragraph < 1 then
    fail("%s: '%s': nth_paragraph must be >= 1", where, id)
  end
  if c.prepare then
    local ok, err = pcall(c.prepare, kw)
    if not ok then fail("%s: %s: %s", where, id, tostring(err)) end
  end
  local check = c.check
  return { id = id, kwargs = kw, check = function(response) return check(response, kw) == true end }
end

-- M.check(id, kwargs, response) → whether the response follows the instruction (strict)
function M.check(id, kwargs, response)
  return M.instruction(id, kwargs, "ifeval.check").check(response)
end

-- An item from one decoded record; opts.unsupported "drop" leaves unsupported instructions out
-- (item.dropped lists them; an item left with none is nil).
function M.item(rec, where, opts)
  opts = opts or {}
  if type(rec) ~= "table" or rec[1] ~= nil then fail("%s: expected a JSON object", where) end
  for _, k in ipairs{ "key", "prompt", "instruction_id_list", "kwargs" } do
    if is_null(rec[k]) then fail("%s: field '%s' is missing", where, k) end
  end
  if type(rec.key) ~= "number" and type(rec.key) ~= "string" then fail("%s: field 'key' must be a number or string", where) end
  if type(rec.prompt) ~= "string" then fail("%s: field 'prompt' must be a string", where) end
  local ids, kws = rec.instruction_id_list, rec.kwargs
  if not is_list(ids) or #ids == 0 then
    fail("%s: field 'instruction_id_list' must be a non-empty list of ids", where)
  end
  if not is_list(kws) then fail("%s: field 'kwargs' must be a list of objects", where) end
  if #kws ~= #ids then
    fail("%s: kwargs has %d entries for %d instruction ids (they are aligned by position)", where, #kws, #ids)
  end
  local it = { key = rec.key, prompt = rec.prompt, source = where, instructions = {}, dropped = {} }
  for i, id in ipairs(ids) do
    if M.unsupported[id] and opts.unsupported == "drop" then
      it.dropped[#it.dropped + 1] = id
    else
      it.instructions[#it.instructions + 1] = M.instruction(id, kws[i], ("%s: instruction %d"):format(where, i))
    end
  end
  if #it.instructions == 0 then return nil end
  return it
end

-- The items of an IFEval JSONL file ({"key", "prompt", "instruction_id_list", "kwargs"} a
-- line; blank lines skipped), in file order. opts.unsupported: "error" (default) or "drop".
-- Errors name file:line. → items, {dropped instructions = count, prompts_dropped = count}
function M.read(path, opts)
  lt.check_options(opts, "ifeval.read", { "unsupported" })
  opts = opts or {}
  if opts.unsupported ~= nil and opts.unsupported ~= "error" and opts.unsupported ~= "drop" then
    fail("ifeval.read: option unsupported must be \"error\" or \"drop\", got %s", tostring(opts.unsupported))
  end
  if type(path) ~= "string" then fail("ifeval.read: argument 1: expected a file path, got %s", type(path)) end
  if lt.fs.is_dir(path) then fail("ifeval.read: %s is a folder, not an IFEval JSONL file", path) end
  local f, err = io.open(path, "rb")
  if not f then fail("ifeval.read: %s", err) end
  local text = f:read("*a")
  f:close()
  if not text then fail("ifeval.read: %s could not be read", path) end
  local items, seen = {}, {}
  local stats = { instructions_dropped = 0, prompts_dropped = 0 }
  local lineno = 0
  for line in (text .. "\n"):gmatch("(.-)\r?\n") do
    lineno = lineno + 1
    if line:find("%S") then
      local where = ("%s:%d"):format(path, lineno)
      local ok, rec = pcall(lt.json.decode, line)
      if not ok then fail("%s: not JSON: %s", where, tostring(rec)) end
      local it = M.item(rec, where, opts)
      local key = tostring(rec.key)
      if seen[key] then fail("%s: key %s repeats the item of %s", where, key, seen[key]) end
      seen[key] = where
      local dropped = it and #it.dropped or #rec.instruction_id_list
      stats.instructions_dropped = stats.instructions_dropped + dropped
      if it then items[#items + 1] = it else stats.prompts_dropped = stats.prompts_dropped + 1 end
    end
  end
  if #items == 0 then fail("ifeval.read: %s holds no items", path) end
  return items, stats
end

-- ---- scoring ----------------------------------------------------------------------------

-- the loose variants of a response (IFEval's test_instruction_following_loose)
local function loose_variants(r)
  local lines = split_plain(r, "\n")
  local function join(a, b)
    local t = {}
    for i = a, b do t[#t + 1] = lines[i] end
    return strip(table.concat(t, "\n"))
  end
  local first, last, both = join(2, #lines), join(1, #lines - 1), join(2, #lines - 1)
  local function nostar(s) return (s:gsub("%*", "")) end
  return { r, nostar(r), first, last, both, nostar(first), nostar(last), nostar(both) }
end

-- {strict = {bool per instruction}, loose = {...}} for one item's response
function M.follow(item, response)
  if type(response) ~= "string" then fail("ifeval: the response to item %s is a %s, not a string", tostring(item.key), type(response)) end
  local variants = loose_variants(response)
  local strict, loose = {}, {}
  for i, ins in ipairs(item.instructions) do
    strict[i] = strip(response) ~= "" and ins.check(response)
    loose[i] = false
    for _, v in ipairs(variants) do
      if strip(v) ~= "" and ins.check(v) then loose[i] = true; break end
    end
  end
  return { strict = strict, loose = loose }
end

local function new_tally() return { prompt_correct = 0, instruction_correct = 0, by_category = {}, by_instruction = {} } end

local function add(t, key, ok)
  t[key] = t[key] or { n = 0, correct = 0 }
  t[key].n = t[key].n + 1
  if ok then t[key].correct = t[key].correct + 1 end
end

-- The response of each item (responses: a function(item) → text, or a table by key — a number
-- or its string — or by prompt) scored. → {strict = {prompt_acc, instruction_acc,
-- prompt_correct, instruction_correct, by_category = {cat = acc}, by_instruction = {id = acc}},
-- loose = {...}, prompts, instructions, items = {{key, response, strict = {...}, loose = {...}}}}
function M.score(responses, items)
  if type(responses) ~= "function" and type(responses) ~= "table" then
    fail("ifeval.score: argument 1: expected responses by key or a function(item), got %s", type(responses))
  end
  if type(items) ~= "table" or #items == 0 then fail("ifeval.score: argument 2: expected a non-empty list of items (ifeval.read)") end
  local res = { strict = new_tally(), loose = new_tally(), prompts = #items, instructions = 0, items = {} }
  for _, it in ipairs(items) do
    local r
    if type(responses) == "function" then
      r = responses(it)
    else
      r = responses[it.key]
      if r == nil then r = responses[tostring(it.key)] end
      if r == nil then r = responses[it.prompt] end
    end
    if r == nil then fail("ifeval.score: no response to item %s (%s)", tostring(it.key), it.source or "?") end
    local f = M.follow(it, r)
    res.items[#res.items + 1] = { key = it.key, response = r, strict = f.strict, loose = f.loose }
    res.instructions = res.instructions + #it.instructions
    for _, mode in ipairs{ "strict", "loose" } do
      local t, all = res[mode], true
      for i, ins in ipairs(it.instructions) do
        local ok = f[mode][i]
        all = all and ok
        if ok then t.instruction_correct = t.instruction_correct + 1 end
        add(t.by_category, ins.id:match("^[^:]*"), ok)
        add(t.by_instruction, ins.id, ok)
      end
      if all then t.prompt_correct = t.prompt_correct + 1 end
    end
  end
  for _, mode in ipairs{ "strict", "loose" } do
    local t = res[mode]
    t.prompt_acc = t.prompt_correct / res.prompts
    t.instruction_acc = t.instruction_correct / res.instructions
    for _, by in ipairs{ "by_category", "by_instruction" } do
      for k, c in pairs(t[by]) do t[by][k] = c.correct / c.n end
    end
  end
  return res
end

-- Generate a response per item with model m (greedy unless temperature is given) and score
-- them (M.score); the four accuracies are logged to the current run as
-- BENCH/{strict,loose}/{prompt,instruction}_acc. opts: template ("{prompt}": the text around
-- the prompt; a chat model's: lt.rl.chat_prompt("{prompt}", DIR .. "/tokenizer_config.json")),
-- max_new_tokens (default 512), batch_size (default 16),
-- temperature, bench (default "ifeval"), log (default true).
function M.evaluate(m, items, opts)
  lt.check_options(opts, "ifeval.evaluate", { "template", "max_new_tokens", "batch_size", "temperature", "bench", "log" })
  opts = opts or {}
  local template = opts.template or "{prompt}"
  if type(template) ~= "string" or not template:find("{prompt}", 1, true) then
    fail("ifeval.evaluate: option template must be a string holding {prompt}, got %s", tostring(template))
  end
  local bs = opts.batch_size or 16
  if type(bs) ~= "number" or bs < 1 or bs % 1 ~= 0 then fail("ifeval.evaluate: option batch_size must be a positive integer") end
  if type(items) ~= "table" or #items == 0 then fail("ifeval.evaluate: argument 2: expected a non-empty list of items (ifeval.read)") end
  local g = { max_new_tokens = opts.max_new_tokens or 512, temperature = opts.temperature or 0 }
  local by_key = {}
  for first = 1, #items, bs do
    local prompts, keys = {}, {}
    for i = first, math.min(first + bs - 1, #items) do
      -- a function replacement: a prompt holding "%1" must stay as it is
      prompts[#prompts + 1] = template:gsub("{prompt}", function() return items[i].prompt end)
      keys[#keys + 1] = items[i].key
    end
    local outs = m:generate(prompts, g)
    for k, key in ipairs(keys) do by_key[tostring(key)] = outs[k] end
  end
  local res = M.score(by_key, items)
  if opts.log ~= false then
    local bench = opts.bench or "ifeval"
    for _, mode in ipairs{ "strict", "loose" } do
      lt.run.log(("%s/%s/prompt_acc"):format(bench, mode), res[mode].prompt_acc)
      lt.run.log(("%s/%s/instruction_acc"):format(bench, mode), res[mode].instruction_acc)
    end
  end
  return res
end

return M
