-- tests/lua/rl_grpo.lua: lt.rl.grpo on the shared training loop with a tiny model and a
-- made-up verifiable task: the steps it makes from P x G rollouts, epochs and mini-batches,
-- its logged metrics, rewards from Lua functions, a frozen prefix, and exact resume (weights
-- and the rollouts in flight) against an uninterrupted run.
local T = require "lt.test"
local tmp = os.getenv("LTRUN_TEST_TMP") .. "/lua_rl_grpo"
os.execute("rm -rf '" .. tmp .. "'")
os.execute("mkdir -p '" .. tmp .. "'")
local f = assert(io.open(tmp .. "/corpus.txt", "w"))
for i = 1, 60 do f:write(("Question: what is %d plus %d?\nAnswer: #### %d\n%%\n"):format(i % 7, i % 5, i % 7 + i % 5)) end
f:close()
lt.model.new{ out = tmp .. "/m", arch = "qwen3", layers = 3, hidden = 32, heads = 4, kv_heads = 2,
              vocab = 300, seed = 5, corpus = { tmp .. "/corpus.txt" } }
local items = {}
for i = 1, 12 do items[i] = { question = ("what is %d plus %d?"):format(i % 7, i % 5), answer = tostring(i % 7 + i % 5) } end
-- GRPO centres the rewards per group: a group whose rewards are all equal gives no gradient,
-- and a test that needs one must not hope for it from what is sampled (a random model scores 0
-- on math everywhere). The Lua reward "other" is 1 for a response whose text differs from the
-- first response of its prompt in this run and 0 otherwise, so within a group the rewards
-- differ exactly when the responses do; its weight 10 keeps math (0 or 1) from evening out two
-- rows. groups[question] collects the responses, so a case can check that every group had two
-- different ones (from a vocabulary of 300 under a random head: all 4 alike is not seen).
local calls, groups = 0, {}
local function opts(extra)
  local first = {}
  local o = { data = items, template = "Question: {question}\nAnswer:", prompts = 2, group_size = 4,
              max_response = 8, temperature = 1.0, iterations = 2, epochs = 2, mini_batches = 2,
              micro_batch = 3, lr = 1e-3, kl = 0.01, seed = 11, progress = false,
              rewards = { math = 1.0, other = { weight = 10, fn = function(item, response)
                calls = calls + 1
                groups[item.question] = groups[item.question] or {}
                table.insert(groups[item.question], response)
                if first[item.question] == nil then first[item.question] = response end
                return response ~= first[item.question] and 1 or 0
              end } } }
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

T.case("grpo: steps, metrics, rewards from Lua, frozen prefix", function()
  local m = lt.model.load(tmp .. "/m"):train_only(lt.layers.range(1, 2))
  calls, groups = 0, {}
  local r = lt.rl.grpo(m, opts())
  T.eq(r.steps, 8, "2 batches x 2 epochs x 2 mini-batches")
  T.eq(calls, 16, "one Lua reward call per rollout (2 x 2 prompts x 4)")
  -- the premise of the gradient checks below: each of the 4 groups sampled two different
  -- responses, so every row's advantage is nonzero and every mini-batch has a gradient
  local n = 0
  for q, rs in pairs(groups) do
    n = n + 1
    local differ = false
    for i = 2, #rs do differ = differ or rs[i] ~= rs[1] end
    T.ok(#rs == 4 and differ, "group of " .. q .. ": 4 responses, not all the same")
  end
  T.eq(n, 4, "4 groups")
  T.eq(#r.log, 8)
  T.ok(r.log[1].reward_mean ~= nil and r.log[1]["reward/other"] ~= nil and r.log[1]["reward/math"] ~= nil)
  T.ok(r.log[2].reward_mean == nil, "rollout metrics only at the step that sampled")
  T.ok(r.log[5].reward_mean ~= nil, "new rollouts at step 5")
  for _, s in ipairs(r.log) do
    T.ok(s.grad_norm > 0, "a gradient at step " .. s.step)
    T.ok(s.clip_frac >= 0 and s.clip_frac <= 1)
    T.ok(s.entropy > 0)
  end
  -- approx_kl = mean(r - 1 - log r) ~ mean(d^2) / 2 for log-prob differences d between the
  -- old-log-prob pass and the update's pass (same weights, same rows, other micro-batches).
  -- fp32 (CPU): |log p| < 10 gives d ~ 1e-6, approx_kl as much at most; 1e-5 is ten times that.
  -- bf16 autocast (CUDA): 8 significant bits on log-probs of size ~ln(vocab) = 6 give |d| up
  -- to ~0.02, d^2 / 2 up to 2e-4; 1e-3 leaves a 5x margin (measured on an H100: 1.1e-4)
  local kl_tol = lt.device:match("^cuda") and 1e-3 or 1e-5
  T.near(r.log[1].approx_kl, 0, kl_tol, "first step: old log-probs are the policy's")
  -- metrics landed in the run
  lt.run.flush()
  local rows = lt.run.query("select count(*) as n from metrics where name = 'clip_frac'")
  T.ok(rows[1].n >= 8, "clip_frac logged per step")
  -- frozen block 0 did not move, the embeddings neither
  local base = lt.model.load(tmp .. "/m")
  local p, q = m:parameters(), base:parameters()
  T.ok(p["model.layers.0.mlp.up_proj.weight"]:equal(q["model.layers.0.mlp.up_proj.weight"]), "block 0 frozen")
  T.ok(not p["model.layers.2.mlp.up_proj.weight"]:equal(q["model.layers.2.mlp.up_proj.weight"]), "block 2 trained")
end)

-- With more than one optimizer step per batch of rollouts the policy moves away from the one
-- that sampled them: the PPO ratio leaves 1 and the clip acts. Every row's advantage is nonzero
-- here (the reward "other", checked in the case above), so the first step changes each trained
-- weight by about lr = 1e-3 (Adam's first step is lr times the gradient's sign): the log-probs
-- of the batch's tokens move by far more than fp32 noise (~1e-6, see approx_kl above), and with
-- clip_ratio = 1e-4 the clip acts on every token whose ratio moved by more than 1e-4 in its
-- advantage's direction (measured on CPU: |approx_kl| 7.5e-3 .. 4e-2 at steps 2-4, clip_frac
-- 0.5 .. 0.97). Under bf16 autocast (CUDA) log-probs carry noise up to ~0.02 (see above): the
-- clip there is 0.05 (noise alone never reaches it) and "moved" means |approx_kl| > 2e-3, twice
-- the noise bound used above.
T.case("grpo: epochs > 1 move the PPO ratio off 1 and the clip acts", function()
  local cuda = lt.device:match("^cuda") ~= nil
  local clip, moved = cuda and 0.05 or 1e-4, cuda and 2e-3 or 1e-4
  local m = lt.model.load(tmp .. "/m"):train_only("all")
  local r = lt.rl.grpo(m, opts{ log = false, clip_ratio = clip, iterations = 1 })
  T.eq(#r.log, 4, "1 batch x 2 epochs x 2 mini-batches")
  T.near(r.log[1].approx_kl, 0, cuda and 1e-3 or 1e-5, "step 1: the policy that sampled")
  T.eq(r.log[1].clip_frac, 0, "step 1: the ratio is 1 up to noise, nothing clipped")
  for i = 2, 4 do
    T.ok(math.abs(r.log[i].approx_kl) > moved, ("step %d: the ratio left 1 (approx_kl %g)"):format(i, r.log[i].approx_kl))
    T.ok(r.log[i].clip_frac > 0, ("step %d: the clip acted (clip_frac %g)"):format(i, r.log[i].clip_frac))
  end
  -- one step per batch (epochs = mini_batches = 1): every step is on-policy, nothing clipped
  local one = lt.rl.grpo(lt.model.load(tmp .. "/m"):train_only("all"),
                         opts{ log = false, clip_ratio = clip, iterations = 2, epochs = 1, mini_batches = 1 })
  for _, s in ipairs(one.log) do T.eq(s.clip_frac, 0, "on-policy step " .. s.step .. ": nothing clipped") end
end)

T.case("grpo: resume is exact, rollouts in flight included", function()
  local full = lt.model.load(tmp .. "/m"):train_only("all")
  lt.rl.grpo(full, opts{ log = false })
  local ck = tmp .. "/ck"
  local a = lt.model.load(tmp .. "/m"):train_only("all")
  -- stop after step 3: the middle of the first batch of rollouts (4 steps use it)
  local r1 = lt.rl.grpo(a, opts{ log = false, checkpoint_dir = ck, stop_after = 3 })
  T.eq(r1.steps, 3)
  local b = lt.model.load(tmp .. "/m"):train_only("all")
  local r2 = lt.rl.grpo(b, opts{ log = false, checkpoint_dir = ck, resume = true })
  T.eq(r2.start_step, 3)
  T.eq(r2.steps, 8)
  local pf, pb = full:parameters(), b:parameters()
  for name, t in pairs(pf) do T.ok(t:equal(pb[name]), "resumed = uninterrupted: " .. name) end
end)

T.case("grpo: bad options", function()
  local m = lt.model.load(tmp .. "/m"):train_only("all")
  T.raises(function() lt.rl.grpo(m, opts{ mini_batches = 3 }) end, "do not split into 3")
  T.raises(function() lt.rl.grpo(m, opts{ rewards = { speed = 1 } }) end, "not a built%-in reward")
  T.raises(function() lt.rl.grpo(m, opts{ algo = "ppo" }) end, "grpo or dr_grpo")
end)

T.finish()
