-- lt/layer_tracer.lua: the pictures and the per-sample file of a LayerTracer study, from the
-- result of lt.diag.trace: a heatmap like the paper's Figure 4 (rows = task groups, columns
-- = layers; Ratio in greens, ΔJS in reds), the normalised TP and LS profiles with the split
-- marked (Figure 10), and every sample's series as JSON. Each returns the path it wrote.
local svg = require "lt.svg"
local M = {}

local function layer_labels(n)
  local t = {}
  for l = 1, n do t[l] = tostring(l - 1) end
  return t
end

function M.heatmap(r, path, title)
  local rows, ratio, djs = {}, {}, {}
  for i, g in ipairs(r.groups) do rows[i], ratio[i], djs[i] = tostring(g.group), g.tp_ratio, g.ls_djs end
  return svg.heatmap(path, { title = title or "LayerTracer", rows = rows, cols = layer_labels(r.n_layers),
    row_title = "group", col_title = "layer (block)",
    panels = { { title = "Task Particle: Ratio", ramp = "greens", values = ratio },
               { title = "Layer-wise Sensitivity: ΔJS", ramp = "reds", values = djs } } })
end

function M.profile(r, path, title)
  return svg.profile(path, { title = title or "Normalised TP and LS (min-max over layers)",
    x = layer_labels(r.n_layers), x_title = "layer (block)", ymin = 0, ymax = 1,
    series = { { name = "TP", values = r.tp }, { name = "LS", values = r.ls } },
    mark = r.split and { at = r.split.b - 0.5, label = ("split b = %d"):format(r.split.b) } })
end

-- JSON array per sample: residual series as arrays whose JSON index is the residual (0 =
-- embeddings, l+1 = after block l); block series indexed by block; the prompt, its context
-- positions and the top lens tokens (decoded when a tokenizer is given).
function M.write_samples(r, samples, path, tok)
  local function residual(t)
    local a = {}
    for k = 0, r.n_layers do a[k + 1] = t[k] end
    return a
  end
  local out = {}
  for i, s in ipairs(r.samples) do
    local top = {}
    for k = 0, r.n_layers do
      top[k + 1] = { ids = s.top[k].ids, probs = s.top[k].probs }
      if tok then
        top[k + 1].tokens = {}
        for j, id in ipairs(s.top[k].ids) do top[k + 1].tokens[j] = tok:decode({ id }) end
      end
    end
    out[i] = { prompt = samples[i].prompt, context = samples[i].context, group = s.group,
               target = s.target, target_token = tok and tok:decode({ s.target }) or nil,
               p_target = residual(s.p_target), js = residual(s.js), tp_ratio = s.tp_ratio,
               ls_djs = s.ls_djs, tp_interval = s.tp_interval, top = top }
  end
  local f, err = io.open(path, "w")
  if not f then error(("layer_tracer: cannot write %s: %s"):format(path, err), 0) end
  f:write(lt.json.encode(out), "\n")
  f:close()
  return path
end

return M
