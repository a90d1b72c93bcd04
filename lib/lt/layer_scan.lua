-- lt/layer_scan.lua: the numbers of a layer-contribution scan (*Is One Layer Enough?*), apart
-- from how the trainings ran: contributions, the ranking, the Table-7-like summary, and the
-- scan's runs read back from the store (so the analysis also runs on a merged DB).
--
--   C_l = (S_l − S_base) / (S_full − S_base)
-- S is a score where higher is better (the mean accuracy over the benchmarks). C_l = 1: layer
-- l alone does as well as training every layer; 0: no better than the base. When
-- |S_full − S_base| < min_gap, full training did not move the score and no C is defined.
local M = {}

-- contributions(scores, s_base, s_full[, min_gap]) → C (C[l] for each l in scores) or nil,
-- and a reason when C is undefined. scores: {[layer] = S_l}.
function M.contributions(scores, s_base, s_full, min_gap)
  min_gap = min_gap or 1e-9
  assert(type(scores) == "table", "layer_scan.contributions: argument 1: expected {[layer] = score}")
  assert(type(s_base) == "number" and type(s_full) == "number", "layer_scan.contributions: S_base and S_full must be numbers")
  local gap = s_full - s_base
  if gap == 0 or math.abs(gap) < min_gap then
    return nil, ("S_full − S_base = %.4g − %.4g = %.3g is below %.3g: full training did not change the score, "
                 .. "so C_l = (S_l − S_base)/(S_full − S_base) is undefined"):format(s_full, s_base, gap, min_gap)
  end
  local c = {}
  for l, s in pairs(scores) do c[l] = (s - s_base) / gap + 0 end  -- + 0: no "-0"
  return c
end

-- The layers sorted by C, best first (ties: lower layer first).
function M.ranking(c)
  local layers = {}
  for l in pairs(c) do layers[#layers + 1] = l end
  table.sort(layers, function(a, b)
    if c[a] ~= c[b] then return c[a] > c[b] end
    return a < b
  end)
  return layers
end

-- Which third of an n-block stack layer l lies in: 0 (shallow), 1 (middle), 2 (deep), as
-- floor(3 l / n); for 28 blocks the middle third is layers 10..18.
function M.third(l, n) return math.floor(3 * l / n) end

-- Table 7 of the paper: best and worst C with their layers, the number of layers with C ≥ 1,
-- the top-k layers and the share of them in the middle third.
function M.summary(c, n_layers, k)
  local rank = M.ranking(c)
  assert(#rank > 0, "layer_scan.summary: no contributions")
  k = math.min(k or 3, #rank)
  local s = { best = rank[1], best_c = c[rank[1]], worst = rank[#rank], worst_c = c[rank[#rank]],
              n_ge_1 = 0, n = #rank, top = {}, k = k, middle = 0 }
  for _, l in ipairs(rank) do if c[l] >= 1 then s.n_ge_1 = s.n_ge_1 + 1 end end
  for i = 1, k do
    s.top[i] = rank[i]
    if M.third(rank[i], n_layers) == 1 then s.middle = s.middle + 1 end
  end
  s.middle_share = s.middle / k
  return s
end

-- The runs of a scan in the store: the latest `ok` run of each job carrying param
-- scan_key = key (jobs "base", "full", "layer_<l>"), with its metric `score` and the
-- per-benchmark `score/<bench>`. → {base = {run, score, by_bench}, full = ..., layers =
-- {[l] = ...}}, missing = {job names with no ok run, of `expected` when given}.
function M.gather(key, expected)
  local rows = lt.run.query([[
    SELECT r.id, r.name, m.name AS metric, m.value FROM runs r
      JOIN params p ON p.run_id = r.id AND p.key = 'scan_key' AND p.value = ?
      JOIN metrics m ON m.run_id = r.id AND (m.name = 'score' OR m.name LIKE 'score/%')
     WHERE r.status = 'ok'
       AND r.id = (SELECT max(r2.id) FROM runs r2 JOIN params p2 ON p2.run_id = r2.id
                    AND p2.key = 'scan_key' AND p2.value = p.value
                    WHERE r2.name = r.name AND r2.status = 'ok')
     ORDER BY r.id, m.step]], key)
  local out = { layers = {} }
  for _, r in ipairs(rows) do
    local entry
    local l = r.name:match("^layer_(%d+)$")
    if l then
      out.layers[tonumber(l)] = out.layers[tonumber(l)] or { run = r.id, by_bench = {} }
      entry = out.layers[tonumber(l)]
    elseif r.name == "base" or r.name == "full" then
      out[r.name] = out[r.name] or { run = r.id, by_bench = {} }
      entry = out[r.name]
    end
    if entry then
      if r.metric == "score" then entry.score = r.value
      else entry.by_bench[r.metric:sub(7)] = r.value end
    end
  end
  out.missing = {}
  for _, job in ipairs(expected or {}) do
    local l = job:match("^layer_(%d+)$")
    local have = l and out.layers[tonumber(l)] or (not l and out[job])
    if not (have and have.score) then out.missing[#out.missing + 1] = job end
  end
  return out
end

-- "all" | "0,3,5" | "10-15" | "0,4-6" → sorted list of block numbers in 0..n-1
function M.parse_layers(spec, n)
  spec = tostring(spec)
  local out, seen = {}, {}
  local function add(l)
    if l < 0 or l >= n then error(("--layers=%s: layer %d is outside 0..%d"):format(spec, l, n - 1), 0) end
    if not seen[l] then seen[l] = true; out[#out + 1] = l end
  end
  if spec == "all" then
    for l = 0, n - 1 do add(l) end
    return out
  end
  for part in spec:gmatch("[^,]+") do
    local a, b = part:match("^%s*(%d+)%s*%-%s*(%d+)%s*$")
    if a then
      if tonumber(a) > tonumber(b) then error(("--layers=%s: range %s is backwards"):format(spec, part), 0) end
      for l = tonumber(a), tonumber(b) do add(l) end
    elseif part:match("^%s*%d+%s*$") then
      add(tonumber(part))
    else
      error(("--layers=%s: expected all, or numbers and ranges like 0,3,10-15"):format(spec), 0)
    end
  end
  table.sort(out)
  return out
end

-- mean and sample standard deviation (n − 1) of a list; std 0 for one value
function M.mean_std(xs)
  local n, s = #xs, 0
  assert(n > 0, "mean_std: empty list")
  for _, x in ipairs(xs) do s = s + x end
  local mean, v = s / n, 0
  for _, x in ipairs(xs) do v = v + (x - mean) ^ 2 end
  return mean, n > 1 and math.sqrt(v / (n - 1)) or 0
end

return M
