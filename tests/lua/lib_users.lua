-- tests/lua/lib_users.lua: the layout of studies and library (issue 37). Every study is a
-- folder experiments/STUDY/ with STUDY.lua and README.md (experiments/ holds no loose .lua);
-- every module of lib/lt/ serves two or more studies: reached from two study scripts through
-- what they require (transitively, study folders' modules included), or from every study
-- through the prelude lib/lt/init.lua. A module that one study alone uses belongs in that
-- study's folder. Requires are read as the string literals of the code (comments left out),
-- so a registry's names ("lt.models.tiny_math") and a prefix ("lt.scan.task." .. task) count.
local T = require "lt.test"
local root = debug.getinfo(1, "S").source:match("^@(.*)/tests/lua/[^/]*$")

local function read(path)
  local f = assert(io.open(path))
  local s = f:read("*a")
  f:close()
  return s
end

-- the module names a Lua source names in its string literals (lt.* and experiments.*)
local function names_in(src)
  local out, i, n = {}, 1, #src
  while i <= n do
    local c = src:sub(i, i)
    if src:sub(i, i + 1) == "--" then  -- a comment: to the line's end, or a long one
      local eq = src:match("^%[(=*)%[", i + 2)
      if eq then i = select(2, src:find("]" .. eq .. "]", i, true)) or n else i = (src:find("\n", i, true) or n) end
    elseif c == '"' or c == "'" then
      local j, lit = i + 1, {}
      while j <= n and src:sub(j, j) ~= c do
        if src:sub(j, j) == "\\" then j = j + 1 end
        lit[#lit + 1] = src:sub(j, j)
        j = j + 1
      end
      local s = table.concat(lit)
      if s:match("^lt%.[%w_.]+$") or s:match("^experiments%.[%w_.]+$") then out[#out + 1] = s end
      i = j
    elseif src:match("^%[=*%[", i) then  -- a long string: not a module name
      local eq = src:match("^%[(=*)%[", i)
      i = select(2, src:find("]" .. eq .. "]", i, true)) or n
    end
    i = i + 1
  end
  return out
end

-- lib/lt's modules: name → file
local lib = {}
local function walk(dir, prefix)
  for _, e in ipairs(lt.fs.list(dir)) do
    local p = dir .. "/" .. e
    if lt.fs.is_dir(p) then walk(p, prefix .. "." .. e)
    elseif e == "init.lua" then lib[prefix] = p
    elseif e:match("%.lua$") then lib[prefix .. "." .. e:sub(1, -5)] = p end
  end
end
walk(root .. "/lib/lt", "lt")
-- the prelude itself, the tests' harness, and the REPL's helpers (the app layer's: runtime/cli
-- loads lt.repl for the REPL, `?x` and `ltrun doc api`; no study requires it)
lib["lt"], lib["lt.test"], lib["lt.repl"] = nil, nil, nil

local function file_of(name)
  if lib[name] then return lib[name] end
  local p = root .. "/" .. name:gsub("%.", "/") .. ".lua"
  if name:match("^experiments%.") and lt.fs.exists(p) then return p end
end

-- every module a file reaches, transitively: set name → true
local function reach(file, seen)
  seen = seen or {}
  for _, name in ipairs(names_in(read(file))) do
    local targets = {}
    if name:sub(-1) == "." then
      for m in pairs(lib) do if m:sub(1, #name) == name then targets[#targets + 1] = m end end
    else
      targets[1] = name
    end
    for _, m in ipairs(targets) do
      local f = file_of(m)
      if f and not seen[m] then
        seen[m] = true
        reach(f, seen)
      end
    end
  end
  return seen
end

local studies = {}
T.case("every study is a folder experiments/STUDY/ with STUDY.lua and README.md", function()
  local loose = {}
  for _, e in ipairs(lt.fs.list(root .. "/experiments")) do
    local p = root .. "/experiments/" .. e
    if lt.fs.is_dir(p) then
      if e ~= "bench" and e:sub(1, 1) ~= "_" then  -- the benchmarks; a template to copy
        T.ok(lt.fs.exists(p .. "/" .. e .. ".lua"), "experiments/" .. e .. "/" .. e .. ".lua")
        T.ok(lt.fs.exists(p .. "/README.md"), "experiments/" .. e .. "/README.md")
        studies[#studies + 1] = e
      end
    elseif e:match("%.lua$") then
      loose[#loose + 1] = e
    end
  end
  table.sort(loose)
  T.eq(table.concat(loose, ", "), "", "loose scripts in experiments/ (a study is a folder)")
  T.ok(#studies >= 10, ("studies found: %d"):format(#studies))
end)

T.case("every module of lib/lt/ serves two or more studies", function()
  local prelude = reach(root .. "/lib/lt/init.lua")
  local users = {}
  for _, s in ipairs(studies) do
    for m in pairs(reach(("%s/experiments/%s/%s.lua"):format(root, s, s))) do
      users[m] = users[m] or {}
      users[m][#users[m] + 1] = s
    end
  end
  local lonely = {}
  for m in pairs(lib) do
    local n = users[m] and #users[m] or 0
    if not prelude[m] and n < 2 then
      lonely[#lonely + 1] = ("%s (%s)"):format(m, n == 0 and "no study" or users[m][1] .. " alone")
    end
  end
  table.sort(lonely)
  T.eq(table.concat(lonely, "; "), "", "lib/lt modules with fewer than two studies: move each into its study's folder")
end)

T.case("the reader of requires finds them, and only them", function()
  local got = names_in([=[local a = require "lt.x" -- require "lt.commented"
    --[==[ require "lt.long_comment" ]==]
    local b = require('lt.y.' .. k); local c = "lt.z"; local d = [[lt.long_string]] .. "not.lt"
    local e = require "experiments.s.mod"]=])
  T.eq(table.concat(got, ","), "lt.x,lt.y.,lt.z,experiments.s.mod")
end)

T.finish()
