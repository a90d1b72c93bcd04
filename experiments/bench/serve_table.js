// experiments/bench/serve_table.js: the results table of `ltrun serve` (#/table) timed in
// headless Chromium, driven over the DevTools protocol on a pipe (tests/serve/chromium.js, as the browser test):
// from a click on a column header (sort) or on "more ›" (the next page) until the page has
// drawn the new rows (document.body.dataset.ready). Prints one JSON line:
// {"sort": [ms, ...], "page": [ms, ...], "fetch": [ms of each click's /api/table request], "rows":
// N, "total": "..."}. Run by experiments/bench/serve.lua.
// node serve_table.js CHROME URL HASH ROUNDS PROFILE_DIR
"use strict";
const [chrome, url, hash, rounds, profile] = process.argv.slice(2);
const { launch, newPage } = require(require("path").join(__dirname, "../../tests/serve/chromium.js"));
const { proc, send } = launch(chrome, profile);

(async () => {
  const { sessionId, evaluate } = await newPage(send);
  // runs `action` (JS) in the page and waits, in the page, until it is ready again: the time
  // from the click to the rows drawn, measured by the page's own clock
  const fetchMs = [];  // of each click, its /api/table request (resource timing: request to last byte)
  const timed = async action => {
    const ms = await evaluate(`new Promise((resolve, reject) => {
    performance.clearResourceTimings();
    delete document.body.dataset.ready;
    const t0 = performance.now();
    ${action};
    const poll = () => { const r = document.body.dataset.ready;
      if (r === "1") resolve(performance.now() - t0); else if (r === "error") reject(new Error(document.getElementById("main").textContent));
      else if (performance.now() - t0 > 30000) reject(new Error("not ready after 30 s")); else setTimeout(poll, 1); };
    poll(); })`);
    fetchMs.push(await evaluate("performance.getEntriesByType('resource').filter(e => e.name.includes('/api/table')).reduce((a, e) => a + e.duration, 0)"));
    return ms;
  };
  await send("Page.enable", {}, sessionId);
  await send("Page.navigate", { url: url + hash }, sessionId);
  for (let i = 0; i < 300; i++) {
    await new Promise(r => setTimeout(r, 100));
    if (await evaluate("document.body.dataset.ready === '1'").catch(() => false)) break;
  }
  const sort = [], page = [];
  const heads = await evaluate("[...document.querySelectorAll('th[data-sort]')].map(th => th.dataset.sort)");
  for (let i = 0; i < +rounds; i++) {
    const key = heads[i % heads.length];
    sort.push(await timed(`document.querySelector('th[data-sort="${key}"]').click()`));
    for (let k = 0; k < 3; k++)
      if (await evaluate("!!document.getElementById('t-next')")) page.push(await timed("document.getElementById('t-next').click()"));
  }
  const rows = await evaluate("document.querySelectorAll('table.results tbody tr').length");
  const total = await evaluate("document.getElementById('table-count').textContent");
  console.log(JSON.stringify({ sort, page, fetch: fetchMs, rows, total, heads }));
  proc.on("exit", () => process.exit(0));  // its profile folder complete, for the caller to remove
  proc.kill();
})().catch(e => { console.error(String(e.stack || e)); proc.kill(); process.exit(1); });
