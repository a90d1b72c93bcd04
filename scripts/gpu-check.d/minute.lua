-- scripts/gpu-check.d/minute.lua: `scripts/gpu-check --smoke`, the GPU code paths that have
-- never run on a GPU, in under a minute: one line per check, stopping at the first failure
-- (the script then fails). Checks, on the session device (--device):
--   device       a CUDA device is there (the --device cpu form says it checks the CPU);
--   greedy ARCH  tiny fp32 models (Qwen3; Nemotron-H M*-M; Qwen3.5 LLA), 7 prompts of mixed
--                lengths, cache = "static", max_rows = 4, sync_every = 2, a stop id (rows end at
--                different steps: buckets shrink, waiting rows refill): the same tokens as
--                cache = "dynamic" and as LTRUN_STATIC_GRAPHS=0; on CUDA graphs > 0 and
--                replays > 0 with no failed capture (on the CPU: no graphs);
--   sampled ARCH seeded sampling with log-probs (lt.rl.rollout), static against dynamic;
--   memory       three static generate calls in a row, then an eager op: the CUDA memory held
--                in tensors does not grow (the CPU form checks the calls repeat their tokens);
--   master       a bf16 model trains two steps with master_weights = true: finite losses, the
--                weights move, and the same update as on the CPU within bf16 rounding;
--   trace        lt.model.trace{device = true} of a static decode has device events (CUDA).
-- Tokens may differ only at a near tie of two logits (the paths sum in other orders): a
-- differing row passes when every token of both is within 1e-3 of a full pass's best logit.
local exp = require "lt.study"
local ffi = require "ffi"
ffi.cdef "int setenv(const char *name, const char *value, int overwrite); int unsetenv(const char *name);"
local dev = tostring(lt.device)
local cuda = dev:match("^cuda") ~= nil
local t_all = os.time()

-- check(name, fn): runs fn (returning a detail string), prints one line; the first failure
-- prints its message and stops the script
local function check(name, fn)
  local t0 = lt.clock()
  local ok, res = xpcall(fn, debug.traceback)
  local secs = lt.clock() - t0
  if not ok then
    print(("smoke: %-22s FAILED (%.1fs): %s"):format(name, secs, tostring(res):match("[^\n]*")))
    io.stderr:write(tostring(res), "\n")
    error(("smoke: %s failed"):format(name), 0)
  end
  print(("smoke: %-22s ok (%.1fs)%s"):format(name, secs, res and ("  " .. res) or ""))
end

local function fail(fmt, ...) error(fmt:format(...), 2) end

local function without_graphs(fn)
  local was = os.getenv("LTRUN_STATIC_GRAPHS")
  ffi.C.setenv("LTRUN_STATIC_GRAPHS", "0", 1)
  local ok, a, b, c = pcall(fn)
  if was then ffi.C.setenv("LTRUN_STATIC_GRAPHS", was, 1) else ffi.C.unsetenv("LTRUN_STATIC_GRAPHS") end
  if not ok then error(a, 0) end
  return a, b, c
end

-- every token of `got` within tol of the largest logit of a full pass over the prefix
local function greedy_ok(m, prompt, got, tol)
  local seq = {}
  for i, v in ipairs(prompt) do seq[i] = v end
  for _, t in ipairs(got) do
    local logits = lt.no_grad(function() return m:forward(seq, { logits = "last" }).logits[0][-1]:float() end)
    if logits:max() - logits[t] > tol then return false end
    seq[#seq + 1] = t
  end
  return true
end

-- rows a and b equal, or each a greedy continuation up to a near tie
local function same_rows(m, prompts, a, b, what)
  local ties = 0
  for r = 1, #prompts do
    if lt.json.encode(a[r]) ~= lt.json.encode(b[r]) then
      if not (greedy_ok(m, prompts[r], a[r], 1e-3) and greedy_ok(m, prompts[r], b[r], 1e-3)) then
        fail("%s: row %d differs: %s against %s", what, r, lt.json.encode(a[r]), lt.json.encode(b[r]))
      end
      ties = ties + 1
    end
  end
  return ties
end

check("device", function()
  if not cuda then return "cpu (the --device cpu form: the CUDA-only parts check their CPU counterparts)" end
  if not lt.cuda_available() then fail("--device %s, but this ltrun sees no usable CUDA device", dev) end
  return dev
end)

-- the tiny models: random weights scaled up (decisive logits: few near ties); the first one's
-- tokenizer (trained: the slow part) serves the others
local specs = {
  { name = "qwen3", spec = { arch = "qwen3", layers = 2, hidden = 64, heads = 4, kv_heads = 2, vocab = 512, seed = 1 } },
  { name = "nemotron_h", spec = { arch = "nemotron_h", pattern = "M*-M", layers = 4, hidden = 64, heads = 4,
                                  kv_heads = 2, seed = 2 } },
  { name = "qwen3_5", spec = { arch = "qwen3_5_text", pattern = "LLA", layers = 3, hidden = 64, heads = 4,
                               kv_heads = 2, seed = 3 } },
}
local cleanups, models = {}, {}
for i, s in ipairs(specs) do
  if i > 1 then s.spec.tokenizer = models[1].path .. "/tokenizer.json" end
  local path, cleanup = exp.temp_model(s.spec)
  cleanups[#cleanups + 1] = cleanup
  local m = lt.model.load(path)
  lt.no_grad(function()
    for name, t in pairs(m:parameters()) do
      if name:match("proj%.weight$") or name:match("embed_tokens%.weight$") then t:mul_(6) end
    end
  end)
  models[#models + 1] = { name = s.name, m = m, path = path }
end

-- 7 prompts of mixed lengths
local lengths = { 1, 3, 7, 2, 12, 5, 9 }
local prompts = {}
for i, n in ipairs(lengths) do
  local row = {}
  for j = 1, n do row[j] = (37 * i + 11 * j) % 500 end
  prompts[i] = row
end

for _, x in ipairs(models) do
  local m = x.m
  check("greedy " .. x.name, function()
    local base = { max_new_tokens = 12, max_rows = 4 }
    local function opts(cache, stop)
      local o = { cache = cache, sync_every = 2, stop_ids = stop }
      for k, v in pairs(base) do o[k] = v end
      return o
    end
    -- a stop id some rows sample early: the dynamic path's row 3, token 4
    local probe = m:generate(prompts, opts("dynamic", {}))
    local stop = { probe[3][4] }
    local dyn = m:generate(prompts, opts("dynamic", stop))
    local stat, _, st = m:generate(prompts, opts("static", stop))
    local eager, _, est = without_graphs(function() return m:generate(prompts, opts("static", stop)) end)
    local ties = same_rows(m, prompts, stat, dyn, "static against dynamic")
    ties = ties + same_rows(m, prompts, stat, eager, "static against LTRUN_STATIC_GRAPHS=0")
    if st.refilled_rows == 0 then fail("no row refilled (max_rows 4, 7 prompts)") end
    if st.fallbacks ~= 0 then fail("%d CUDA graph captures failed (see the warning above)", st.fallbacks) end
    if est.graphs ~= 0 or est.replays ~= 0 then fail("LTRUN_STATIC_GRAPHS=0 still replayed graphs") end
    if cuda and (st.graphs == 0 or st.replays == 0) then
      fail("graphs %d, replays %d: the static steps did not run as CUDA graphs (a build without "
           .. "LTRUN_WITH_CUDA_KERNELS?)", st.graphs, st.replays)
    end
    if not cuda and (st.graphs ~= 0 or st.replays ~= 0) then fail("CUDA graphs on the CPU") end
    return ("graphs %d, replays %d, decode steps %d, refilled %d, near ties %d"):format(st.graphs, st.replays,
           st.decode_steps, st.refilled_rows, ties)
  end)
  check("sampled " .. x.name, function()
    local function roll(cache)
      return lt.rl.rollout(m, prompts, { group_size = 2, max_response = 10, temperature = 0.8, seed = 5,
                                         cache = cache, max_rows = 4, sync_every = 2, stop_ids = {} })
    end
    local d, s = roll("dynamic"), roll("static")
    for r = 1, #d.responses do
      if lt.json.encode(d.responses[r]) ~= lt.json.encode(s.responses[r]) then
        fail("row %d: static %s, dynamic %s", r, lt.json.encode(s.responses[r]), lt.json.encode(d.responses[r]))
      end
    end
    -- fp32 log-probs of the same tokens through other batch shapes: ~1e-5 apart
    local diff = ((d.logprobs - s.logprobs) * d.response_mask):abs():max()
    if not (diff < 1e-3) then fail("log-probs differ by %.3g", diff) end
    if cuda and s.replays == 0 then fail("the static rollout replayed no CUDA graph") end
    return ("%d rows, log-probs within %.2g, replays %d"):format(#d.responses, diff, s.replays)
  end)
end

local m = models[1].m
check("memory", function()
  local o = { max_new_tokens = 8, cache = "static", max_rows = 4, sync_every = 2, stop_ids = {} }
  local first = m:generate(prompts, o)  -- warm-up: workspaces, the capture stream
  local before = lt.model.device_memory(dev)
  for i = 1, 3 do
    local again = m:generate(prompts, o)
    if lt.json.encode(again) ~= lt.json.encode(first) then fail("call %d gave other tokens", i + 1) end
  end
  lt.no_grad(function() return m:forward(prompts[5]).logits:sum() end)  -- an eager op after the graphs
  local after = lt.model.device_memory(dev)
  if not cuda then return "cpu: three calls, the same tokens (device memory not measured)" end
  if not before then fail("lt.model.device_memory gave nothing on %s", dev) end
  -- the caching allocator's bytes in live tensors: the calls leave none (1 MiB for its rounding)
  if after - before > 2 ^ 20 then fail("CUDA memory grew by %d bytes over three calls", after - before) end
  return ("CUDA memory in tensors %d -> %d bytes"):format(before, after)
end)

check("master", function()
  local data = lt.randint(0, 500, { 8, 33 })
  local function train(device)
    local t = lt.model.load(models[1].path, { dtype = "bfloat16", device = device })
    t:train_only("all")
    local name = "model.layers.1.mlp.down_proj.weight"
    local w0 = t:parameters()[name]:float():to("cpu")
    local r = lt.train.causal_lm(t, { data = data, seq_len = 32, steps = 2, lr = 1e-3, micro_batch = 4, seed = 1,
                                      master_weights = true, log = false, progress = false })
    local w1 = t:parameters()[name]:float():to("cpu")
    t:free()
    return r, w0, w1
  end
  local r, w0, w1 = train(dev)
  for i, l in ipairs(r.losses) do
    if not (l == l and l < math.huge) then fail("loss %s at step %d", tostring(l), i) end
  end
  local moved = (w1 - w0):abs():mean():item()
  if not (moved > 0) then fail("the weights did not move") end
  local _, _, c1 = train("cpu")
  -- Adam moves each weight by about lr; the device's and the CPU's bf16 rounding may differ
  -- in a few elements: on average well under a tenth of the update
  local apart = (w1 - c1):abs():mean():item()
  if not (apart <= 0.1 * moved) then fail("%s and cpu updates differ by %.3g on average (the update: %.3g)", dev, apart, moved) end
  return ("losses %.4f %.4f, mean update %.3g, %s against cpu %.3g"):format(r.losses[1], r.losses[2], moved, dev, apart)
end)

check("trace", function()
  local out = os.tmpname()
  local r = lt.model.trace({ { "decode", function()
    m:generate(prompts, { max_new_tokens = 4, cache = "static", max_rows = 4, stop_ids = {} })
  end } }, { out = out, device = true })
  os.remove(out)
  local s = r.sections[1]
  if cuda then
    if not s.device then fail("no device timeline (source %s): this LibTorch records no CUDA activity", r.source) end
    if s.device.launches == 0 then fail("the device timeline has no kernels") end
    return ("%d device kernels, %d host launches (%s)"):format(s.device.launches, s.host.launches, r.source)
  end
  if s.host.launches == 0 then fail("no host kernels traced") end
  return ("cpu: %d host kernels traced"):format(s.host.launches)
end)

for _, x in ipairs(models) do x.m:free() end
for _, c in ipairs(cleanups) do c() end
print(("smoke: all checks ok (%ds)"):format(os.time() - t_all))
