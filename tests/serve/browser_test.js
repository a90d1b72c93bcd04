// tests/serve/browser_test.js: the UI of `ltrun serve` in headless Chromium, driven over the
// DevTools protocol on a pipe (--remote-debugging-pipe: no WebSocket, no npm package). Checks
// the DOM after each page's scripts ran: the runs page, a run page (uPlot curves drawn, the
// layer heatmap and profile, evaluation with drill-down, the SVG artifact, children), compare,
// SQL (a write refused), and a running run whose curve grows without a reload while another
// process logs to it. Keeps a screenshot of the run page.
// node browser_test.js CHROME URL STUDY_ID CHILD_IDS LIVE_ID PROFILE_DIR SCREENSHOT.png
//   (run by tests/cli/serve_browser.sh)
"use strict";
const { spawn } = require("child_process");
const fs = require("fs");
const [chrome, url, studyId, childIds, liveId, profile, screenshot] = process.argv.slice(2);

const proc = spawn(chrome, ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
  "--disable-component-update", "--disable-sync", "--no-first-run", `--user-data-dir=${profile}`,
  "--remote-debugging-pipe", "--window-size=1280,2000", "about:blank"],
  { stdio: ["ignore", "ignore", "ignore", "pipe", "pipe"] });
const toChrome = proc.stdio[3], fromChrome = proc.stdio[4];
let nextId = 0, buf = "";
const pending = new Map();
fromChrome.on("data", d => {
  buf += d.toString();
  let i;
  while ((i = buf.indexOf("\0")) >= 0) {
    const msg = JSON.parse(buf.slice(0, i));
    buf = buf.slice(i + 1);
    if (msg.id !== undefined && pending.has(msg.id)) { pending.get(msg.id)(msg); pending.delete(msg.id); }
  }
});
function send(method, params = {}, sessionId) {
  return new Promise((resolve, reject) => {
    const m = { id: ++nextId, method, params };
    if (sessionId) m.sessionId = sessionId;
    pending.set(m.id, r => r.error ? reject(new Error(method + ": " + JSON.stringify(r.error))) : resolve(r.result));
    toChrome.write(JSON.stringify(m) + "\0");
  });
}
const sleep = ms => new Promise(r => setTimeout(r, ms));

let passed = 0, failed = 0;
function check(what, ok, detail) {
  if (ok) passed++;
  else { failed++; console.error("FAIL: " + what + (detail !== undefined ? " (" + JSON.stringify(detail) + ")" : "")); }
}

(async () => {
  const { targetId } = await send("Target.createTarget", { url: "about:blank" });
  const { sessionId } = await send("Target.attachToTarget", { targetId, flatten: true });
  const evaluate = async expr => {
    const r = await send("Runtime.evaluate", { expression: expr, returnByValue: true, awaitPromise: true }, sessionId);
    if (r.exceptionDetails) throw new Error(expr + ": " + JSON.stringify(r.exceptionDetails));
    return r.result.value;
  };
  // open(hash): navigates and waits until the page says it is ready (or failed)
  const open = async hash => {
    await evaluate(`delete document.body.dataset.ready; location.href = ${JSON.stringify(url + hash)}; true`);
    let ready = null;
    for (let i = 0; i < 300 && !ready; i++) { await sleep(100); ready = await evaluate("document.body.dataset.ready || null").catch(() => null); }
    check(`${hash}: ready`, ready === "1", ready);
  };
  const q = (sel, what = "e.length") => evaluate(`(() => { const e = document.querySelectorAll(${JSON.stringify(sel)}); return ${what}; })()`);
  await send("Page.enable", {}, sessionId);
  await send("Page.navigate", { url }, sessionId);
  await sleep(500);

  await open("#/");
  const rows = await q("input.pick");
  check("runs page: a row per run (the study, its 2 children, the live run)", rows === 4, rows);
  check("runs page: links to the study", (await q(`a[href="#/run/${studyId}"]`)) >= 1);

  await open(`#/run/${studyId}`);
  const charts = await q(".uplot", "[...e].map(u => ({ drawn: +u.dataset.drawn, points: +u.dataset.points, canvas: u.querySelector('canvas') ? u.querySelector('canvas').width : 0 }))");
  check("run page: uPlot charts for loss, lr and the p_max profile", charts.length >= 3, charts);
  check("run page: every chart drawn on a canvas", charts.every(c => c.drawn >= 1 && c.canvas > 0), charts);
  check("run page: the loss curve has its 50 points", (await q('[data-metric="loss"] .uplot', "e[0] && e[0].dataset.points")) === "50");
  check("run page: heatmap of 3 groups x 3 layers", (await q("svg.heatmap rect")) === 9);
  check("run page: rerun command", new RegExp(`rerun ${studyId}$`).test(await q("#rerun", "e[0].textContent")));
  check("run page: evaluation table", (await q("table.eval tbody tr")) >= 1);
  await evaluate("document.querySelector('table.eval a.drill').click(); new Promise(r => setTimeout(r, 1500))");
  check("run page: drill-down lists the items", (await q("table.eval-items tbody tr")) >= 1);
  check("run page: the SVG artifact shown inline (loaded)", (await q("img.svg-artifact", "e[0] && e[0].complete && e[0].naturalWidth")) > 0);
  check("run page: children", (await q(`a[href="#/compare/${childIds}"]`)) === 1);
  for (const x of ["time", "elapsed", "step"]) {
    await evaluate(`(() => { const s = document.getElementById('xaxis'); s.value = '${x}'; s.dispatchEvent(new Event('change'));
                             return new Promise(r => setTimeout(r, 1500)); })()`);
    check(`run page: x axis ${x} redraws the loss curve`, (await q('[data-metric="loss"] .uplot', "e[0] && +e[0].dataset.drawn")) >= 1);
  }
  await evaluate("const sm = document.getElementById('smooth'); sm.value = '0.9'; sm.dispatchEvent(new Event('input')); true");
  check("run page: smoothing redraws", (await q('[data-metric="loss"] .uplot', "e[0] && +e[0].dataset.drawn")) >= 1);
  await evaluate("document.getElementById('logscale').click(); true");
  check("run page: log scale redraws", (await q('[data-metric="loss"] .uplot', "+e[0].dataset.drawn")) >= 1);
  const shot = await send("Page.captureScreenshot", { format: "png" }, sessionId);
  fs.writeFileSync(screenshot, Buffer.from(shot.data, "base64"));
  check("run page: screenshot kept", fs.statSync(screenshot).size > 20000);
  await evaluate("document.getElementById('logscale').click(); true");

  await open(`#/compare/${childIds}`);
  check("compare: loss of both runs overlaid", (await q('[data-metric="loss"] .uplot', "e[0] && e[0].dataset.series")) === "2");
  check("compare: the differing param marked", (await q("tr.differs")) >= 1);
  check("compare: a heatmap per run", (await q("svg.heatmap")) === 2);

  await open("#/sql?q=" + encodeURIComponent("select count(*) as n from runs"));
  check("sql: the result", (await q("#sql-out th", "e[0] && e[0].textContent")) === "n");
  check("sql: the named queries offered", (await q("#named option")) > 3);
  await open("#/sql?q=" + encodeURIComponent("delete from runs"));
  check("sql: a write refused with a message", /read-only/.test(await q("#sql-out .error", "e[0] && e[0].textContent")));

  await open(`#/run/${liveId}`);
  const points = () => q('[data-metric="live"] .uplot', "e[0] ? +e[0].dataset.points : -1");
  const p1 = await points();
  check("live: the running run's curve is drawn", p1 > 0, p1);
  check("live: its status shows running", /running/.test(await q(".runhead .status", "e[0].textContent")));
  await sleep(3000);  // the page polls every 2 s
  const p2 = await points();
  check(`live: the curve gained points without a reload (${p1} -> ${p2})`, p2 > p1, [p1, p2]);

  console.log(`${passed} passed, ${failed} failed`);
  proc.kill();
  process.exit(failed ? 1 : 0);
})().catch(e => { console.error(e); proc.kill(); process.exit(1); });
