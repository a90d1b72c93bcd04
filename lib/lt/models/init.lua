-- lt/models: the embedded default models of the studies, by name, made on first use.
--   local path = lt.models.get("tiny-qwen3")
-- A name is a recipe (lt.models.tiny_lm, lt.models.tiny_math or lt.models.tiny_code) with fixed
-- arguments and the fixed seed 1, so that it is the same model wherever it is made. The folder is
-- $LTRUN_MODELS/NAME (default ./models/NAME). A missing model is made in a child run `model:NAME`
-- under an exclusive lock on $LTRUN_MODELS/.NAME.lock: a second process asking for it meanwhile
-- waits and then finds it made (never makes it twice); the lock goes with the process however it
-- ends, so a killed maker leaves no stale lock.
local ffi = require "ffi"
local M = {}

-- name → { recipe module, its args }; args may be a function (of nothing) for recipes that
-- depend on another model
M.recipes = {
  ["tiny-qwen3"] = { "lt.models.tiny_lm", {} },
  ["tiny-qwen3-8l"] = { "lt.models.tiny_lm", { steps = 600 } },
  ["tiny-nemotron"] = { "lt.models.tiny_lm", function()
    return { arch = "nemotron_h", pattern = "M*M-M*M-", layers = 8, chunk = 16, steps = 300,
             tokenizer = M.get("tiny-qwen3") .. "/tokenizer.json" }
  end },
  ["tiny-math"] = { "lt.models.tiny_math", {} },
  ["tiny-math-8l"] = { "lt.models.tiny_math", { layers = 8, steps = 600 } },
  ["tiny-code"] = { "lt.models.tiny_code", {} },
  -- the depth of tiny-math-8l, for layer scans of code set against math ones (Figure 3b)
  ["tiny-code-8l"] = { "lt.models.tiny_code", { layers = 8, steps = 600 } },
  ["tiny-agent"] = { "lt.models.tiny_agent", {} },
}

-- the models folder: M.folder when a script set it, else $LTRUN_MODELS, else ./models
function M.dir() return M.folder or os.getenv("LTRUN_MODELS") or "models" end

local function exists(path)
  local f = io.open(path)
  if f then f:close() end
  return f ~= nil
end

ffi.cdef [[
int open(const char *path, int flags, int mode);
int flock(int fd, int op);
int close(int fd);
]]
local O_WRONLY, O_CREAT, O_CLOEXEC, LOCK_EX = 1, 64, 524288, 2

-- runs fn() holding an exclusive lock on `path` (a file, made if missing)
function M.with_lock(path, fn)
  local fd = ffi.C.open(path, O_WRONLY + O_CREAT + O_CLOEXEC, 420)
  if fd < 0 then error(("lt.models: cannot open the lock file %s (errno %d)"):format(path, ffi.errno()), 0) end
  if ffi.C.flock(fd, LOCK_EX) ~= 0 then
    ffi.C.close(fd)
    error(("lt.models: cannot lock %s (errno %d)"):format(path, ffi.errno()), 0)
  end
  local ok, err = pcall(fn)
  ffi.C.close(fd)  -- releases the lock
  if not ok then error(err, 0) end
end

-- the path of model `name`, made first when missing (see above)
function M.get(name)
  local r = M.recipes[name]
  if not r then
    local known = {}
    for k in pairs(M.recipes) do known[#known + 1] = k end
    table.sort(known)
    error(("lt.models.get: no recipe '%s' (known: %s)"):format(tostring(name), table.concat(known, ", ")), 2)
  end
  local path = M.dir() .. "/" .. name
  if exists(path .. "/config.json") then return path end
  lt.fs.mkdir(M.dir())
  M.with_lock(M.dir() .. "/." .. name .. ".lock", function()
    if exists(path .. "/config.json") then return end  -- another process made it meanwhile
    io.stderr:write(("no model at %s: making it (lt.models recipe %s)\n"):format(path, name))
    local recipe = require(r[1])
    local given = type(r[2]) == "function" and r[2]() or r[2]
    local cfg = {}
    for k, spec in pairs(recipe.args) do cfg[k] = spec[1] end
    for k, v in pairs(given) do cfg[k] = v end
    cfg.out, cfg.seed = path, 1
    lt.run.child("model:" .. name, function()
      for k, v in pairs(cfg) do lt.run.param(k, v) end
      return recipe.make(cfg)
    end)
  end)
  return path
end

-- The common tail of the recipes (tiny_lm, tiny_math, tiny_code, tiny_agent): a fresh model of
-- cfg's shape (study.model_args; a Qwen3 unless `new` says otherwise) with a BPE trained on the
-- text file `corpus` (in the recipe's work folder), the file packed, lt.train.causal_lm on it
-- with cfg's training args and the recipe's `checkpoints` (study.checkpoints), saved to cfg.out
-- (replacing a folder ltrun made). cfg.seed fixes init, packing and data order. new: more
-- lt.model.new fields (arch, pattern, chunk, tokenizer; tokenizer_corpus: the BPE's own sample
-- instead of `corpus`). → the model, the training result, the packing
function M.pretrain(cfg, corpus, checkpoints, new)
  local study = require "lt.study"
  local work = corpus:match("^(.*)/[^/]*$")
  local init = work .. "/init"
  local spec = { out = init, arch = "qwen3", layers = cfg.layers, hidden = cfg.hidden, heads = cfg.heads,
                 kv_heads = cfg.kv_heads, vocab = cfg.vocab, corpus = { corpus }, seed = cfg.seed }
  for k, v in pairs(new or {}) do
    if k == "tokenizer_corpus" then spec.corpus = { v } else spec[k] = v end
  end
  lt.model.new(spec)
  local packed = lt.data.pack{ tokenizer = init, inputs = { corpus }, out = work .. "/packed", val = 0.01,
                               seed = cfg.seed and 1 or nil }
  local m = lt.model.load(init):train_only("all")
  local r = lt.train.causal_lm(m, study.train_options(cfg, { data = work .. "/packed", decay = "cosine", seed = cfg.seed,
                                                          checkpoint_dir = checkpoints.checkpoint_dir,
                                                          checkpoint_every = checkpoints.checkpoint_every,
                                                          resume = checkpoints.resume }))
  lt.fs.remove(cfg.out)  -- refused when --out names a folder that ltrun did not make
  lt.fs.mkdir(cfg.out)   -- marked as ltrun's, so that a later run may replace it
  m:save(cfg.out)
  return m, r, packed
end

-- `path` unless it is "" (then model `name`, made when missing)
function M.resolve(path, name)
  if path and path ~= "" then return path end
  return M.get(name)
end

return M
