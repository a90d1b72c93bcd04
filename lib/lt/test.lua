-- lt/test.lua: a small test harness for tests/lua/*.lua. Each case runs protected; the
-- script ends with T.finish(), which prints "N passed, M failed" and fails if any did.
local T = { passed = 0, failed = 0 }

function T.case(name, fn)
  local ok, err = xpcall(fn, debug.traceback)
  if ok then
    T.passed = T.passed + 1
  else
    T.failed = T.failed + 1
    io.stderr:write(("FAIL %s: %s\n"):format(name, tostring(err)))
  end
end

local function show(v)
  if type(v) == "string" then return ("%q"):format(v) end
  return tostring(v)
end

function T.eq(a, b, what)
  if a ~= b then error(("%s: expected %s, got %s"):format(what or "eq", show(b), show(a)), 2) end
end

function T.near(a, b, tol, what)
  tol = tol or 1e-6
  if type(a) ~= "number" or math.abs(a - b) > tol * math.max(1, math.abs(b)) then
    error(("%s: expected %s ± %g, got %s"):format(what or "near", show(b), tol, show(a)), 2)
  end
end

function T.ok(cond, what)
  if not cond then error(what or "expected a true value", 2) end
end

-- T.raises(fn, pattern): fn must fail with a message matching the Lua pattern
function T.raises(fn, pattern, what)
  local ok, err = pcall(fn)
  if ok then error((what or "raises") .. ": expected an error, none was raised", 2) end
  if pattern and not tostring(err):find(pattern) then
    error(("%s: error %q does not match %q"):format(what or "raises", tostring(err), pattern), 2)
  end
  return err
end

function T.same_table(a, b, what)
  local ja, jb = lt.json.encode(a), lt.json.encode(b)
  if ja ~= jb then error(("%s: expected %s, got %s"):format(what or "same_table", jb, ja), 2) end
end

function T.finish()
  print(("%d passed, %d failed"):format(T.passed, T.failed))
  if T.failed > 0 then error(("%d test case(s) failed"):format(T.failed), 0) end
end

-- T.greedy(m, prompt, got, tol, what): `got` (a list of token ids) is a greedy continuation
-- of `prompt` (ids) under m up to rounding: before each token, a full forward pass over the
-- prefix so far gives it a logit within `tol` of the largest. Greedy decoding (KV cache, decode
-- state, a padded batch) and a full pass compute the logits in other orders, so a host whose
-- BLAS kernels round otherwise may break a near tie the other way; an exact argmax equality
-- would then fail for no fault. The caller derives tol from its error estimate.
function T.greedy(m, prompt, got, tol, what)
  what = what or "greedy"
  if type(tol) ~= "number" or not (tol >= 0) then  -- NaN included
    error(("%s: the tolerance must be a number >= 0, got %s"):format(what, tostring(tol)), 2)
  end
  if type(got) ~= "table" then error(("%s: expected a list of token ids, got %s"):format(what, type(got)), 2) end
  local seq = {}
  for i, v in ipairs(prompt) do seq[i] = v end
  for k, t in ipairs(got) do
    local logits = m:forward(seq, { logits = "last" }).logits[0][-1]
    if type(t) ~= "number" or t ~= math.floor(t) or t < 0 or t >= logits:size(0) then
      error(("%s: new token %d is %s, not a token id of 0..%d"):format(what, k, tostring(t), logits:size(0) - 1), 2)
    end
    local best = logits:max()
    if not (best - logits[t] <= tol) then
      error(("%s: new token %d (id %d) has logit %.9g, %.3g below the largest %.9g (id %d) of a full pass; tolerance %g")
            :format(what, k, t, logits[t], best - logits[t], best, logits:argmax(), tol), 2)
    end
    seq[#seq + 1] = t
  end
end

-- the whole file at `path` (an error names it when it cannot be opened)
function T.read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

return T
