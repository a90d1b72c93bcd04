-- experiments/bench/grpo.lua: where the time of a GRPO step goes and what the layer-wise
-- savings buy, as ratios measured in the same run on one model (a random tiny Qwen3 unless
-- --model is given):
--   * the time split of lt.rl.grpo steps: rollout / reference / old log-probs / update;
--   * rollout tokens/s (lt.rl.rollout, log-probs and packing included) against plain
--     m:generate of the same prompts with the same sampling;
--   * rollout tokens/s with group-shared prefill (share_prefill) and finished rows leaving the
--     batch (drop_finished) each off and on, responses of mixed length (a random model ends a
--     row with probability stop_frac per token: stop ids are that share of the vocabulary);
--     rollout_speedup = both on against both off (the same tokens either way: checked);
--   * rollout tokens/s with at most max_rows rows decoding at once, waiting rows taking the
--     places of finished ones (refill) or starting once the batch has ended, in the same run;
--     rollout_refill_speedup = on against off (the same tokens: checked);
--   * with --hf=CMD (a python with torch + transformers, e.g. --hf="scripts/check-torch2 --python"):
--     HF `generate` on the same checkpoint, prompts, stop ids, cap and sampling (temperature,
--     no top-k/top-p; experiments/bench/hf_generate.py), tokens/s against the rollout's with
--     both on (rollout_vs_hf_generate) and both off, in the same run;
--   * with --cache=dynamic,static also the static cache (cache = "static": preallocated
--     buffers, one step over all blocks; CUDA graphs on a GPU): the rollout of 1 over it
--     (rollout_tokens_per_s/static, against the dynamic one and of its floor in gpu-check's
--     report) and the rollout of 1b with both on over it (rollout_tokens_per_s/both_static,
--     and rollout_vs_hf_generate/static with --hf); its tokens equal the dynamic path's only
--     up to rounding (tests/model/test_static.cpp), so they are counted, not asserted;
--   * the shared-prefix reference (last block trainable) against a full copy: time of the
--     reference log-probs and the memory each holds;
--   * peak memory (VmHWM, reset through /proc/self/clear_refs) of chunked log-probs against
--     log_softmax over the full [B, T, vocab] logits.
local exp = require "lt.study"
local cfg = exp.args{ model = "", layers = 8, hidden = 256, heads = 8, kv_heads = 4, vocab = 32000,
                      prompts = 8, group_size = 8, prompt_len = 32, max_response = 64,
                      iterations = 3, repeats = 3, chunk = 1024, stop_frac = 1 / 48, max_rows = 16,
                      only_rollout = false, hf = "", cache = "dynamic" }
local static = false
for c in cfg.cache:gmatch("[^,]+") do
  if c == "static" then static = true
  elseif c ~= "dynamic" then error("grpo bench: --cache: unknown cache '" .. c .. "' (dynamic, static)", 0) end
end

local m, path, cleanup = require "experiments.bench.model"(cfg, cfg.vocab)
lt.run.param("model_dtype", m.dtype)  -- scripts/gpu-check's report: bytes per weight of the floor
local V = m.config.vocab_size
local function ids_prompts(n, seed)
  lt.manual_seed(seed)
  local t = lt.randint(1, V, { n, cfg.prompt_len })
  local out = {}
  for i = 0, n - 1 do out[i + 1] = t[i]:totable() end
  return out
end
local prompts = ids_prompts(cfg.prompts, 1)
local function best_of(fn)
  local best = math.huge
  for _ = 1, cfg.repeats do
    local t0 = lt.clock()
    fn()
    best = math.min(best, lt.clock() - t0)
  end
  return best
end

-- 1. rollout against plain generate (same rows, same sampling, no stop id: every row runs to
--    max_response)
local G, L = cfg.group_size, cfg.max_response
local rows = {}
for _, p in ipairs(prompts) do for _ = 1, G do rows[#rows + 1] = p end end
local ro = { group_size = G, max_response = L, temperature = 1.0, seed = 3, stop_ids = {} }
local r
-- warm-up, untimed: on a GPU the first calls pay for kernel choice and allocation (the first GPU
-- run timed the rollout cold, first, against a warm generate)
lt.rl.rollout(m, prompts, ro)
m:generate(rows, { max_new_tokens = L, temperature = 1.0, seed = 3, stop_ids = {} })
local t_rollout = best_of(function() r = lt.rl.rollout(m, prompts, ro) end)
local t_generate = best_of(function()
  m:generate(rows, { max_new_tokens = L, temperature = 1.0, seed = 3, stop_ids = {} })
end)
local tokens = r.tokens
lt.run.log("rollout_tokens_per_s", tokens / t_rollout)
lt.run.log("generate_tokens_per_s", tokens / t_generate)
lt.run.log("ratio/rollout_vs_generate", t_generate / t_rollout)
print(("rollout %.0f tok/s, plain generate %.0f tok/s: rollout at %.2fx of generate"):format(
  tokens / t_rollout, tokens / t_generate, t_generate / t_rollout))
if static then
  local so = { cache = "static" }
  for k, v in pairs(ro) do so[k] = v end
  lt.rl.rollout(m, prompts, so)  -- warm-up, untimed
  local rs
  local t_static = best_of(function() rs = lt.rl.rollout(m, prompts, so) end)
  lt.run.log("rollout_tokens_per_s/static", rs.tokens / t_static)
  -- whether its steps ran as CUDA graphs (report.md labels by these)
  lt.run.log("rollout_graphs/static", rs.graphs)
  lt.run.log("rollout_replays/static", rs.replays)
  lt.run.log("rollout_fallbacks/static", rs.fallbacks)
  lt.run.log("ratio/rollout_static_vs_dynamic", (rs.tokens / t_static) / (tokens / t_rollout))
  print(("rollout over the static cache %.0f tok/s: %.2fx of the dynamic cache's"):format(rs.tokens / t_static,
        (rs.tokens / t_static) / (tokens / t_rollout)))
end

-- 1b. group-shared prefill and finished rows leaving the batch, each off and on; responses of
--     mixed length up to max_response
local n_stop = math.max(1, math.floor(V * cfg.stop_frac + 0.5))
local stops = {}
for i = 1, n_stop do stops[i] = i - 1 end
local variants = { { "off", false, false }, { "share", true, false }, { "drop", false, true }, { "both", true, true } }
local rate, ref = {}, nil
-- lt.rl.rollout takes share_prefill= and drop_finished= once bindings/rl.cpp lists them
local has_options, probe_err = pcall(lt.rl.rollout, m, { prompts[1] }, { group_size = 1, max_response = 1,
                                                                         share_prefill = true, drop_finished = true })
if not has_options and not tostring(probe_err):find("unknown option", 1, true) then error(probe_err, 0) end
if not has_options then
  print("rollout_speedup: skipped (lt.rl.rollout does not take share_prefill= / drop_finished= in this build)")
  variants = {}
end
for _, v in ipairs(variants) do
  local name, share, drop = v[1], v[2], v[3]
  local rv
  local t = best_of(function()
    rv = lt.rl.rollout(m, prompts, { group_size = G, max_response = L, temperature = 1.0, seed = 5,
                                     stop_ids = stops, share_prefill = share, drop_finished = drop })
  end)
  if ref then
    assert(rv.tokens == ref.tokens and rv.ids:equal(ref.ids),
           "rollout with share_prefill=" .. tostring(share) .. ", drop_finished=" .. tostring(drop)
           .. " sampled other tokens than with both off")
  else
    ref = rv
  end
  rate[name] = rv.tokens / t
  lt.run.log("rollout_tokens_per_s/" .. name, rate[name])
end
if has_options and static then
  local rv
  local opts = { group_size = G, max_response = L, temperature = 1.0, seed = 5, stop_ids = stops,
                 share_prefill = true, drop_finished = true, cache = "static" }
  lt.rl.rollout(m, prompts, opts)  -- warm-up, untimed
  local t = best_of(function() rv = lt.rl.rollout(m, prompts, opts) end)
  rate.both_static = rv.tokens / t
  lt.run.log("rollout_tokens_per_s/both_static", rate.both_static)
  lt.run.log("ratio/rollout_both_static_vs_dynamic", rate.both_static / rate.both)
  -- the same tokens as the dynamic cache's up to rounding (a near-tie may go the other way)
  local same = rv.tokens == ref.tokens and rv.ids:equal(ref.ids)
  lt.run.log("rollout_static_same_tokens", same and 1 or 0)
  print(("rollout with both on over the static cache: %.0f tok/s (%.2fx of the dynamic cache's), %s tokens"):format(
        rate.both_static, rate.both_static / rate.both, same and "the same" or "other (a near-tie)"))
end
if has_options then
  local lens = {}
  for i, resp in ipairs(ref.responses) do lens[i] = #resp end
  table.sort(lens)
  lt.run.log("rollout_speedup", rate.both / rate.off)
  lt.run.log("ratio/rollout_share_prefill", rate.share / rate.off)
  lt.run.log("ratio/rollout_drop_finished", rate.drop / rate.off)
  print(("rollout at G = %d, %d-token prompts, responses of %d..%d tokens (median %d, cap %d): %.0f tok/s "
         .. "with both off, %.0f shared prefill (%.2fx), %.0f finished rows dropped (%.2fx), %.0f both "
         .. "(rollout_speedup %.2fx)"):format(G, cfg.prompt_len, lens[1], lens[#lens], lens[math.floor((#lens + 1) / 2)], L,
    rate.off, rate.share, rate.share / rate.off, rate.drop, rate.drop / rate.off, rate.both, rate.both / rate.off))
end
-- 1c. at most max_rows rows at once: waiting rows refill finished rows' places, or wait for
--     the batch to end (share_prefill and drop_finished on)
do
  local rr, steps, refilled = {}, {}, 0
  local base
  for _, on in ipairs{ false, true } do
    local rv
    local t = best_of(function()
      rv = lt.rl.rollout(m, prompts, { group_size = G, max_response = L, temperature = 1.0, seed = 5,
                                       stop_ids = stops, max_rows = cfg.max_rows, refill = on })
    end)
    if base then
      assert(rv.tokens == base.tokens and rv.ids:equal(base.ids), "rollout with refill sampled other tokens than without")
    else
      base = rv
    end
    local name = on and "on" or "off"
    rr[name], steps[name] = rv.tokens / t, rv.decode_steps
    if on then refilled = rv.refilled_rows end
    lt.run.log("rollout_tokens_per_s/refill_" .. name, rr[name])
    lt.run.log("decode_steps/refill_" .. name, rv.decode_steps)
  end
  lt.run.log("rollout_refill_speedup", rr.on / rr.off)
  lt.run.log("refilled_rows", refilled)
  print(("rollout with at most %d of %d rows at once: %.0f tok/s waiting for the batch to end (%d decode steps), "
         .. "%.0f with refill (%d steps, %d rows joined running batches): rollout_refill_speedup %.2fx"):format(
    cfg.max_rows, #rows, rr.off, steps.off, rr.on, steps.on, refilled, rr.on / rr.off))
end
if cfg.hf ~= "" and has_options then
  local input = os.tmpname()
  local f = assert(io.open(input, "w"))
  f:write(lt.json.encode{ prompts = prompts, stop_ids = stops })
  f:close()
  local out, ok, cmd = exp.capture(cfg.hf, { exp.root .. "/experiments/bench/hf_generate.py", path, input,
                                             "--group_size", G, "--max_new", L, "--repeats", cfg.repeats,
                                             "--device", m.device, "--dtype", m.dtype })
  os.remove(input)
  local json
  for line in out:gmatch("[^\n]+") do if line:match("^{") then json = line end end
  if not ok or not json then cleanup(); error("grpo bench: the HF side failed: " .. cmd .. "\n" .. out:sub(-800), 0) end
  local hf = lt.json.decode(json)
  lt.run.param("hf_torch", hf.torch)
  lt.run.param("hf_transformers", hf.transformers)
  local hf_rate = hf.tokens / hf.seconds
  lt.run.log("hf_generate_tokens_per_s", hf_rate)
  lt.run.log("rollout_vs_hf_generate", rate.both / hf_rate)
  lt.run.log("rollout_off_vs_hf_generate", rate.off / hf_rate)
  if rate.both_static then lt.run.log("rollout_vs_hf_generate/static", rate.both_static / hf_rate) end
  print(("HF generate (torch %s, transformers %s, %d threads): %d rows, %d tokens, %.0f tok/s; "
         .. "ltrun rollout / HF generate: %.2fx with both on, %.2fx with both off"):format(
    hf.torch, hf.transformers, hf.threads, hf.rows, hf.tokens, hf_rate, rate.both / hf_rate, rate.off / hf_rate))
end
if cfg.only_rollout then
  cleanup()
  return
end

-- 2. shared-prefix reference (the last block trains) against a copied reference
m:train_only(m.n_layers - 1)
local shared, copied = lt.rl.reference(m), lt.rl.reference(m, { copy = true })
-- as lt.rl.grpo runs it, the shared prefix resumes from the hidden state that the policy's
-- own pass (old log-probs, or the update) computes at its block anyway; alone, it runs the
-- frozen blocks below that itself
local entry = lt.rl.entry(m, r, shared.from_layer)
local t_shared = best_of(function() shared:logprobs(m, r, { chunk = cfg.chunk, entry = entry }) end)
local t_alone = best_of(function() shared:logprobs(m, r, { chunk = cfg.chunk }) end)
local t_copied = best_of(function() copied:logprobs(m, r, { chunk = cfg.chunk }) end)
lt.run.log("reference_s/shared_prefix", t_shared)
lt.run.log("reference_s/shared_prefix_alone", t_alone)
lt.run.log("reference_s/copy", t_copied)
lt.run.log("ratio/reference_time_shared_vs_copy", t_shared / t_copied)
lt.run.log("ratio/reference_time_alone_vs_copy", t_alone / t_copied)
lt.run.log("reference_bytes/shared_prefix", shared.bytes)
lt.run.log("reference_bytes/copy", copied.bytes)
lt.run.log("ratio/reference_memory_shared_vs_copy", shared.bytes / copied.bytes)
print(("reference log-probs: shared prefix from the policy's hidden state at block %d %.3fs, copy %.3fs (%.2fx; "
       .. "the shared prefix running the frozen blocks itself %.3fs, %.2fx); memory %.1f MB vs %.1f MB (%.3fx)"):format(
  shared.from_layer, t_shared, t_copied, t_shared / t_copied, t_alone, t_alone / t_copied, shared.bytes / 1e6,
  copied.bytes / 1e6, shared.bytes / copied.bytes))
copied = nil
collectgarbage()

-- 3. peak memory: chunked log-probs against full logits (no grad, one pass each)
local function hwm_kb()
  for line in io.lines("/proc/self/status") do
    local v = line:match("^VmHWM:%s+(%d+)")
    if v then return tonumber(v) end
  end
end
local function reset_hwm()
  local f = io.open("/proc/self/clear_refs", "w")
  if not f then return false end
  f:write("5")
  f:close()
  return true
end
m:train_only({})
local P, R = r.prompt_len, r.resp_len
local function peak(fn)
  collectgarbage(); collectgarbage()
  if not reset_hwm() then return nil end
  local before = hwm_kb()
  fn()
  return (hwm_kb() - before) * 1024
end
local peak_chunked = peak(function() lt.rl.logprobs(m, r, { chunk = cfg.chunk }) end)
local peak_full = peak(function()
  local logits = m:forward(r.ids, { attention_mask = r.attention_mask }).logits
  local lp = logits:narrow(1, P - 1, R):log_softmax(-1)
  return lp:gather(2, r.ids:narrow(1, P, R):unsqueeze(2))
end)
if peak_chunked and peak_full then
  lt.run.log("peak_bytes/chunked_logprobs", peak_chunked)
  lt.run.log("peak_bytes/full_logits", peak_full)
  lt.run.log("ratio/peak_chunked_vs_full", peak_chunked / math.max(peak_full, 1))
  print(("peak memory above the baseline: chunked %.1f MB, full logits %.1f MB (%.3fx; [%d, %d, %d] fp32 logits = %.1f MB)"):format(
    peak_chunked / 1e6, peak_full / 1e6, peak_chunked / math.max(peak_full, 1), #rows, P + R, V,
    #rows * (P + R) * V * 4 / 1e6))
else
  print("peak memory: /proc/self/clear_refs is not writable here; skipped")
end

-- 4. the time split of GRPO steps (2 PPO epochs, so that old log-probs are captured; KL on)
local items = {}
for i = 1, cfg.prompts * cfg.iterations do items[i] = { question = "q" .. i, answer = "1" } end
m:train_only(m.n_layers - 1)
local g = lt.rl.grpo(m, { data = items, template = "{question}", prompts = cfg.prompts,
  group_size = G, max_response = L, epochs = 2, kl = 0.001, iterations = cfg.iterations,
  lr = 1e-6, log = false, progress = false, stop_ids = {}, decontaminate = 0,
  rewards = { len = function(item, response) return #response % 3 end } })
local split = { rollout = 0, reference = 0, old_logprobs = 0, update = 0 }
for _, s in ipairs(g.log) do
  split.rollout = split.rollout + (s["time/rollout_s"] or 0)
  split.reference = split.reference + (s["time/reference_s"] or 0)
  split.old_logprobs = split.old_logprobs + (s["time/old_logprobs_s"] or 0)
end
split.update = g.wall_s - split.rollout - split.reference - split.old_logprobs
print(("GRPO time split over %d steps (%.1fs):"):format(g.steps, g.wall_s))
for _, k in ipairs{ "rollout", "reference", "old_logprobs", "update" } do
  lt.run.log("time_frac/" .. k, split[k] / g.wall_s)
  print(("  %-13s %7.2fs  %5.1f%%"):format(k, split[k], 100 * split[k] / g.wall_s))
end
cleanup()
