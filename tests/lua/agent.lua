-- tests/lua/agent.lua: agentic RL end to end at a toy size: lt.rl.gigpo against a hand-computed
-- group, lt.rl.grpo on rows a script produces (its errors), lt.envs.agent's rows against the
-- episodes they came from, and experiments/agent/agent.lua on a tiny random policy (child runs,
-- metrics). Nothing here depends on what is sampled: the checks are identities between what
-- was played and what was trained on.
local T = require "lt.test"
local agent = require "lt.envs.agent"
local tmp = os.getenv("LTRUN_TEST_TMP") .. "/lua_agent"
lt.fs.remove(tmp)
lt.fs.mkdir(tmp)
local f = assert(io.open(tmp .. "/c.txt", "w"))
for i = 1, 50 do f:write("#####\n#P.B#\n#..T#\nAction: ", ({ "up", "down", "left", "right" })[i % 4 + 1], "\n%\n") end
f:close()
lt.model.new{ out = tmp .. "/m", layers = 2, hidden = 32, heads = 2, kv_heads = 1, vocab = 300, seed = 3,
              corpus = { tmp .. "/c.txt" } }

T.case("lt.rl.gigpo by hand: two episodes, one shared anchor, gamma 0.5", function()
  -- R = 1 and 0: A_E = +-0.5 (norm none). Step returns: episode 1 (0 + 0.5 * 1, 1) = (0.5, 1),
  -- episode 2 (0, 0). Anchor "a" holds both first steps: mean 0.25, A_S = +-0.25; "b" and "c"
  -- are singletons: A_S = 0. A = A_E + A_S.
  local eq3 = { gamma = 0.5, omega = 1, norm = "none", scope = "episodes", lone = "zero" }  -- the paper's Eq. 3
  local r = lt.rl.gigpo({ { anchors = { "a", "b" }, rewards = { 0, 1 } }, { anchors = { "a", "c" }, rewards = { 0, 0 } } }, eq3)
  T.same_table(r.advantage, { { 0.75, 0.5 }, { -0.75, -0.5 } })
  T.same_table(r.episode, { 0.5, -0.5 })
  T.same_table(r.group_size, { 2, 1, 1 })
  T.same_table(r.anchor_group, { { 0, 1 }, { 0, 2 } })
  eq3.omega = 0
  local g0 = lt.rl.gigpo({ { anchors = { "a", "b" }, rewards = { 0, 1 } }, { anchors = { "a", "c" }, rewards = { 0, 0 } } }, eq3)
  T.same_table(g0.advantage, { { 0.5, 0.5 }, { -0.5, -0.5 } }, "omega 0: GRPO on episodes")
  -- verl-agent's defaults (runtime/rl/gigpo.h; tests/rl/test_gigpo.cpp has the hand cases): a
  -- lone one-step episode passes R / (1 + 1e-6) through; a row penalty reaches its row only
  T.near(lt.rl.gigpo({ { anchors = { "s" }, rewards = { 1 } } }).advantage[1][1], 1 / (1 + 1e-6), 1e-15)
  local p = lt.rl.gigpo({ { anchors = { "a", "b" }, rewards = { 0, 1 } }, { anchors = { "a", "b" }, rewards = { 0, 0 }, penalties = { 0, 0.1 } } },
                        { gamma = 0.5, norm = "none" })
  T.near(p.advantage[2][1], -0.725, 1e-12); T.near(p.advantage[2][2], -1.125, 1e-12)
  T.near(p.episode_step[2][2], -0.575, 1e-12)
  T.raises(function() lt.rl.gigpo({ { anchors = { "a" }, rewards = { 1 } } }, { scope = "rows" }) end, "scope \"rows\"")
  T.raises(function() lt.rl.gigpo({ { anchors = { "a" }, rewards = { 0, 1 } } }) end, "1 anchors but 2 rewards")
  T.raises(function() lt.rl.gigpo({ { anchors = { "a" }, rewards = { 1 } } }, { gama = 1 }) end, "unknown option 'gama'")
  T.raises(function() lt.rl.gigpo({ { anchor = { "a" }, rewards = { 1 } } }) end, "group%[1%]")
end)

T.case("lt.rl.grpo with produce: rows from the script, their errors", function()
  local m = lt.model.load(tmp .. "/m"):train_only("all")
  local ids = m.tokenizer:encode("#####\nAction:")
  local calls = {}
  local r = lt.rl.grpo(m, { iterations = 2, mini_batches = 2, lr = 1e-3, kl = 0, progress = false,
    produce = function(b)
      calls[#calls + 1] = b
      return { prompts = { ids, ids, ids }, responses = { { 5, 6 }, { 7 }, { 8, 9, 10 } }, advantages = { 1, -1, 0.5 },
               metrics = { made = b } }
    end })
  T.same_table(calls, { 1, 2 }, "produce is called once per batch, numbered from 1")
  T.eq(r.steps, 4, "2 batches x 2 mini-batches")
  T.eq(r.log[1].made, 1); T.eq(r.log[3].made, 2)
  T.eq(r.log[1].rows, 3)
  T.raises(function()
    lt.rl.grpo(m, { iterations = 1, progress = false, produce = function() return { prompts = { ids }, responses = {}, advantages = { 1 } } end })
  end, "produce%(batch 1%).*1 prompts, 0 responses and 1 advantages")
  T.raises(function() lt.rl.grpo(m, { produce = function() end, data = "x.jsonl" }) end, "data has no meaning")
  T.raises(function()
    lt.rl.grpo(m, { iterations = 1, progress = false, produce = function() return { prompts = { ids }, responses = { { 5 } },
      advantages = { 1 }, metrics = { bad = "x" } } end })
  end, "metrics.bad: expected a number")
end)

T.case("lt.envs.agent: every step of every episode is a row with its GiGPO advantage", function()
  local m = lt.model.load(tmp .. "/m")
  local eps = agent.episodes(m, "sokoban", { size = 5, max_steps = 4 }, { 11, 12 }, { group = 3, temperature = 1, seed = 5 })
  T.eq(#eps, 6)
  -- a random policy's text: invalid actions (penalty 0.2 within the reward) are certain to be
  -- among 2 x 3 episodes of up to 4 steps only by chance, so one is made invalid here
  eps[1].steps[1].reward, eps[1].steps[1].penalty, eps[1].steps[1].valid = -0.2, 0.2, false
  local invalid = 0
  for _, ep in ipairs(eps) do
    for _, s in ipairs(ep.steps) do
      if not s.valid then
        invalid = invalid + 1
        T.eq(s.penalty, 0.2, "an invalid step carries the env's penalty")
      end
    end
  end
  T.ok(invalid >= 1)
  for _, mode in ipairs{ "row", "reward" } do
    local rows = agent.rows(eps, { group = 3, gamma = 0.9, omega = 1, penalty = mode })
    local k = 0
    for g = 0, 1 do
      local group = {}
      for i = 1, 3 do
        local ep = eps[g * 3 + i]
        T.eq(ep.seed, ({ 11, 12 })[g + 1], "group members share the seed")
        local anchors, rewards, penalties = {}, {}, {}
        for t, s in ipairs(ep.steps) do
          -- row: the penalty out of the reward, onto the step's row (verl-agent); reward: left in it
          anchors[t], rewards[t], penalties[t] = s.anchor, mode == "row" and s.reward + s.penalty or s.reward,
                                                 mode == "row" and s.penalty or 0
        end
        group[i] = { anchors = anchors, rewards = rewards, penalties = penalties }
      end
      local a = lt.rl.gigpo(group, { gamma = 0.9, omega = 1 })
      for i = 1, 3 do
        for t, s in ipairs(eps[g * 3 + i].steps) do
          k = k + 1
          T.same_table(rows.prompts[k], s.prompt_ids)
          T.same_table(rows.responses[k], s.response_ids)
          T.eq(rows.advantages[k], a.advantage[i][t])
        end
      end
    end
    T.eq(#rows.prompts, k)
    T.eq(rows.metrics.turns, k / 6)
  end
  T.raises(function() agent.rows(eps, { group = 3, penalty = "both" }) end, "penalty 'both'")
  T.raises(function() agent.rows(eps, { group = 3, omgea = 1 }) end, "unknown option")
  T.raises(function() agent.episodes(m, "sokoban", {}, { 1 }, { group = 2, temprature = 1 }) end, "temprature")
end)

T.case("experiments/agent/agent.lua at a toy size: a child run per algorithm, batches logged", function()
  require("experiments.agent.agent").run{ model = tmp .. "/m", steps = 2, tasks = 2, group = 2, heldout = 3, eval_episodes = 1 }
  lt.run.flush()
  local me = lt.run.id()
  for _, algo in ipairs{ "gigpo", "grpo" } do
    local c = lt.run.query("SELECT id, status FROM runs WHERE parent_id = ? AND name = ?", me, algo)[1]
    T.ok(c and c.status == "ok", algo .. " ran ok")
    local n = lt.run.query("SELECT count(*) AS n FROM metrics WHERE run_id = ? AND name IN ('rows', 'valid_actions')", c.id)[1].n
    T.eq(n, 4, algo .. ": rows and valid_actions of 2 batches")
    T.ok(lt.run.query("SELECT value FROM metrics WHERE run_id = ? AND name = 'heldout_success'", c.id)[1], algo .. ": scored")
  end
end)

T.case("the household environment (the ALFWorld stand-in): its whole observation, multi-word commands", function()
  local env = lt.envs.get("household", {})
  local obs = env:reset(3)
  local p = agent.prompt(obs, "household")
  T.eq(p, obs .. "\nAction:", "the whole observation: task and admissible actions")
  T.ok(p:find("Admissible actions:", 1, true), p)
  T.eq(agent.action("  take mug 1 from countertop 1\nmore", "household"), "take mug 1 from countertop 1")
  T.eq(agent.action(" up down", "sokoban"), "up")
  T.eq(agent.action(" up down"), "up")
  local m = lt.model.load(tmp .. "/m")
  local eps = agent.episodes(m, "household", {}, { 7 }, { group = 2, temperature = 1, seed = 5, max_turns = 3 })
  T.eq(#eps, 2)
  for _, ep in ipairs(eps) do
    T.ok(#ep.steps >= 1 and #ep.steps <= 3, "at most 3 turns")
    for _, st in ipairs(ep.steps) do
      T.eq(st.action, agent.action(m.tokenizer:decode(st.response_ids), "household"))
      T.ok(#st.response_ids <= agent.max_response.default, "Table 10's 512 tokens at most")
      local ids = st.response_ids
      T.ok(not m.tokenizer:decode({ unpack(ids, 1, #ids - 1) }):find("\n"), "the generation stops at the first line's end")
      T.eq(st.penalty, st.valid and 0 or 0.1, "an invalid command carries the environment's penalty")
    end
    local _, info = lt.envs.get("household"):reset(7)
    T.eq(ep.category, info.category, "the episode's category is its instance's")
  end
  -- the caller's max_response caps every action: 2 tokens, then 1
  for _, cap in ipairs{ 2, 1 } do
    local longest = 0
    for _, ep in ipairs(agent.episodes(m, "household", {}, { 7, 8 }, { group = 2, temperature = 1, seed = 5, max_turns = 3,
                                                                        max_response = cap })) do
      for _, st in ipairs(ep.steps) do longest = math.max(longest, #st.response_ids) end
    end
    T.eq(longest, cap, "max_response = " .. cap .. ": the longest action")
  end
  T.raises(function() agent.episodes(m, "household", {}, { 7 }, { group = 1, max_response = 0 }) end,
           "option max_response must be an integer >= 1, got 0")
  -- success per category: the household's rows, Overall equal to the success rate
  local s, per, rows = agent.success(m, "household", {}, { 1, 2, 3 }, { episodes = 2, temperature = 1, seed = 9,
                                                                        max_turns = 2 })
  T.eq(#per, 3)
  T.eq(rows[7].column, "Overall")
  T.eq(rows[7].episodes, 6)
  T.eq(rows[7].success, s)
  local n = 0
  for i = 1, 6 do n = n + rows[i].episodes end
  T.eq(n, 6, "every episode in one category")
  T.eq(select(3, agent.success(m, "sokoban", {}, { 1 }, { max_turns = 1 })), nil, "Sokoban has no categories")
end)

T.case("experiments/agent/agent.lua in both environments: a child run each, the algorithms under it", function()
  require("experiments.agent.agent").run{ model = tmp .. "/m", env = "sokoban,household", steps = 1, tasks = 1, group = 2,
                                    heldout = 2, eval_episodes = 1, max_turns = 3 }
  lt.run.flush()
  local me = lt.run.query("SELECT max(id) AS id FROM runs WHERE parent_id IS NULL")[1].id
  for _, env in ipairs{ "sokoban", "household" } do
    local e = lt.run.query("SELECT id FROM runs WHERE parent_id = ? AND name = ?", me, env)[1]
    T.ok(e, env .. " ran as a child run")
    local n = lt.run.query("SELECT count(*) AS n FROM runs WHERE parent_id = ? AND status = 'ok' AND name IN ('gigpo', 'grpo')", e.id)[1].n
    T.eq(n, 2, env .. ": gigpo and grpo under it")
  end
end)

T.finish()
