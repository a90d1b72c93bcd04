-- experiments/bench/serve.lua: `ltrun serve` latency on a run with 1,000,000 metric rows (one
-- series): the run page's summary, the series downsampled to 2,000 and to 100,000 points,
-- against two baselines measured in the same run: a trivial API request (/api/info: the
-- HTTP + JSON floor) and a bare SQLite scan of the same rows in this process (the floor of
-- any server that reads the series). Requests go through curl; the median of --requests.
-- ltrun experiments/bench/serve.lua [--rows=1000000] [--requests=15]
local exp = require "lt.experiment"
local cfg = exp.args{ rows = 1000000, requests = 15 }

local function sh(cmd)
  local h = assert(io.popen(cmd))
  local out = h:read("*a")
  h:close()
  return out
end
assert(sh("command -v curl") ~= "", "experiments/bench/serve.lua: needs curl (apt-get install curl)")

local series_run
local t0 = lt.clock()
lt.run.child("series", function()
  series_run = lt.run.id()
  for i = 0, cfg.rows - 1 do lt.run.log("loss", 1 / (1 + i * 1e-3) + 0.01 * math.sin(i * 0.01), { step = i }) end
  lt.run.flush()
end)
io.stderr:write(("serve bench: %d rows written in %.1f s\n"):format(cfg.rows, lt.clock() - t0))

local db = lt.run.query("PRAGMA database_list")[1].file
local exe = sh("readlink /proc/$PPID/exe"):gsub("%s+$", "")  -- $PPID of this shell: ltrun
local server = assert(io.popen(("sh -c 'echo $$; exec \"%s\" --db \"%s\" serve --port 0 2>&1'"):format(exe, db)))
local pid = server:read("*l")
local url = assert((server:read("*l") or ""):match("(http://%S+)/"), "ltrun serve did not start")

local function median(xs)
  table.sort(xs)
  return xs[math.floor((#xs + 1) / 2)]
end
-- median wall time (ms) and bytes of GET path
local function request(path)
  local out = sh(("for i in $(seq %d); do curl -s -o /dev/null -w '%%{http_code} %%{time_total} %%{size_download}\\n' '%s%s'; done")
                   :format(cfg.requests, url, path))
  local times, bytes = {}, 0
  for code, t, b in out:gmatch("(%d+) ([%d.]+) (%d+)") do
    assert(code == "200", path .. ": HTTP " .. code)
    times[#times + 1] = tonumber(t) * 1000
    bytes = tonumber(b)
  end
  return median(times), bytes
end
local function scan_ms()
  local times = {}
  for _ = 1, cfg.requests do
    local s = lt.clock()
    lt.run.query("SELECT count(*), sum(value) FROM metrics WHERE run_id = ? AND name = 'loss'", series_run)
    times[#times + 1] = (lt.clock() - s) * 1000
  end
  return median(times)
end

local info_ms = request("/api/info")
local scan = scan_ms()
local cases = {
  { "run_page", "/api/runs/" .. series_run },
  { "series_2000", "/api/runs/" .. series_run .. "/metrics?name=loss&points=2000" },
  { "series_100000", "/api/runs/" .. series_run .. "/metrics?name=loss&points=100000" },
}
for _, c in ipairs(cases) do c.ms, c.bytes = request(c[2]) end
os.execute("kill -INT " .. pid)
server:close()

lt.run.param("rows", cfg.rows)
lt.run.log("info_ms", info_ms)
lt.run.log("sqlite_scan_ms", scan)
print(("%-14s %10s %10s %13s %9s"):format("request", "ms", "KiB", "vs /api/info", "vs scan"))
print(("%-14s %10.2f %10s %13s %9s"):format("/api/info", info_ms, "", "1.0", ""))
print(("%-14s %10.2f %10s %13s %9s"):format("sqlite scan", scan, "", "", "1.0"))
for _, c in ipairs(cases) do
  lt.run.log(c[1] .. "_ms", c.ms)
  lt.run.log(c[1] .. "_vs_info", c.ms / info_ms)
  lt.run.log(c[1] .. "_vs_scan", c.ms / scan)
  print(("%-14s %10.2f %10.1f %13.1f %9.2f"):format(c[1], c.ms, c.bytes / 1024, c.ms / info_ms, c.ms / scan))
end
