-- experiments/bench/serve.lua: `ltrun serve` latency on a run with 1,000,000 metric rows (one
-- series): the run page's summary, the series downsampled to 2,000 and to 100,000 points,
-- against two baselines measured in the same run: a trivial API request (/api/info: the
-- HTTP + JSON floor) and a bare SQLite scan of the same rows in this process (the floor of
-- any server that reads the series). And a sweep of --children child runs (--child_points of
-- `loss` each, and `val_loss` every 10th step): the compare page's two requests for all of them
-- (/api/compare, /api/compare/metrics: it sent two per child before), a page of the runs list
-- at an offset, and the results table (/api/table) over every run sorted by a metric's min, a
-- param and a last value at an offset. With the defaults the store holds 2,003 runs and
-- 3.2M metric rows. Requests go through curl; the median of --requests.
-- The results table is also timed in headless Chromium (experiments/bench/serve_table.js):
-- --table_rounds clicks on its column headers (a sort) each followed by three clicks on "more ›"
-- (the next page), each from the click to the rows drawn; logged as table_sort_p95_ms,
-- table_page_p95_ms and table_p95_ms (both kinds together). Skipped when there is no Chromium.
-- The server, curl, node and Chromium run from argv arrays (lt.proc), never through a shell.
-- ltrun experiments/bench/serve.lua [--rows=1000000] [--requests=15] [--children=2000] [--child_points=1000] [--table_rounds=20]
local exp = require "lt.study"
local cfg = exp.args{ rows = 1000000, requests = 15, children = 2000, child_points = 1000, table_rounds = 20 }

local ok_curl, _, curl_ok = pcall(exp.capture, "curl", { "--version" })
assert(ok_curl and curl_ok, "experiments/bench/serve.lua: needs curl (apt-get install curl)")

local series_run
local t0 = lt.clock()
lt.run.child("series", function()
  series_run = lt.run.id()
  for i = 0, cfg.rows - 1 do lt.run.log("loss", 1 / (1 + i * 1e-3) + 0.01 * math.sin(i * 0.01), { step = i }) end
  lt.run.flush()
end)
io.stderr:write(("serve bench: %d rows written in %.1f s\n"):format(cfg.rows, lt.clock() - t0))
local first, last
lt.run.child("sweep", function()
  for i = 1, cfg.children do
    lt.run.child("lr_" .. i, function()
      first = first or lt.run.id()
      last = lt.run.id()
      lt.run.param("lr", 1e-5 * i)
      lt.run.param("width", 64 * (1 + i % 7))
      for s = 0, cfg.child_points - 1 do
        lt.run.log("loss", (1 + i / cfg.children) / (1 + s), { step = s })
        -- a minimum in the middle of the run, at a place that depends on the child
        if s % 10 == 0 then lt.run.log("val_loss", 1 + ((s / 10 - i % 50) / 50) ^ 2 + ((i * 7919) % 1000) / 1e4, { step = s }) end
      end
    end)
  end
end)
lt.run.flush()
assert(last - first + 1 == cfg.children, "experiments/bench/serve.lua: the sweep's children are not numbered in a row")

local sweep_id = lt.run.query("SELECT parent_id FROM runs WHERE id = ?", first)[1].parent_id
local metric_rows = lt.run.query("SELECT count(*) AS n FROM metrics")[1].n
local run_count = lt.run.query("SELECT count(*) AS n FROM runs")[1].n
io.stderr:write(("serve bench: %d runs, %d metric rows\n"):format(run_count, metric_rows))
local db = lt.run.query("PRAGMA database_list")[1].file
local log = os.tmpname()
local pid = lt.proc.spawn({ lt.proc.exe, "--db", db, "serve", "--port", "0" }, { stdout = log, stderr = log })
local url
for _ = 1, 200 do  -- its first line names the address (10 s at most)
  local f = io.open(log)
  local text = f and f:read("*a") or ""
  if f then f:close() end
  url = text:match("(http://%S+)/")
  if url or lt.proc.wait(pid, 0) then break end
  lt.proc.sleep(0.05)
end
if not url then lt.proc.kill(pid); error("experiments/bench/serve.lua: ltrun serve did not start (" .. log .. ")", 0) end

local function median(xs)
  table.sort(xs)
  return xs[math.floor((#xs + 1) / 2)]
end
-- median wall time (ms) and bytes of GET path
local function request(path)
  local times, bytes = {}, 0
  for _ = 1, cfg.requests do
    local out = exp.capture("curl", { "-s", "-o", "/dev/null", "-w", "%{http_code} %{time_total} %{size_download}",
                                      url .. path })
    local code, t, b = out:match("(%d+) ([%d.]+) (%d+)")
    assert(code == "200", path .. ": HTTP " .. tostring(code))
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

local cases = {
  { "run_page", "/api/runs/" .. series_run },
  { "series_2000", "/api/runs/" .. series_run .. "/metrics?name=loss&points=2000" },
  { "series_100000", "/api/runs/" .. series_run .. "/metrics?name=loss&points=100000" },
  { "compare_runs", ("/api/compare?ids=%d-%d"):format(first, last) },
  { "compare_loss", ("/api/compare/metrics?ids=%d-%d&name=loss&points=100"):format(first, last) },
  { "runs_page_11", "/api/runs?parent=all&limit=100&offset=1000" },
  { "table_min", "/api/table?parent=all&params=lr,width&metrics=loss,val_loss&sort=min:val_loss&order=asc&limit=50&offset=1000" },
  { "table_param", "/api/table?parent=all&params=lr,width&metrics=loss,val_loss&sort=param:width&order=desc&limit=50&offset=1500" },
  { "table_last", ("/api/table?parent=%d&params=lr,width&metrics=loss,val_loss&sort=last:loss&limit=50&offset=500"):format(sweep_id) },
}
local function p95(xs)
  table.sort(xs)
  return xs[math.max(1, math.ceil(#xs * 0.95))]
end
local chrome  -- the first of these on PATH
for _, name in ipairs{ "chromium-headless-shell", "chromium" } do
  for dir in (os.getenv("PATH") or ""):gmatch("[^:]+") do
    local f = io.open(dir .. "/" .. name)
    if f then f:close(); chrome = chrome or dir .. "/" .. name end
  end
end

local info_ms, scan, browser
local measured, why = pcall(function()  -- the server is stopped whatever fails here
  info_ms = request("/api/info")
  scan = scan_ms()
  for _, c in ipairs(cases) do c.ms, c.bytes = request(c[2]) end
  -- the results table in headless Chromium: click → rows drawn
  if chrome then
    local here = arg[0]:match("^(.*)/[^/]+$") or "."
    local profile = os.tmpname()
    os.remove(profile)
    lt.fs.mkdir(profile)  -- marked as ltrun's, so lt.fs.remove may delete Chromium's profile below
    local out = exp.capture("node", { here .. "/serve_table.js", chrome, url .. "/",
                                      "#/table?parent=all&params=lr,width&metrics=loss,val_loss", tostring(cfg.table_rounds), profile })
    browser = assert(lt.json.decode(out:match("{.*}") or "null"), "experiments/bench/serve.lua: serve_table.js said: " .. out)
    -- Chromium's helper processes outlive the browser by a moment and still write into the
    -- profile ("Directory not empty"): try again for up to 5 s
    local removed, why
    for _ = 1, 50 do
      removed, why = pcall(lt.fs.remove, profile)
      if removed then break end
      lt.proc.sleep(0.1)
    end
    if not removed then io.stderr:write("serve bench: Chromium's profile stays behind: " .. tostring(why) .. "\n") end
  else
    io.stderr:write("serve bench: no Chromium (chromium-headless-shell or chromium): the table is not timed in a browser\n")
  end
end)
lt.proc.kill(pid, "INT")
lt.proc.wait(pid, 10)
os.remove(log)
if not measured then error(why, 0) end

lt.run.param("rows", cfg.rows)
lt.run.param("children", cfg.children)
lt.run.param("runs", run_count)
lt.run.param("metric_rows", metric_rows)
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
if browser then
  local all = {}
  for _, k in ipairs{ "sort", "page" } do for _, v in ipairs(browser[k]) do all[#all + 1] = v end end
  local sort_p95, page_p95, all_p95 = p95(browser.sort), p95(browser.page), p95(all)
  lt.run.log("table_sort_p95_ms", sort_p95)
  if page_p95 then lt.run.log("table_page_p95_ms", page_p95) end  -- none when the table is one page
  lt.run.log("table_p95_ms", all_p95)
  lt.run.log("table_clicks", #all)
  lt.run.log("table_fetch_p95_ms", p95(browser.fetch))
  print(("results table in Chromium (%s; sorted by %s): %d sorts p95 %.1f ms, %d pages p95 %s ms, all p95 %.1f ms (max %.1f); its /api/table requests p95 %.1f ms"):format(
    browser.total, table.concat(browser.heads, " "), #browser.sort, sort_p95, #browser.page,
    page_p95 and ("%.1f"):format(page_p95) or "-", all_p95, all[#all], p95(browser.fetch)))
end
