-- tests/lua/option_defaults.lua: a study takes a runtime function's options as its own args
-- (study.args_of, lib/lt/study/init.lua): the defaults a study's --help shows are the API page's
-- (docs/reference/lua-api.md, written by `ltrun doc api` from the declarations), except the
-- ones the study overrides, which are the values it always used (so its printed results on the
-- embedded default stay what they were); an override of an option the function lacks, and an
-- option without a plain default left at its stand-in, are handled as documented.
local T = require "lt.test"
local study = require "lt.study"

-- the page's defaults of `fn`: {key = "text as --help shows it"} from its option table
local function page_defaults(fn)
  local f = assert(io.open(study.root .. "/docs/reference/lua-api.md"))
  local text = f:read("*a")
  f:close()
  local at = assert(text:find("\n### " .. fn:gsub("%.", "%%.") .. "\n"), fn .. " is not on the page")
  local out, n = {}, 0
  for line in text:sub(at + 1):gmatch("[^\n]*") do
    if n > 0 and line:match("^#") then break end
    local key, def = line:match("^| `([%w_]+)` | [^|]* | `([^`]*)`")
    if key then out[key], n = def, n + 1 end
    if line:match("^| option | kind | default |") then n = math.max(n, 1) end
  end
  T.ok(n > 1, fn .. ": no defaults on the page")
  return out
end

-- the defaults a study's --help shows: {key = "text"}
local function help_defaults(s)
  local out = {}
  for key, v in s.help():gmatch("\n  %-%-([%w_]+)=([^\n]*)") do out[key] = v end
  return out
end

local function check_study(name, overrides)
  local s = require("experiments." .. name .. "." .. name)
  local page, help = page_defaults("lt.rl.grpo"), help_defaults(s)
  for key, def in pairs(page) do
    T.ok(help[key] ~= nil, ("%s --help lacks lt.rl.grpo's option --%s"):format(name, key))
    T.eq(help[key], overrides[key] or def, ("%s --help: --%s"):format(name, key))
  end
  for key, v in pairs(overrides) do T.eq(help[key], v, ("%s overrides --%s"):format(name, key)) end
  local api = {}
  for _, o in ipairs(lt.api("lt.rl.grpo").options) do api[o.key] = o end
  for key, spec in pairs(s.args) do  -- an option of lt.rl.grpo is its declaration, not a copy
    if api[key] then T.eq(spec[2], api[key].doc, ("%s: --%s's help is lt.rl.grpo's"):format(name, key)) end
  end
end

T.case("grpo's --help shows lt.rl.grpo's defaults but those it overrides", function()
  check_study("grpo", { data = '""', eval = '""', eval_n = "200", lr = "0.0001", iterations = "100",
    prompts = "16", max_response = "24", micro_batch = "32", kl = "-1", eval_every = "25",
    template = '"Question: {question}\\nAnswer:"', decontaminate = "-1", checkpoint_every = "25" })
end)

T.case("code_rl's --help shows lt.rl.grpo's defaults but those it overrides", function()
  check_study("code_rl", { data = '""', eval = '""', iterations = "60", lr = "0.0001", prompts = "16",
    max_response = "16", micro_batch = "32", template = '"{question}"', decontaminate = "0" })
end)

T.case("args_of: overrides, stand-ins for options without a default, unknown keys", function()
  local specs = study.args_of("lt.rl.grpo", { max_response = 24, kl = -1 })
  T.eq(specs.max_response[1], 24)
  T.eq(specs.group_size[1], 8)
  T.eq(specs.iterations.min, 1)
  T.same_table(specs.algo.choices, { "grpo", "dr_grpo" })
  T.eq(specs.produce, nil)  -- a function: not an arg
  T.eq(specs.norm, nil)     -- no plain default and not overridden: not an arg
  local s = study.study{ name = "toy", args = specs, run = function(cfg) return cfg end }
  T.eq(s.config().kl, nil)  -- the stand-in reads as not given
  T.eq(s.config{ kl = 0.5 }.kl, 0.5)
  local o = study.options_for("lt.rl.grpo", s.config{ kl = 0.5 }, { data = "x.jsonl" })
  T.eq(o.kl, 0.5); T.eq(o.data, "x.jsonl"); T.eq(o.max_response, 24)
  T.raises(function() s.config{ algo = "ppo" } end, "'ppo' is not one of grpo, dr_grpo")
  T.raises(function() study.args_of("lt.rl.grpo", { max_respons = 1 }) end,
           "study.args_of: lt.rl.grpo has no option max_respons")
  T.raises(function() study.args_of("lt.rl.nope", {}) end, "lt.rl.nope is not a declared function")
end)

T.finish()
