-- tests/lua/diag_tasks.lua: lt.tasks (WordNet / TSV / JSONL sources, prompts, span → token
-- positions on tricky text, groups) and lt.report.svg, on the fixtures in tests/data/diag.
local T = require "lt.test"
local tasks = require "lt.tasks"
local svg = require "lt.report.svg"
local data = debug.getinfo(1, "S").source:match("^@(.*)/lua/[^/]*$") .. "/data/diag"
local tmp = os.getenv("LTRUN_TEST_TMP") .. "/lua_diag_tasks"
os.execute("rm -rf '" .. tmp .. "' && mkdir -p '" .. tmp .. "'")

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
  return path
end


T.case("WordNet data file: antonym pointers, markers, filters, file order", function()
  -- "large big" has two antonym pointers, 0202 (big → little) listed before 0101 (large → small)
  T.same_table(tasks.wordnet_pairs(data .. "/data.adj"),
               { { "good", "bad" }, { "hot", "cold" }, { "big", "little" }, { "large", "small" }, { "wet", "dry" } })
  local all = tasks.wordnet_pairs(data .. "/data.adj", { plain = false })
  T.same_table(all[6], { "Northern", "Southern" })
  T.same_table(all[7], { "up to date", "out of date" })  -- "(a)" dropped, "_" → space
  T.eq(#all, 7)
end)

T.case("WordNet errors name the file and line", function()
  local bad = write(tmp .. "/data.adj", "  1 licence line\n00000001 00 a 01 hot 0 001 ! 00000009 a 0101 | x\n")
  T.raises(function() tasks.wordnet_pairs(bad) end, "data.adj:2: antonym pointer to synset 00000009")
  bad = write(tmp .. "/data.adj", "00000001 00 a zz hot 0 000 | x\n")
  T.raises(function() tasks.wordnet_pairs(bad) end, "data.adj:1: bad word count")
  bad = write(tmp .. "/data.adj", "00000001 00 a 01 hot 0 002 ! 00000001 a 0101 | x\n")
  T.raises(function() tasks.wordnet_pairs(bad) end, "data.adj:1: bad pointer count")
  T.raises(function() tasks.wordnet_pairs(tmp .. "/none.adj") end, "none.adj")
end)

T.case("the installed WordNet (wordnet-base)", function()
  local f = io.open(tasks.wordnet_dir .. "/data.adj")
  if not f then return print("skipped: no " .. tasks.wordnet_dir) end
  f:close()
  local pairs_ = tasks.wordnet_pairs(tasks.wordnet_dir .. "/data.adj")
  T.ok(#pairs_ > 1000, "thousands of adjective antonym pairs, got " .. #pairs_)
  local found = false
  for _, p in ipairs(pairs_) do found = found or (p[1] == "hot" and p[2] == "cold") end
  T.ok(found, "hot/cold")
end)

T.case("AntSynNET TSV and JSONL", function()
  T.same_table(tasks.tsv_pairs(data .. "/antsyn.tsv"),
               { { "hot", "cold" }, { "big", "small" }, { "wet", "dry" }, { "early", "late" } })
  T.raises(function() tasks.tsv_pairs(data .. "/bad.tsv") end, "bad.tsv:1: expected word1<TAB>word2<TAB>label")
  local items = tasks.jsonl_items(data .. "/items.jsonl")
  T.eq(#items, 3)
  T.eq(items[1].target, "Dry"); T.eq(items[2].target, nil); T.eq(items[3].query, " Query:up->")
  T.raises(function() tasks.jsonl_items(data .. "/bad.jsonl") end, "bad.jsonl:1: expected an object")
  T.eq(#tasks.load(data .. "/items.jsonl", { n = 2 }), 2)
  T.raises(function() tasks.load("x.csv") end, "unknown source 'x.csv'")
end)

T.case("antonym prompts in the paper's format, reproducible from a seed", function()
  local pairs_ = tasks.tsv_pairs(data .. "/antsyn.tsv")
  local items = tasks.antonym_items(pairs_, { n = 6, examples = 2, seed = 3 })
  T.eq(#items, 6)
  for _, it in ipairs(items) do
    T.ok(it.context:match("^Example:%l+%->%u%l*, %l+%->%u%l*;$"), it.context)
    T.eq(it.query, " Query:" .. it.pair[1] .. "->")
    T.eq(it.target, it.pair[2]:gsub("^%l", string.upper))
    T.ok(not it.context:find(it.pair[1] .. "->", 1, true) and not it.context:find(">" .. it.target, 1, true),
         "the query pair is not an example")
  end
  T.same_table(tasks.antonym_items(pairs_, { n = 6, seed = 3 }), items)
  T.ok(lt.json.encode(tasks.antonym_items(pairs_, { n = 6, seed = 4 })) ~= lt.json.encode(items), "another seed")
  T.raises(function() tasks.antonym_items({ { "a", "b" } }, { examples = 2 }) end, "too few")
end)

T.case("token sets: straddling tokens are query tokens, empty spans neither", function()
  -- text "ab;; Qc->": context bytes 1..4, query 5..9
  local spans = { { 1, 0 }, { 1, 2 }, { 3, 4 }, { 4, 6 }, { 7, 7 }, { 8, 9 } }
  local c, q = tasks.token_sets(spans, 1, 4, 5, 9)
  T.same_table(c, { 1, 2 })
  T.same_table(q, { 3, 4, 5 })
end)

local info = lt.model.new{ out = tmp .. "/m", arch = "qwen3", layers = 2, hidden = 32, heads = 4,
                           kv_heads = 2, vocab = 300, seed = 5 }
local tok = lt.tokenizer.load(info.dir)

T.case("span → token positions on tricky text", function()
  local tricky = {
    { context = "Example:hot->Cold, big->Small;", query = " Query:cold->" },
    { context = "Example:naïve->Worldly, 東京->Kyoto, 👍->👎;", query = " Query:café->" },
    { context = "Example:東", query = "京->" },  -- the boundary inside one pre-token
    { context = "Example:a->B; ", query = "Query:c->" },  -- the space joins the query's word
    { context = "  \n\t", query = "\n\nx" },
  }
  for _, it in ipairs(tricky) do
    local s = tasks.encode(tok, it)
    local _, spans = tok:encode_with_offsets(s.prompt)
    T.eq(s.prompt, it.context .. it.query)
    T.eq(#s.context + #s.query, #s.ids, "every token is context or query: " .. s.prompt)
    local ctext, qtext = {}, {}
    for _, i in ipairs(s.context) do ctext[#ctext + 1] = s.prompt:sub(spans[i + 1][1], spans[i + 1][2]) end
    for _, i in ipairs(s.query) do qtext[#qtext + 1] = s.prompt:sub(spans[i + 1][1], spans[i + 1][2]) end
    ctext, qtext = table.concat(ctext), table.concat(qtext)
    -- the context tokens hold only context bytes, the query tokens all query bytes
    T.eq(ctext .. qtext, s.prompt, "tokens in order")
    T.ok(#ctext <= #it.context and it.context:sub(1, #ctext) == ctext, "context tokens: " .. ctext)
    T.eq(qtext:sub(-#it.query), it.query, "query tokens cover the query")
    for k = 2, #s.context do T.eq(s.context[k], s.context[k - 1] + 1) end
    if #s.context > 0 and #s.query > 0 then T.eq(s.query[1], s.context[#s.context] + 1) end
  end
  -- a clean boundary maps exactly
  local s = tasks.encode(tok, tricky[2])
  local _, spans = tok:encode_with_offsets(s.prompt)
  T.eq(spans[s.context[#s.context] + 1][2], #tricky[2].context)
  T.eq(spans[s.query[1] + 1][1], #tricky[2].context + 1)
end)

T.case("build: groups split evenly, given targets", function()
  local items = tasks.antonym_items(tasks.tsv_pairs(data .. "/antsyn.tsv"), { n = 10, examples = 1 })
  local samples = tasks.build(tok, items, { groups = 3 })
  local sizes = {}
  for _, s in ipairs(samples) do sizes[s.group] = (sizes[s.group] or 0) + 1 end
  T.same_table(sizes, { 4, 3, 3 })
  T.eq(samples[1].target, nil)
  local given = tasks.build(tok, items, { groups = 1, target = "given" })
  T.eq(given[1].target, tok:encode(items[1].target, { special = false })[1])
  T.raises(function() tasks.build(tok, items, { groups = 11 }) end, "11 groups for 10 items")
  T.raises(function() tasks.build(tok, { { context = "a", query = "b" } }, { target = "given" }) end,
           "item 1 has no target")
end)

T.case("svg: heatmap and profile", function()
  local path = svg.heatmap(tmp .. "/h.svg", {
    title = "a <title> & more", rows = { "1", "2" }, cols = { "0", "1", "2" },
    panels = { { title = "Ratio", ramp = "greens", values = { { 0, 1, 2 }, { 3, 4, 5 } } },
               { title = "dJS", ramp = "reds", values = { { 1, 1, 1 }, { 1, 1, 1 } } } } })
  local s = T.read(path)
  T.ok(s:match("^<svg ") and s:match("</svg>\n$"), "an SVG document")
  T.ok(s:find("a &lt;title&gt; &amp; more", 1, true), "text escaped")
  local _, cells = s:gsub("<rect [^>]*><title>", "")
  T.eq(cells, 12)
  T.ok(s:find('fill="#00441b"><title>2, 2: 5</title>', 1, true), "the maximum is the darkest green")
  T.ok(s:find('fill="#f7fcf5"><title>1, 0: 0</title>', 1, true), "the minimum is white")
  T.eq(svg.colour("reds", 1), "#67000d")
  -- a missing value is undefined, not an error: a grey n/a cell (the final block's ΔJS)
  local x = T.read(svg.heatmap(tmp .. "/x.svg", { rows = { "1" }, cols = { "0", "1" }, panels = { { values = { { 1 } } } } }))
  T.ok(x:find('fill="#e8e8e8" stroke="white"><title>1, 1: n/a</title>', 1, true), "n/a cell")
  T.raises(function()
             svg.heatmap(tmp .. "/x.svg", { rows = { "1", "2" }, cols = { "0" }, panels = { { values = { { 1 } } } } })
           end,
           "panel 1 has no row 2")
  s = T.read(svg.profile(tmp .. "/p.svg", {
    x = { "0", "1", "2", "3" }, ymin = 0, ymax = 1, mark = { at = 1.5, label = "b = 2" },
    series = { { name = "TP", values = { 0, 0.2, 1, 0.8 } }, { name = "LS", values = { 1, 0.5, 0, 0 } } } }))
  local _, lines = s:gsub("<polyline", "")
  T.eq(lines, 2)
  T.ok(s:find("stroke-dasharray", 1, true) and s:find("b = 2", 1, true), "the split is marked")
  T.raises(function() svg.profile("/nonexistent/dir/p.svg", { x = { "0" }, series = {} }) end, "cannot write")
end)

T.finish()
