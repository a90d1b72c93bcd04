-- lt/study/define.lua: a study as a module (study.study, re-exported by lt.study).
--
--   return study.study{
--     name = "my_study", help = "what it measures",
--     args = { steps = { 100, "training steps", int = true, min = 1 },
--              plan = { "full", "which blocks train", choices = { "full", "shallow" } } },
--     presets = { paper = { steps = 1000 } },
--     run = function(cfg) ... end }
--
-- Each arg: { default, help text, int = true, min =, max =, choices = {...}, list = true, path =
-- true, layers = true, absent = value }. The default's type is the arg's type (number, string,
-- boolean); `list = true`: a comma-separated string whose every element is one of `choices`;
-- `path = true`: a file or folder that must exist when the value is not "" (a model, a data
-- file); `layers = true`: blocks in lt.layers' grammar (lt.layers.check: --layers=deep:nan is
-- refused before a model is made); `absent`: the value that stands for "not given", which cfg
-- holds as nil (study.args_of's options without a plain default, such as lt.rl.grpo's kl, whose
-- default is the algo's). A value of the wrong type, out of range, not among the choices or
-- naming no file, and a key the study does not declare, are errors naming the arg; on the
-- command line each is one line, exit 2, no run kept
-- (lt.study.args.usage_error), with "did you mean --steps?" for a near miss. `presets` adds the arg
-- `preset`: its values are applied over the defaults, and explicit values win over the preset. A
-- preset's value may carry its source, { value, "where it comes from" } (a paper's table, or why a
-- cell is blank): study.run then prints every value of the chosen preset with its source
-- (study.preset_lines).
--
-- The file returns the study. When the file is the script ltrun runs, ltrun runs the returned
-- study on the command line (lt.main in lib/lt/init.lua, then M.main below; `--help` prints the
-- args); loading the file runs nothing, and another study calls it as a function:
--   local freeze_deep = require "experiments.freeze_deep.freeze_deep"
--   lt.run.child("train", freeze_deep.run, { plans = "train_shallow", steps = 10 })
-- study.run(cfg) completes cfg (defaults, preset, checks), logs it as the run's params and
-- returns what the study's run returns; study.config(cfg) only completes it.
local args = require "lt.study.args"
local M = {}

local sorted_keys = args.sorted_keys
local made = setmetatable({}, { __mode = "k" })  -- the studies study.study made (M.is_study)

-- a preset's entry → its value, its source (nil when none is given)
local function preset_value(v)
  if type(v) == "table" then return v[1], v[2] end
  return v
end

-- an arg's choices as the messages and --help list them (the empty choice as "")
local function shown_choices(choices)
  local shown = {}
  for i, c in ipairs(choices) do shown[i] = c == "" and '""' or c end
  return table.concat(shown, ", ")
end

local function show(v) return type(v) == "string" and ("%q"):format(v):gsub("\\\n", "\\n") or tostring(v) end

-- checks one value of arg `key` against its spec; returns the value in the arg's type
local function check(name, key, spec, v)
  local d, given = spec[1], v
  local function bad(what) error(("%s: --%s=%s: %s"):format(name, key, tostring(given), what), 0) end
  if type(d) == "number" then
    if type(v) == "string" then v = args.number(args.trim(v)) or bad("expected a number (decimal: 12, 0.5, 3e-4)") end
    if type(v) ~= "number" or v ~= v then bad("expected a number") end
    if v == math.huge or v == -math.huge then bad("expected a finite number") end
    if spec.int and not args.whole(v) then bad("expected a whole number below 2^53 (9007199254740992)") end
    if spec.min and v < spec.min then bad(("below the least allowed, %s"):format(spec.min)) end
    if spec.max and v > spec.max then bad(("above the most allowed, %s"):format(spec.max)) end
  elseif type(d) == "boolean" then
    if v == "true" then v = true elseif v == "false" then v = false end
    if type(v) ~= "boolean" then bad("expected true or false") end
  else
    if type(v) == "number" then v = (v == math.floor(v) and math.abs(v) < 2^53) and ("%d"):format(v) or tostring(v) end
    if type(v) ~= "string" then bad("expected text") end
    if spec.choices then
      local ok = {}
      for _, c in ipairs(spec.choices) do ok[c] = true end
      local parts = {}
      if spec.list then for p in v:gmatch("[^,]+") do parts[#parts + 1] = p end else parts[1] = v end
      for _, p in ipairs(parts) do
        if not ok[p] then
          bad(("'%s' is not one of %s%s"):format(p, shown_choices(spec.choices), args.suggest(p, spec.choices, "")))
        end
      end
      if spec.list and #parts == 0 then bad("expected one or more of " .. shown_choices(spec.choices)) end
    end
    -- `layers = true`: blocks in lt.layers' grammar, checked before any model is there
    if spec.layers then
      local ok, err = pcall(lt.layers.check, v, "--" .. key)
      if not ok then error(("%s: %s"):format(name, tostring(err)), 0) end
    end
  end
  return v
end

-- a path arg's value names a file or folder that exists ("" stands for the study's default);
-- checked on the completed config, not on a preset's declaration (its files may be elsewhere)
local function check_path(name, key, v)
  if v == "" or lt.fs.exists(v) then return end
  error(("%s: --%s=%s: no such file or folder"):format(name, key, v), 0)
end

-- the study's usage text: every arg with its default and help, then the presets
local function help_text(s)
  local lines = { ("%s: %s"):format(s.name, s.description or ""),
                  ("usage: ltrun %s [--ARG=VALUE ...] [--seed=N]"):format(s.source or (s.name .. ".lua")), "args:" }
  for _, k in ipairs(sorted_keys(s.args)) do
    local spec = s.args[k]
    if not spec.internal then
      local extra = {}
      if spec.min then extra[#extra + 1] = ">= " .. spec.min end
      if spec.max then extra[#extra + 1] = "<= " .. spec.max end
      if spec.path then extra[#extra + 1] = "a file or folder" end
      if spec.layers then extra[#extra + 1] = "blocks: all, 3, -1, 10-15, middle:K, shallow:F, deep:F" end
      if spec.choices then
        extra[#extra + 1] = (spec.list and "any of " or "one of ") .. shown_choices(spec.choices)
      end
      lines[#lines + 1] = ("  --%s=%s\n      %s%s"):format(k, show(spec[1]), spec[2],
                                                    #extra > 0 and (" (" .. table.concat(extra, "; ") .. ")") or "")
    end
  end
  for _, p in ipairs(sorted_keys(s.presets or {})) do
    local kv = {}
    for _, k in ipairs(sorted_keys(s.presets[p])) do kv[#kv + 1] = k .. "=" .. tostring((preset_value(s.presets[p][k]))) end
    lines[#lines + 1] = ("preset --preset=%s: %s"):format(p, table.concat(kv, " "))
  end
  return table.concat(lines, "\n")
end

function M.study(s)
  assert(type(s) == "table", "study.study: expected a table {name =, args =, run =}")
  lt.check_options(s, "study.study", { "name", "help", "args", "presets", "run" })
  assert(type(s.name) == "string", "study.study: name = \"...\" is required")
  assert(type(s.run) == "function", ("study.study %s: run = function(cfg) ... end is required"):format(s.name))
  local specs = {}
  for k, spec in pairs(s.args or {}) do
    if type(spec) ~= "table" or spec[1] == nil or type(spec[2]) ~= "string" then
      error(("study.study %s: arg %s: expected { default, \"help text\", ... }"):format(s.name, tostring(k)), 2)
    end
    if spec.path and type(spec[1]) ~= "string" then
      error(("study.study %s: arg %s: path = true wants a text default (\"\" for none)"):format(s.name, tostring(k)), 2)
    end
    specs[k] = spec
  end
  local sourced = {}  -- presets with a source on some value
  if s.presets then
    local names = sorted_keys(s.presets)
    table.insert(names, 1, "")
    specs.preset = { "", "a named set of defaults (listed below)", choices = names }
    for p, values in pairs(s.presets) do
      for k, v in pairs(values) do
        if not specs[k] then error(("study.study %s: preset %s sets %s, which is not an arg"):format(s.name, p, k), 2) end
        local value, source = preset_value(v)
        if type(v) == "table" and (value == nil or type(source) ~= "string") then
          error(("study.study %s: preset %s: %s: expected a value or { value, \"source\" }"):format(s.name, p, k), 2)
        end
        check(s.name, k, specs[k], value)
        if source then sourced[p] = true end
      end
    end
  end
  local study = { name = s.name, description = s.help, args = specs, presets = s.presets }
  local body = s.run

  -- cfg (a table of values, or nil) completed: defaults, the preset, the given values checked
  function study.config(given)
    given = given or {}
    for _, k in ipairs(sorted_keys(given)) do
      if specs[k] == nil then
        local known = sorted_keys(specs)
        error(("%s: unknown arg --%s (known: %s)%s"):format(s.name, tostring(k), table.concat(known, ", "),
                                                            args.suggest(k, known)), 0)
      end
    end
    local cfg = {}
    for k, spec in pairs(specs) do cfg[k] = spec[1] end
    if given.preset and given.preset ~= "" then
      check(s.name, "preset", specs.preset, given.preset)
      for k, v in pairs(s.presets[given.preset]) do cfg[k] = (preset_value(v)) end
    end
    for k, v in pairs(given) do cfg[k] = check(s.name, k, specs[k], args.text(given, k) or v) end
    for _, k in ipairs(sorted_keys(specs)) do
      if specs[k].path then check_path(s.name, k, cfg[k]) end
      if specs[k].absent ~= nil and cfg[k] == specs[k].absent then cfg[k] = nil end
    end
    return cfg
  end

  -- the chosen preset's values, one line each with its source, and where an explicit value
  -- replaced it; {} without a preset
  function study.preset_lines(given)
    given = given or {}
    local name = given.preset
    if not name or name == "" then return {} end
    check(s.name, "preset", specs.preset, name)
    local lines = { ("preset %s:"):format(name) }
    for _, k in ipairs(sorted_keys(s.presets[name])) do
      local value, source = preset_value(s.presets[name][k])
      local line = ("  --%s=%s"):format(k, tostring(value))
      if source then line = line .. "  (" .. source .. ")" end
      if given[k] ~= nil and tostring(given[k]) ~= tostring(value) then
        line = line .. (" — replaced by the given --%s=%s"):format(k, tostring(given[k]))
      end
      lines[#lines + 1] = line
    end
    return lines
  end

  function study.run(given)
    local cfg = study.config(given)
    if given and given.preset and sourced[given.preset] then  -- (a preset without sources stays silent)
      for _, line in ipairs(study.preset_lines(given)) do print(line) end
    end
    if lt.run and lt.run.param then  -- (an arg not given is logged at its stand-in, `absent`)
      for _, k in ipairs(sorted_keys(specs)) do
        local v = cfg[k]
        if v == nil then v = specs[k].absent end
        if v ~= nil then lt.run.param(k, v) end
      end
    end
    return body(cfg)
  end

  function study.help() return help_text(study) end

  made[study] = true
  return study
end

-- whether v is a study study.study made
function M.is_study(v) return made[v] == true end

-- The study on the command line `argv` (ltrun runs it: lt.main, lib/lt/init.lua, when the script
-- returns it): --help prints the args (and keeps no run: args.help_shown); the args are checked before the study starts, so that a
-- mistake is one line and keeps no run; → what study.run returns.
function M.main(study, argv)
  study.source = argv[0] or study.source
  local opts, positional = args.parse(argv)
  if #positional > 0 then
    args.usage_error(("%s: unexpected argument '%s' (args are --key=value; --help lists them)"):format(
      study.name, positional[1]))
  end
  if opts.help then
    print(study.help())
    args.help_shown()
  end
  local ok, err = pcall(study.config, opts)
  if not ok then args.usage_error(err) end
  return study.run(opts)
end

return M
