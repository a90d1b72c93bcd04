-- experiments/bench/scan.lua: layer-scan scheduler throughput (lt.scan) on this machine:
-- the same J single-block trainings (a random tiny model, a few steps each) run with 1 worker
-- and with 2 (or --workers=K) worker processes sharing the CPUs, jobs per second as a ratio
-- to 1 worker measured in the same run. With --devices=0,1 on a GPU node the second pass
-- runs one job per GPU instead (--device cuda). Each job is a child run of its pass.
local exp = require "lt.study"
local scan = require "lt.scan.workers"
local cfg = exp.args{ jobs = 4, workers = 2, devices = "", layers = 8, hidden = 128, steps = 8, seq_len = 64,
                      micro_batch = 8, job = "", model = "" }

if cfg.job ~= "" then  -- one job: train block <job> alone for `steps` steps
  local m = lt.model.load(cfg.model)
  m:train_only(tonumber(cfg.job:match("%d+")) % m.n_layers)
  if lt.device ~= "cpu" then m = m:to(lt.device) end
  local rows = lt.randint(0, m.config.vocab_size, { 64, cfg.seq_len + 1 })
  lt.train.causal_lm(m, { data = rows, steps = cfg.steps, lr = 1e-3, seq_len = cfg.seq_len,
                          micro_batch = cfg.micro_batch, log = false, progress = false })
  return
end

local path, cleanup = exp.temp_model{ layers = cfg.layers, hidden = cfg.hidden, heads = 4, kv_heads = 2,
                                      vocab = 2048, seed = 1 }
local jobs = {}
for j = 1, cfg.jobs do jobs[j] = "job_" .. (j - 1) end
local function pass(name, workers, devices)
  return lt.run.child(name, function()
    local res = scan.run{ jobs = jobs, workers = workers, devices = devices, quiet = true,
                          argv = function(job)
                            return { arg[0], "--job=" .. job, "--model=" .. path, "--steps=" .. cfg.steps,
                                     "--seq_len=" .. cfg.seq_len, "--micro_batch=" .. cfg.micro_batch }
                          end }
    if #res.crashed + #res.failed > 0 then error("bench scan: " .. scan.report(res), 0) end
    local rate = #jobs / res.wall_s
    lt.run.log{ jobs_per_s = rate, wall_s = res.wall_s, workers = res.workers, threads = res.threads }
    return rate, res
  end)
end
local one, r1 = pass("workers_1", 1)
local many, rk = pass(cfg.devices ~= "" and "devices" or ("workers_" .. cfg.workers), cfg.workers, cfg.devices)
lt.run.log{ jobs_per_s_1 = one, jobs_per_s_k = many, ratio = many / one }
print(("%d jobs (block trainings of %d steps), %d CPUs"):format(#jobs, cfg.steps, lt.proc.cpus()))
print(("1 worker (%d threads): %.3f jobs/s (%.1f s)"):format(r1.threads, one, r1.wall_s))
print(("%d workers (%s): %.3f jobs/s (%.1f s); ratio %.2f"):format(rk.workers,
      cfg.devices ~= "" and ("devices " .. cfg.devices) or (rk.threads .. " threads each"), many, rk.wall_s, many / one))
cleanup()
