-- experiments/bench/forward.lua: prefill and decode throughput (tokens/s) of one model at
-- batch 1, 16 and 64, logged per batch size with each one's ratio to batch 1 (measured in
-- the same run). --model=PATH benchmarks a checkpoint; by default a random qwen3 of
-- --layers/--hidden is made in a temporary folder. On a GPU node add --device=cuda.
-- --hf=python3 also measures the same checkpoint through HF transformers
-- (experiments/bench/hf_forward.py, with that Python command, split by the shell) in the same run and logs HF's figures
-- and ltrun/HF ratios. Decode is timed on its own (generate of n tokens minus generate of 1,
-- back to back in each repeat); when that is never positive it is logged as decode_failed.
-- --kinds=mamba,attention,mlp,gdn,gated_attention instead compares layer kinds at the same
-- width: a stack of --layers layers of each kind (mamba, attention, mlp: Nemotron-H's
-- single-mixer blocks; gdn, gated_attention: Qwen3.5's Gated DeltaNet and gated-attention
-- blocks, each with its SwiGLU MLP), prefill and decode tokens/s at batch 1 over the prompt
-- lengths --lengths, logged per kind with step = length, and each kind's ratio to the first
-- kind at that length (measured in the same run): attention's prefill cost grows with the
-- square of the length and its decode cost with the length, Mamba2's and Gated DeltaNet's
-- linearly and not. With --hf, HF's figures for the same checkpoint and length are logged
-- beside (KIND_hf_prefill_tokens_per_s, KIND_prefill_vs_hf, and decode alike; for stacks of
-- one kind hf_forward.py gives HF's generate a cache that transformers 5.12 lacks, see there).
-- --clock=cpu times this process's CPU time (os.clock; HF: time.process_time) instead of
-- wall time: on a shared machine, with OMP_NUM_THREADS=1 on both sides, that is the work
-- done, where wall time is whatever the other processes leave. The kinds' default is cpu.
-- --cache=dynamic,static,static_eager: the decode caches to time, each in the same run at each
-- batch (prefill and HF once): dynamic (generate's default), static (cache = "static": the
-- preallocated cache, one step over all blocks; on CUDA its steps are CUDA graphs, captured in
-- each generate call) and static_eager (the same with LTRUN_STATIC_GRAPHS=0: without graphs,
-- as on the CPU). Dynamic's metrics keep their names (decode_tokens_per_s, decode_vs_hf);
-- the others' carry the suffix /static or /static_eager, with decode_vs_dynamic/<cache>.
-- Per cache and batch also decode_graphs, decode_replays and decode_fallbacks (the timed call's
-- GenerateStats): whether the static steps ran as CUDA graphs (report.md's label needs replays).
local exp = require "lt.study"
local cfg = exp.args{ model = "", layers = 8, hidden = 256, heads = 8, kv_heads = 4,
                      prompt = 128, new_tokens = 32, batches = "1,16,64", repeats = 2,
                      dtype = "", hf = "", hf_attn = "sdpa", kinds = "", lengths = "64,128,256,512,1024,2048",
                      clock = "", cache = "dynamic" }
local caches = {}
for c in cfg.cache:gmatch("[^,]+") do
  if c ~= "dynamic" and c ~= "static" and c ~= "static_eager" then
    error("forward bench: --cache: unknown cache '" .. c .. "' (dynamic, static, static_eager)", 0)
  end
  caches[#caches + 1] = c
end
if #caches == 0 then error("forward bench: --cache names no cache (dynamic, static, static_eager)", 0) end
if cfg.clock == "" then cfg.clock = cfg.kinds ~= "" and "cpu" or "wall" end
if cfg.clock ~= "cpu" and cfg.clock ~= "wall" then
  error("forward bench: --clock must be cpu or wall, got '" .. cfg.clock .. "'", 0)
end
local clock = cfg.clock == "cpu" and os.clock or lt.clock
lt.run.param("clock", cfg.clock)

local function best_of(fn)  -- best of cfg.repeats, seconds
  local best = math.huge
  for _ = 1, cfg.repeats do
    local t0 = clock()
    fn()
    best = math.min(best, clock() - t0)
  end
  return best
end

if cfg.kinds ~= "" then
  local kinds = { mamba = { "nemotron_h", "M" }, attention = { "nemotron_h", "*" }, mlp = { "nemotron_h", "-" },
                  gdn = { "qwen3_5_text", "L" }, gated_attention = { "qwen3_5_text", "A" } }
  local first = {}
  print(("%-16s %7s %14s %14s %10s %10s"):format("kind", "length", "prefill tok/s", "decode tok/s",
                                                  "x first", "x first"))
  local n_kinds = 0
  for kind in cfg.kinds:gmatch("[^,]+") do
    n_kinds = n_kinds + 1
    local k = kinds[kind] or error("forward bench: --kinds: unknown kind '" .. kind ..
                                   "' (mamba, attention, mlp, gdn, gated_attention)", 0)
    local path, cleanup = exp.temp_model{ arch = k[1], pattern = k[2]:rep(cfg.layers), hidden = cfg.hidden,
                                          heads = cfg.heads, kv_heads = cfg.kv_heads, vocab = 512, seed = 1 }
    lt.run.param(kind .. "_arch", k[1])
    local m = lt.model.load(path, { dtype = cfg.dtype ~= "" and cfg.dtype or nil })
    local vocab = m.config.vocab_size
    lt.no_grad(function() m:forward(lt.randint(0, vocab, {1, 16}), { logits = "last" }) end)  -- warm-up, untimed
    for len in cfg.lengths:gmatch("%d+") do
      len = tonumber(len)
      local ids = lt.randint(0, vocab, {1, len})
      lt.no_grad(function() m:forward(ids, { logits = "last" }) end)  -- warm-up at this shape, untimed
      local prefill = best_of(function() lt.no_grad(function() m:forward(ids, { logits = "last" }) end) end)
      local rows = ids:totable()
      local dec = math.huge  -- generate of new_tokens minus generate of 1 (same prefill)
      for _ = 1, cfg.repeats do
        local t0 = clock()
        m:generate(rows, { max_new_tokens = 1, stop_ids = {} })
        local t1 = clock()
        m:generate(rows, { max_new_tokens = cfg.new_tokens, stop_ids = {} })
        local d = (clock() - t1) - (t1 - t0)
        if d > 0 then dec = math.min(dec, d) end
      end
      local p_tps, d_tps = len / prefill, dec < math.huge and (cfg.new_tokens - 1) / dec or nil
      first[len] = first[len] or { p_tps, d_tps }
      lt.run.log(kind .. "_prefill_tokens_per_s", p_tps, { step = len })
      lt.run.log(kind .. "_prefill_vs_" .. cfg.kinds:match("[^,]+"), p_tps / first[len][1], { step = len })
      if d_tps then
        lt.run.log(kind .. "_decode_tokens_per_s", d_tps, { step = len })
        if first[len][2] then lt.run.log(kind .. "_decode_vs_" .. cfg.kinds:match("[^,]+"), d_tps / first[len][2], { step = len }) end
      else
        lt.run.log(kind .. "_decode_failed", 1, { step = len })
      end
      print(("%-16s %7d %14.0f %14s %10.2f %10s"):format(kind, len, p_tps, d_tps and ("%.0f"):format(d_tps) or "failed",
            p_tps / first[len][1], (d_tps and first[len][2]) and ("%.2f"):format(d_tps / first[len][2]) or "-"))
      if cfg.hf ~= "" then  -- the same checkpoint and length through HF transformers
        local out, ok_run, cmd = exp.capture(cfg.hf, { exp.root .. "/experiments/bench/hf_forward.py", path, "--batches", 1,
          "--prompt", len, "--new-tokens", cfg.new_tokens, "--repeats", cfg.repeats, "--device", m.device,
          "--dtype", m.dtype, "--attn", cfg.hf_attn, "--clock", cfg.clock })
        -- the JSON is the last line (transformers may print warnings to stdout before it)
        local last = out:match("([^\n]+)%s*$")
        local ok_json, res = pcall(lt.json.decode, last or "")
        local h = ok_run and ok_json and res.rows and res.rows[1]
        if h then
          lt.run.param("hf_torch", res.torch)
          lt.run.param("hf_transformers", res.transformers)
          lt.run.param(kind .. "_hf_cache", res.cache or "")
        else
          io.stderr:write(("forward bench: %s, length %d: the HF side failed (%s); logged as %s_hf_failed\n")
            :format(kind, len, cmd, kind))
          lt.run.log(kind .. "_hf_failed", 1, { step = len })
          goto next_length
        end
        local hd = h.decode_tokens_per_s ~= lt.json.null and h.decode_tokens_per_s or nil
        lt.run.log(kind .. "_hf_prefill_tokens_per_s", h.prefill_tokens_per_s, { step = len })
        lt.run.log(kind .. "_prefill_vs_hf", p_tps / h.prefill_tokens_per_s, { step = len })
        if hd then lt.run.log(kind .. "_hf_decode_tokens_per_s", hd, { step = len }) end
        if hd and d_tps then lt.run.log(kind .. "_decode_vs_hf", d_tps / hd, { step = len }) end
        print(("%-16s %7s %14.0f %14s   HF; ltrun/HF %.2f, %s"):format("", "", h.prefill_tokens_per_s,
              hd and ("%.0f"):format(hd) or "failed", p_tps / h.prefill_tokens_per_s,
              (hd and d_tps) and ("%.2f"):format(d_tps / hd) or "-"))
      end
      ::next_length::
    end
    m:free()
    cleanup()
  end
  return
end

local m, path, cleanup = require "experiments.bench.model"(cfg)
lt.run.param("model_dtype", m.dtype)  -- scripts/gpu-check's report: bytes per weight of the floor
-- what a decode step must read at least (the HBM-bandwidth floor of scripts/gpu-check's
-- report): every weight once, and per row the keys and values of its positions so far
do
  local c = m.config
  local elem = ({ float32 = 4, bfloat16 = 2, float16 = 2, float64 = 8 })[m.dtype] or 4
  local embed = c.vocab_size * c.hidden_size * elem  -- the lookup reads one row, not the table
  lt.run.param("decode_weight_bytes", ("%.0f"):format(m:n_params() * elem - (c.tie_word_embeddings and 0 or embed)))
  lt.run.param("kv_bytes_per_token", ("%.0f"):format(2 * c.num_hidden_layers * c.num_key_value_heads
    * (c.head_dim or math.floor(c.hidden_size / c.num_attention_heads)) * elem))
  lt.run.param("decode_positions_mean", ("%.1f"):format(cfg.prompt + cfg.new_tokens / 2))
end

-- HF transformers on the same checkpoint, same shapes, same protocol; {batch = row}
local function hf_figures()
  if cfg.hf == "" then return nil end
  local script = exp.root .. "/experiments/bench/hf_forward.py"
  local out, ok, cmd = exp.capture(cfg.hf, { script, path, "--batches", cfg.batches, "--prompt", cfg.prompt,
    "--new-tokens", cfg.new_tokens, "--repeats", cfg.repeats, "--device", m.device, "--dtype", m.dtype,
    "--attn", cfg.hf_attn, "--clock", cfg.clock })
  if not ok or out == "" then error("forward bench: the HF side failed: " .. cmd, 0) end
  local res = lt.json.decode(out:match("([^\n]+)%s*$"))
  lt.run.param("hf_torch", res.torch)
  lt.run.param("hf_transformers", res.transformers)
  local by_batch = {}
  for _, r in ipairs(res.rows) do by_batch[r.batch] = r end
  return by_batch
end
local hf = hf_figures()
local vocab = m.config.vocab_size

local timed = best_of

-- decode on its own: in each repeat, greedy generate of new_tokens tokens minus generate of
-- one token (the same prefill and first token in both), back to back; the best of --repeats
-- differences that are positive. A difference at or below 0 (another process took the core
-- during the shorter call) is taken again, up to 10 more times in all; none positive: a
-- failure, logged as decode_failed, rather than an absurd rate.
-- static_eager: LTRUN_STATIC_GRAPHS=0 around the calls (static_decode.cpp reads it per call)
local ffi = require "ffi"
ffi.cdef "int setenv(const char *name, const char *value, int overwrite); int unsetenv(const char *name);"
local function under(cache, fn)
  if cache ~= "static_eager" then return fn() end
  local was = os.getenv("LTRUN_STATIC_GRAPHS")
  ffi.C.setenv("LTRUN_STATIC_GRAPHS", "0", 1)
  local ok, err = pcall(fn)
  if was then ffi.C.setenv("LTRUN_STATIC_GRAPHS", was, 1) else ffi.C.unsetenv("LTRUN_STATIC_GRAPHS") end
  if not ok then error(err, 0) end
  return err
end
local function gen_opts(cache, n)
  return { max_new_tokens = n, stop_ids = {}, cache = cache == "dynamic" and "dynamic" or "static" }
end
-- Also returns the last timed call's stats (GenerateStats: the static cache's CUDA graphs,
-- replays and failed captures).
local function decode_seconds(rows, cache)
  local st
  local best = under(cache, function()
    local best, good, retries = math.huge, 0, 0
    while good < cfg.repeats and retries <= 10 do
      local t0 = clock()
      m:generate(rows, gen_opts(cache, 1))
      local t1 = clock()
      st = select(3, m:generate(rows, gen_opts(cache, cfg.new_tokens)))
      local d = (clock() - t1) - (t1 - t0)
      if d > 0 then best, good = math.min(best, d), good + 1 else retries = retries + 1 end
    end
    return best < math.huge and best or nil
  end)
  return best, st
end

if cfg.new_tokens < 2 then error("forward bench: --new_tokens must be at least 2 (decode = tokens 2..n)", 0) end
local base = {}  -- batch 1's rates (the first batch given): prefill, and decode per cache
print(("%6s %-12s %14s %14s %10s %10s"):format("batch", "cache", "prefill tok/s", "decode tok/s", "x batch1", "x batch1"))
for b in cfg.batches:gmatch("%d+") do
  b = tonumber(b)
  local first_batch = b == tonumber(cfg.batches:match("%d+"))
  local ids = lt.randint(0, vocab, {b, cfg.prompt})
  local rows = ids:totable()
  -- warm-up at this shape, untimed, as hf_forward.py does (a GPU's first call at a new shape
  -- pays for kernel choice and allocation: the first GPU run timed that against a warm HF)
  lt.no_grad(function() m:forward(ids, { logits = "last" }) end)
  for _, cache in ipairs(caches) do under(cache, function() m:generate(rows, gen_opts(cache, 2)) end) end
  local prefill = timed(function() lt.no_grad(function() m:forward(ids, { logits = "last" }) end) end)
  local prefill_tps = b * cfg.prompt / prefill
  base.prefill = base.prefill or prefill_tps
  lt.run.log("prefill_tokens_per_s", prefill_tps, { step = b })
  lt.run.log("prefill_vs_batch1", prefill_tps / base.prefill, { step = b })
  local function fmt(v, f) return v and (f):format(v) or "failed" end
  local h = hf and hf[b]
  local hd = h and h.decode_tokens_per_s  -- JSON null when the HF side's decode failed
  if hd == lt.json.null then hd = nil end
  local dyn  -- this batch's dynamic decode rate
  for i, cache in ipairs(caches) do
    local sfx = cache == "dynamic" and "" or "/" .. cache
    local dsec, st = decode_seconds(rows, cache)
    -- whether the static cache's steps ran as CUDA graphs (report.md labels by these)
    lt.run.log("decode_graphs" .. sfx, st.graphs, { step = b })
    lt.run.log("decode_replays" .. sfx, st.replays, { step = b })
    lt.run.log("decode_fallbacks" .. sfx, st.fallbacks, { step = b })
    local decode_tps = dsec and b * (cfg.new_tokens - 1) / dsec
    if first_batch then base[cache] = decode_tps end
    if cache == "dynamic" then dyn = decode_tps end
    print(("%6s %-12s %14s %14s %10s %10s"):format(i == 1 and b or "", cache, i == 1 and ("%.0f"):format(prefill_tps) or "",
          fmt(decode_tps, "%.0f"), i == 1 and ("%.2f"):format(prefill_tps / base.prefill) or "",
          fmt(decode_tps and base[cache] and decode_tps / base[cache], "%.2f")))
    if decode_tps then
      lt.run.log("decode_tokens_per_s" .. sfx, decode_tps, { step = b })
      if base[cache] then lt.run.log("decode_vs_batch1" .. sfx, decode_tps / base[cache], { step = b }) end
      if hd then lt.run.log("decode_vs_hf" .. sfx, decode_tps / hd, { step = b }) end
      if cache ~= "dynamic" and dyn then lt.run.log("decode_vs_dynamic" .. sfx, decode_tps / dyn, { step = b }) end
    else
      io.stderr:write(("forward bench: batch %d, %s cache: decode not measured (generate of %d tokens took no longer"
        .. " than of 1 in every repeat); logged as decode_failed%s\n"):format(b, cache, cfg.new_tokens, sfx))
      lt.run.log("decode_failed" .. sfx, 1, { step = b })
    end
  end
  if h then
    print(("%6s %-12s %14.0f %14s %10s %10s   HF; ltrun/HF prefill %.2f"):format("", "HF", h.prefill_tokens_per_s,
          fmt(hd, "%.0f"), "", "", prefill_tps / h.prefill_tokens_per_s))
    lt.run.log("hf_prefill_tokens_per_s", h.prefill_tokens_per_s, { step = b })
    lt.run.log("prefill_vs_hf", prefill_tps / h.prefill_tokens_per_s, { step = b })
    if hd then lt.run.log("hf_decode_tokens_per_s", hd, { step = b }) else lt.run.log("hf_decode_failed", 1, { step = b }) end
  end
end
cleanup()
