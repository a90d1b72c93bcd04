// tests/serve/browser_test.js: the UI of `ltrun serve` in headless Chromium, driven over the
// DevTools protocol on a pipe (--remote-debugging-pipe: no WebSocket, no npm package). Checks
// the DOM after each page's scripts ran: the runs page, a run page (uPlot curves drawn, the
// layer heatmap and profile, evaluation with drill-down, the SVG artifact, children), compare,
// SQL (a write refused), and a running run whose curve grows without a reload while another
// process logs to it. Keeps a screenshot of the run page. And the defects of issue 27 (the
// sweep of tests/serve/sweep.lua): a kind="figure" SVG inlined, tick labels that tell ticks
// apart and fit, unbroken ids and headers, wide tables that scroll, the runs list paged and
// top-level by default with children expandable, compare of 210 children in a few requests
// with a colour per run across charts, one-value metrics in a table, a stale x-axis response
// ignored, no empty "layer metrics", a run whose process is gone not counting on. And the
// results table (#/table): sorted by a column's click (both ways, runs lacking a metric last),
// paged by the server, filtered by param and name, a sweep's children opened in place and its
// best run by a metric's min in one click. And the web defects of issue 38, each measured on the
// rendered page: the sweep's scatter (tick labels short and inside the plot, the y title clear
// of them, log ticks on decades, colour and mean ± sd by a param), parallel coordinates with an
// axis per param, params to 4 digits, dates on one line, default columns (no paths, no mostly
// empty metric), "best" links only where a child has the metric, the first metric column on a
// 1,280 px screen, compare legends inside their cards, 210 runs with a colour key and a params
// table of what differs, a metric logged once on a fitted axis, ranges in #/compare/A-B, a
// sweep parent's children with params and metrics, a failed run's error in one line, a params
// column in the runs list, no chart controls without a chart and no one-series legends.
// node browser_test.js CHROME URL STUDY_ID CHILD_IDS LIVE_ID PROFILE_DIR SCREENSHOT.png
//   SWEEP_ID SWEEP_CHILD_IDS DEAD_ID TOTAL_RUNS FAILING_ID   (run by tests/cli/serve_browser.sh)
"use strict";
const fs = require("fs");
const [chrome, url, studyId, childIds, liveId, profile, screenshot, sweepId, sweepKids, deadId, totalRuns, failingId] = process.argv.slice(2);

const { launch, newPage } = require(require("path").join(__dirname, "./chromium.js"));
const { proc, send } = launch(chrome, profile);
const sleep = ms => new Promise(r => setTimeout(r, ms));

let passed = 0, failed = 0;
function check(what, ok, detail) {
  if (ok) passed++;
  else { failed++; console.error("FAIL: " + what + (detail !== undefined ? " (" + JSON.stringify(detail) + ")" : "")); }
}

(async () => {
  const { sessionId, evaluate } = await newPage(send);
  // open(hash): navigates and waits until the page says it is ready (or failed)
  const waitReady = async what => {
    let ready = null;
    for (let i = 0; i < 300 && !ready; i++) { await sleep(100); ready = await evaluate("document.body.dataset.ready || null").catch(() => null); }
    check(`${what}: ready`, ready === "1", ready);
  };
  const open = async hash => {
    await evaluate(`delete document.body.dataset.ready; location.href = ${JSON.stringify(url + hash)}; true`);
    await waitReady(hash);
  };
  // clicks `sel` (a link to another page) and waits for that page
  const follow = async sel => {
    await evaluate(`delete document.body.dataset.ready; document.querySelector(${JSON.stringify(sel)}).click(); true`);
    await waitReady(sel);
  };
  const q = (sel, what = "e.length") => evaluate(`(() => { const e = document.querySelectorAll(${JSON.stringify(sel)}); return ${what}; })()`);
  await send("Page.enable", {}, sessionId);
  await send("Page.navigate", { url }, sessionId);
  await sleep(500);

  // canvas text drawn by uPlot, recorded per canvas since its last full clear: {text, left, right}
  await evaluate(`(() => {
    const P = CanvasRenderingContext2D.prototype, fill = P.fillText, clear = P.clearRect;
    P.clearRect = function (x, y, w, h) { if (x === 0 && y === 0 && w >= this.canvas.width) this.canvas.__texts = []; return clear.apply(this, arguments); };
    P.fillText = function (t, x, y) {
      const w = this.measureText(t).width, m = this.getTransform();
      const left = this.textAlign === "right" || this.textAlign === "end" ? x - w : this.textAlign === "center" ? x - w / 2 : x;
      (this.canvas.__texts = this.canvas.__texts || []).push({ text: String(t), align: this.textAlign, left: left + m.e, rotated: m.b !== 0 });
      return fill.apply(this, arguments);
    };
    return true; })()`);
  // the y tick labels of the chart of metric `name` (uPlot draws them right-aligned, unrotated)
  const yLabels = name => q(`[data-metric="${name}"] .uplot canvas`, "e[0] ? (e[0].__texts || []).filter(t => t.align === 'right' && !t.rotated) : null");

  // a part that throws (an element missing on the page) fails and the next part runs
  const part = async (name, fn) => { try { await fn(); } catch (e) { check(`${name}: ${String(e.message || e).slice(0, 300)}`, false); } };

  await part("runs page", async () => {
  await open("#/");
  const rows = await q("input.pick");
  check("runs page: top-level runs by default (the study, the sweep, the failing, the live and the dead run)", rows === 5, rows);
  check("runs page: links to the study", (await q(`a[href="#/run/${studyId}"]`)) >= 1);
  await evaluate(`(() => { const b = document.querySelector('button.kids[data-run="${studyId}"]'); if (b) b.click(); return new Promise(r => setTimeout(r, 1000)); })()`);
  check("runs page: the study's 2 children shown under it on a click", (await q("tr.child input.pick")) === 2, await q("tr.child input.pick"));
  const idLines = await q("table.runs td:nth-child(2) a", "[...e].map(a => a.getClientRects().length)");
  check("runs page: no id broken over lines", idLines.length > 0 && idLines.every(n => n === 1), idLines);
  await open("#/?parent=all");
  check("runs page, all: the first page of 100 and the count", (await q("input.pick")) === 100 &&
        (await q("#runs-count", "e[0].textContent")).includes(`of ${totalRuns}`), await q("#runs-count", "e[0] && e[0].textContent"));
  await follow("#next");
  await follow("#next");
  check("runs page, all: paged to the oldest runs", (await q("input.pick")) === +totalRuns - 200 && (await q("#next")) === 0 &&
        (await q(`a[href="#/run/${studyId}"]`)) >= 1, [await q("input.pick"), totalRuns]);
  await follow("#prev");
  check("runs page, all: and back", (await q("input.pick")) === 100 && (await q("#runs-count", "e[0].textContent")).startsWith("runs 101–200"));

  });

  await part("study page", async () => {
  await open(`#/run/${studyId}`);
  const charts = await q(".uplot", "[...e].map(u => ({ drawn: +u.dataset.drawn, points: +u.dataset.points, canvas: u.querySelector('canvas') ? u.querySelector('canvas').width : 0 }))");
  check("run page: uPlot charts for loss and the p_max profile", charts.length >= 2, charts);
  check("run page: lr (one value) in the scalar table, not a chart", (await q("table.scalars td", "[...e].some(td => td.textContent === 'lr')")) &&
        (await q('[data-metric="lr"]')) === 0);
  check("run page: every chart drawn on a canvas", charts.every(c => c.drawn >= 1 && c.canvas > 0), charts);
  check("run page: the loss curve has its 50 points", (await q('[data-metric="loss"] .uplot', "e[0] && e[0].dataset.points")) === "50");
  check("run page: heatmap of 3 groups x 3 layers", (await q("svg.heatmap rect")) === 9);
  // x ticks of whole numbers: layers 0 1 2, never 0.5 (canvas text centred under the ticks)
  const layerTicks = await q(".layer .uplot canvas", "e[0] ? (e[0].__texts || []).filter(t => t.align === 'center' && !t.rotated && /^[0-9.]+$/.test(t.text)).map(t => t.text) : null");
  check("run page: the layer axis ticks only whole layers", layerTicks && layerTicks.length >= 2 && layerTicks.every(t => /^\d+$/.test(t)), layerTicks);
  check("run page: rerun command", new RegExp(`rerun ${studyId}$`).test(await q("#rerun", "e[0].textContent")));
  check("run page: evaluation table", (await q("table.eval tbody tr")) >= 1);
  await evaluate("document.querySelector('table.eval a.drill').click(); new Promise(r => setTimeout(r, 1500))");
  check("run page: drill-down lists the items", (await q("table.eval-items tbody tr")) >= 1);
  // the stored text (db/migrations/0008): the first drill-down is ceval / generate: each item
  // with its prompt (folded) and what the model wrote
  const evalRows = await q("table.eval-items tbody tr");
  check("run page: drill-down of generate: an output per item", (await q("table.eval-items pre.output")) === evalRows && evalRows > 0,
        [await q("table.eval-items pre.output"), evalRows]);
  const prompts = await q("table.eval-items details.prompt pre", "[...e].map(p => p.textContent)");
  const apiItems = await evaluate(`fetch('/api/runs/${studyId}/eval_items?bench=ceval&protocol=generate&limit=200').then(r => r.json()).then(d => d.items)`);
  check("run page: drill-down of generate: each item's prompt, as stored", prompts.length === evalRows &&
        prompts.every((p, i) => p.length > 20 && p === apiItems[i].prompt), prompts.slice(0, 1));
  await evaluate("[...document.querySelectorAll('table.eval a')].find(a => a.textContent === 'ceval' && a.closest('tr').children[1].textContent === 'logit').click(); new Promise(r => setTimeout(r, 1500))");
  check("run page: drill-down of logit: no output, said so", (await q("table.eval-items tbody tr td:nth-child(4)", "[...e].every(td => td.textContent === '(no output: logit)')")) &&
        (await q("table.eval-items tbody tr")) > 0);
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
  // one compact legend: each run labelled by the params that differ (it said "ID NAME", the same
  // for two runs of one study)
  const firstDiff = await q("tr.differs td:first-child", "e[0] && e[0].textContent");
  const legend = JSON.parse(await q('[data-metric="loss"] .u-legend .u-series .u-label', "JSON.stringify([...e].map(x => x.textContent))"));
  check("compare: legend labels name the differing param", legend.length === 3 &&
        legend.slice(1).every(t => t.includes(` ${firstDiff}=`)) && legend[1] !== legend[2], { firstDiff, legend });
  check("compare: a heatmap per run", (await q("svg.heatmap")) === 2);
  // item by item (tests/serve/study.lua's quiz): both solved q1, only plan_a q2, only plan_b q3
  const quiz = await q("table.eval-diff-summary tbody tr", "[...e].map(tr => [...tr.children].map(td => td.textContent).join('|')).filter(s => s.startsWith('quiz|logit'))");
  check("compare: the quiz item by item: 4 items, 1 both, 1 each, 1 neither", JSON.stringify(quiz) === JSON.stringify(["quiz|logit|4|1|1|1|1"]), quiz);
  const differing = await q("#eval-diff table.eval-diff", "[...e].map(t => [...t.tBodies[0].rows].map(tr => tr.children[0].textContent + ':' + tr.children[3].textContent.split(' ')[1]))");
  check("compare: the items solved by one only, and by whom", differing.some(t => JSON.stringify(t) === '["q2:plan_a","q3:plan_b"]'), differing);

  });

  // --- the sweep: a paper-like study page --------------------------------------------------
  await part("sweep page", async () => {
  await open(`#/run/${sweepId}`);
  check("sweep: its kind=\"figure\" SVG shown inline (loaded)", (await q("img.svg-artifact", "e[0] && e[0].complete && e[0].naturalWidth")) === 120,
        await q("#main figure, .artifacts div", "[...e].map(x => x.textContent)"));
  const sshot = await send("Page.captureScreenshot", { format: "png" }, sessionId);
  fs.writeFileSync(screenshot.replace(/run_page\.png$/, "sweep_page.png"), Buffer.from(sshot.data, "base64"));
  const scalars = await q("table.scalars tbody tr td:nth-child(2)", "[...e].map(td => td.textContent)");
  check("sweep: its 5 one-value metrics in one table", JSON.stringify(scalars) ===
        JSON.stringify(["eval/ceval_acc", "eval/gsm8k_acc", "eval/mmlu_acc", "params_m", "tok_s"]), scalars);
  check("sweep: no chart for a one-value metric", (await q('[data-metric^="eval/"], [data-metric="tok_s"]')) === 0);
  const scalarTop = await q("table.scalars", "e[0] ? e[0].getBoundingClientRect().top : Infinity"), firstChart = await q(".chart[data-metric]", "[...e].map(c => c.dataset.metric)");
  check("sweep: curves grouped, train/loss first, below the scalar table", firstChart[0] === "train/loss" && firstChart[1] === "train/lr" &&
        (await q(".chart[data-metric]", "e[0].getBoundingClientRect().top")) > scalarTop, firstChart);
  // tick labels: every y tick told apart (an lr axis read "0 / 0.001 / 0.001", a profile up to 3.6e-4 "0, 0, 0")
  for (const m of ["train/lr", "grad_norm"]) {
    const labels = (await yLabels(m)) || [];
    const texts = labels.map(l => l.text);
    check(`sweep: ${m}: y tick labels distinct and numeric`, texts.length >= 3 && new Set(texts).size === texts.length &&
          texts.every(t => isFinite(+t)) && texts.filter(t => +t === 0).length <= 1, texts);
  }
  // a log axis up to 20,000: every label inside the canvas (it read "0,000", cut at the left)
  await evaluate("document.getElementById('logscale').click(); new Promise(r => setTimeout(r, 800))");
  const logLabels = ((await yLabels("tokens")) || []).filter(l => l.text !== "");
  check("sweep: log axis: labels past 10000, none cut off", logLabels.some(l => +l.text.replace(/,/g, "") >= 10000) &&
        logLabels.every(l => l.left >= 0), logLabels);
  await evaluate("document.getElementById('logscale').click(); new Promise(r => setTimeout(r, 800))");
  });
  await part("stale answers", async () => {
  // a stale response: x=time answers late, after the switch to step; the step one must stay
  await evaluate(`(() => { window.__fetch = window.fetch;
    window.fetch = (u, ...a) => /x=time/.test(u) ? new Promise(r => setTimeout(r, 1500)).then(() => window.__fetch(u, ...a)) : window.__fetch(u, ...a);
    const s = document.getElementById('xaxis');
    s.value = 'time'; s.dispatchEvent(new Event('change'));
    s.value = 'step'; s.dispatchEvent(new Event('change'));
    return new Promise(r => setTimeout(r, 3000)); })()`);
  const shown = await evaluate(`charts.filter(c => document.contains(c.root) && c.root.parentNode.dataset.metric === 'train/loss')
                                       .map(c => ({ label: c.axes[0].label, xmax: Math.max(...c.data[0]) }))`);
  check("sweep: after time then step, the step answer stays (a late time answer is ignored)",
        shown.length === 1 && shown[0].label === "step" && shown[0].xmax === 39, shown);
  await evaluate("window.fetch = window.__fetch; true");

  });

  await part("compare of a sweep", async () => {
  // compare of 210 children: a handful of requests (it sent one per run, and per run again for
  // the curves: 420 at once, "Failed to fetch" at 2,000)
  const kidList = sweepKids.split(",");
  await evaluate("performance.clearResourceTimings(); performance.setResourceTimingBufferSize(5000); true");
  await open(`#/compare/${sweepKids}`);
  const requests = await evaluate("performance.getEntriesByType('resource').filter(e => e.name.includes('/api/')).length");
  check(`compare of ${kidList.length} children: at most 10 API requests (${requests})`, requests > 0 && requests <= 10, requests);
  check(`compare of ${kidList.length} children: loss of every run`, (await q('[data-metric="loss"] .uplot', "e[0] && e[0].dataset.series")) === String(kidList.length));
  check("compare: acc of the half that logged it", (await q('[data-metric="acc"] .uplot', "e[0] && e[0].dataset.series")) === String(kidList.length / 2));
  // a run keeps its colour in every chart, whichever other runs have the metric
  const colours = await evaluate(`(() => {
    const of = m => { const c = charts.find(c => document.contains(c.root) && c.root.parentNode.dataset.metric === m);
      const out = {}; c.series.slice(1).forEach((s, k) => { out[s.label] = typeof s.stroke === 'function' ? s.stroke(c, k + 1) : s.stroke; }); return out; };
    const loss = of('loss'), acc = of('acc');
    return Object.keys(acc).filter(l => acc[l] !== loss[l]).length + ' of ' + Object.keys(acc).length; })()`);
  check("compare: every run has one colour across charts", /^0 of \d+$/.test(colours) && colours !== "0 of 0", colours);
  const cshot = await send("Page.captureScreenshot", { format: "png" }, sessionId);
  fs.writeFileSync(screenshot.replace(/run_page\.png$/, "compare_page.png"), Buffer.from(cshot.data, "base64"));
  check("compare: no empty 'layer metrics' section", (await q("h2", "[...e].filter(h => h.textContent === 'layer metrics').length")) === 0);
  // params of 210 runs: a row per run with only the params that differ (it was 211 columns), in
  // a box that scrolls; headers unbroken; the page does not scroll sideways
  const heads = await q("table.params-runs th", "[...e].map(th => { const r = document.createRange(); r.selectNodeContents(th); return r.getClientRects().length; })");
  const prow = await q("table.params-runs tbody tr");
  const pheads = await q("table.params-runs th", "[...e].map(th => th.textContent)");
  check("compare: params of 210 runs: a row each, a column per differing param only", prow === kidList.length &&
        JSON.stringify(pheads) === JSON.stringify(["id", "name", "seed", "lr", "plan", "wd", "out"]), [prow, pheads]);
  check("compare: no header broken over lines", heads.length > 0 && heads.every(n => n === 1), heads);
  const scroll = await q("#params-wide", "e[0] ? [e[0].scrollHeight > e[0].clientHeight, document.documentElement.scrollWidth <= window.innerWidth + 1] : null");
  check("compare: the long params table scrolls in its box", JSON.stringify(scroll) === "[true,true]", scroll);

  });

  await part("results table", async () => {
  // the sweep's 210 children: child i has lr = 1e-4 i, plan = plan_(i % 3), a loss whose min is
  // (1 + i/210) / 5 (increasing with i) and, even i only, acc = i / 210
  const cols = "params=lr,plan&metrics=loss,acc";
  const names = () => q("table.results tbody tr:not(.child) td:nth-child(3) a", "[...e].map(a => a.textContent)");
  const count = () => q("#table-count", "e[0] ? e[0].textContent : null");
  await evaluate("performance.clearResourceTimings(); true");
  await open(`#/table?parent=${sweepId}&${cols}`);
  check("table: the first page of 50 of the 210 children", (await names()).length === 50 && (await count()) === "runs 1–50 of 210", [await count()]);
  const heads = await q("table.results th[data-sort]", "[...e].map(th => th.dataset.sort)");
  check("table: a sortable column per field, param and metric last/min/max",
        ["id", "name", "param:lr", "param:plan", "last:loss", "min:loss", "max:loss", "last:acc", "min:acc", "max:acc"].every(k => heads.includes(k)), heads);
  await follow('th[data-sort="min:loss"]');
  check("table: sorted by min loss, ascending: lr_1 first", (await names())[0] === "lr_1" && (await names())[49] === "lr_50", (await names()).slice(0, 3));
  check("table: the min shown is the run's", (await q("table.results tbody tr td:nth-child(10)", "e[0].textContent")) === "0.201",
        await q("table.results tbody tr td:nth-child(10)", "e[0].textContent"));
  await follow('th[data-sort="min:loss"]');
  check("table: clicked again, descending: lr_210 first", (await names())[0] === "lr_210" && /▼/.test(await q("th.sorted", "e[0].textContent")), (await names()).slice(0, 3));
  await follow("#t-next");
  check("table: the next page, still in that order", (await count()) === "runs 51–100 of 210" && (await names())[0] === "lr_160", [await count(), (await names())[0]]);
  // every page came from the server, 50 rows at a time (limit/offset), never the 210 at once
  const asked = await evaluate("performance.getEntriesByType('resource').map(e => e.name).filter(n => n.includes('/api/table'))");
  check("table: each page one request with limit=50 and its offset", asked.length >= 4 && asked.every(u => /[?&]limit=50(&|$)/.test(u)) &&
        asked.some(u => /[?&]offset=50(&|$)/.test(u)), asked);
  // the sweep's param against a metric, every child a point (opened on demand)
  const drawn = async () => { for (let i = 0; i < 100; i++) { if ((await q("#scatter", "e[0] && e[0].dataset.drawn")) === "1") return true; await sleep(100); } return false; };
  await evaluate("document.getElementById('scatter-open').open = true; true");
  check("scatter: drawn when opened", await drawn());
  const pts = () => q("svg.scatter circle", "[...e].map(c => [+c.getAttribute('cx'), +c.getAttribute('cy')])");
  let xy = await pts();
  // min loss = (1 + i/210)/5 and lr = 1e-4 i both grow with i: left to right, each point higher (smaller cy)
  const rising = a => a.length > 1 && [...a].sort((p, r) => p[0] - r[0]).every((p, k, s) => k === 0 || (p[0] > s[k - 1][0] && p[1] < s[k - 1][1]));
  check("scatter: lr against min loss: a point per child, rising", xy.length === 210 && rising(xy), xy.length);
  await evaluate("const y = document.getElementById('sc-y'); y.value = 'max:acc'; y.dispatchEvent(new Event('change')); true");
  await drawn();
  xy = await pts();
  check("scatter: lr against max acc: the 105 children that logged acc", xy.length === 105 && rising(xy), xy.length);
  await evaluate("document.getElementById('sc-logx').click(); true");
  await drawn();
  check("scatter: log x keeps every point (lr > 0)", (await pts()).length === 105 && rising(await pts()));
  // a metric that half the runs lack: they come last whichever the order
  await open(`#/table?parent=${sweepId}&${cols}&sort=max:acc&order=desc&offset=200`);
  check("table: runs without the metric last (descending)", (await names()).length === 10 &&
        (await q("table.results tbody tr td:nth-child(14)", "[...e].every(td => td.textContent === '')")), await names());
  await open(`#/table?parent=${sweepId}&${cols}&sort=max:acc&order=asc&offset=100`);
  check("table: and last when ascending too", (await names())[4] === "lr_210" && (await names())[5] !== undefined &&
        (await q("table.results tbody tr td:nth-child(14)", "e[5].textContent")) === "", (await names()).slice(0, 7));
  // filters: a param's value, the name
  await open(`#/table?parent=${sweepId}&${cols}&param=plan%3Dplan_1`);
  check("table: filtered by param plan=plan_1: 70 runs", (await count()) === "runs 1–50 of 70" &&
        (await q("table.results tbody tr td:nth-child(8)", "[...e].every(td => td.textContent === 'plan_1')")), await count());
  await open(`#/table?parent=${sweepId}&${cols}&name=lr_20&sort=name&order=asc`);
  check("table: filtered by name", JSON.stringify(await names()) === JSON.stringify(["lr_20", ...Array.from({ length: 10 }, (_, k) => "lr_20" + k)]), await names());
  // the top-level runs: the sweep's children open under it, and its best run in one click
  await open("#/table?metrics=loss");
  check("table: top-level runs by default", (await names()).length === 5, await names());
  await follow(`table.results button.kids[data-run="${sweepId}"]`);
  check("table: the sweep's children shown under it (first 50 of 210)", (await q("table.results tr.child input.pick")) === 50 &&
        /50 of 210 children/.test(await q("table.results tr.child td.muted", "e[0] ? e[0].textContent : ''")));
  await follow(`#best-${sweepId}`);
  check("table: 'best loss' of the sweep: its children by min loss, lr_1 first", (await names())[0] === "lr_1" &&
        (await q("th.sorted", "e[0] && e[0].dataset.sort")) === "min:loss" && (await count()) === "runs 1–50 of 210", [await names(), await count()]);
  });

  // --- issue 38: the web view of a sweep ----------------------------------------------------
  // boxes on the page: {l, r, t, b} of an element (or of a text node's range)
  const inside = (a, b, slack = 0.5) => a.l >= b.l - slack && a.r <= b.r + slack && a.t >= b.t - slack && a.b <= b.b + slack;
  const overlap = (a, b) => a.l < b.r && b.l < a.r && a.t < b.b && b.t < a.b;
  // the lines a cell's text takes: the distinct tops of its text's boxes
  const lines = `(x => { const tops = new Set(), w = document.createTreeWalker(x, NodeFilter.SHOW_TEXT);
    for (let n = w.nextNode(); n; n = w.nextNode()) { const r = document.createRange(); r.selectNodeContents(n);
      for (const b of r.getClientRects()) if (b.width > 0) tops.add(Math.round(b.top / 4)); }
    return tops.size; })`;
  const box = "(x => { const r = x.getBoundingClientRect(); return { l: r.left, r: r.right, t: r.top, b: r.bottom, text: x.textContent }; })";
  const waitDrawn = async id => { for (let i = 0; i < 100; i++) { if ((await q("#" + id, "e[0] && e[0].dataset.drawn")) === "1") return true; await sleep(100); } return false; };
  const pick = (id, value) => evaluate(`(() => { const s = document.getElementById(${JSON.stringify(id)});
    if (s.type === 'checkbox') s.checked = ${JSON.stringify(value)}; else s.value = ${JSON.stringify(value)};
    s.dispatchEvent(new Event('change')); return true; })()`);
  // readable: short, at most 3 significant digits, a plain or exponent number (no 1.013911e-5)
  const readable = t => t.length <= 7 && /^-?(\d+(\.\d+)?|\.\d+)(e-?\d+)?$/.test(t) && t.replace(/e.*$/, "").replace(/[-.]/g, "").replace(/^0+/, "").replace(/0+$/, "").length <= 3;

  await part("issue 38: sweep table, default columns and numbers", async () => {
  await open(`#/table?parent=${sweepId}`);
  const heads = await q("table.results th[data-sort]", "[...e].map(th => th.dataset.sort)");
  // children have lr, plan, wd, seed and out (a path); loss, val_loss, acc (half) and best_loss (a tenth)
  check("table, default columns: the sweep's params, not the path `out`", ["param:lr", "param:plan", "param:wd", "param:seed"].every(k => heads.includes(k)) &&
        !heads.includes("param:out"), heads);
  check("table, default columns: no mostly empty metric (best_loss)", heads.includes("min:loss") && !heads.some(h => /best_loss/.test(h)), heads);
  // lr is stored as 0.00010232929922807543 and so on: 4 significant digits, the whole in the tooltip
  const lr = await q("table.results tbody td:nth-child(7) .pv", "[...e].map(s => [s.textContent, s.title])");
  check("table: params to 4 significant digits, the full value in the tooltip", lr.length === 50 && lr.every(([t, full]) =>
        t.replace(/e.*$/, "").replace(/[-.]/g, "").replace(/^0+/, "").length <= 4 && (full === "" ? t.length < 8 : full.length > t.length && Math.abs(+t - +full) <= 5e-4 * Math.abs(+full))), lr.slice(0, 3));
  const dateLines = await q("table.results tbody td:nth-child(5)", `[...e].map(${lines})`);
  check("table: dates on one line", dateLines.length === 50 && dateLines.every(n => n === 1), dateLines.filter(n => n !== 1).length);
  const firstMetric = await q('table.results th[data-sort^="last:"]', "e[0] ? e[0].getBoundingClientRect().right : Infinity");
  check(`table: the first metric column inside a 1,280 px window (its right edge at ${firstMetric})`, firstMetric <= 1280, firstMetric);
  // the top-level table: the same rules, and the first metric column on screen
  await open("#/table");
  const topMetric = await q('table.results th[data-sort^="last:"]', "e[0] ? e[0].getBoundingClientRect().right : Infinity");
  check(`table, top level: the first metric column inside 1,280 px (${topMetric})`, topMetric <= 1280, topMetric);
  // "best M" only where a child logged M: the sweep's and the study's children logged loss, none train/loss
  await open("#/table?metrics=train/loss");
  check("table: no 'best train/loss' link where no child has train/loss", (await q("a.best")) === 0, await q("a.best", "[...e].map(a => a.id)"));
  await open("#/table?metrics=loss");
  check("table: 'best loss' links where children have loss", (await q(`#best-${sweepId}`)) === 1 && (await q(`#best-${studyId}`)) === 1);
  });

  await part("issue 38: scatter", async () => {
  await open(`#/table?parent=${sweepId}`);
  await evaluate("document.getElementById('scatter-open').open = true; true");
  check("scatter: drawn", await waitDrawn("scatter"));
  const labels = async () => JSON.parse(await evaluate(`JSON.stringify((() => { const s = document.querySelector('svg.scatter'); const b = ${box};
    return { svg: b(s), x: [...s.querySelectorAll('text.tick.x')].map(b), y: [...s.querySelectorAll('text.tick.y')].map(b), ytitle: b(s.querySelector('text.title.y')) }; })())`));
  for (const log of [false, true]) {
    await pick("sc-logx", log);
    await waitDrawn("scatter");
    const L = await labels(), all = [...L.x, ...L.y], w = log ? "log x" : "linear x";
    check(`scatter, ${w}: tick labels short and readable`, all.length >= 6 && all.every(t => readable(t.text)), all.map(t => t.text));
    check(`scatter, ${w}: every tick label inside the plot (the last x label whole)`, all.every(t => inside(t, L.svg)), all.filter(t => !inside(t, L.svg)));
    check(`scatter, ${w}: the y title clear of the y tick labels`, L.y.every(t => !overlap(t, L.ytitle)), [L.ytitle, L.y[0]]);
    if (log) check("scatter, log x: ticks on the decades", L.x.length >= 2 && L.x.every(t => Number.isInteger(+Math.log10(+t.text).toFixed(9))), L.x.map(t => t.text));
  }
  // colour by a second param: plan's 3 values, each its colour, a key of 3
  await pick("sc-colour", "plan");
  await waitDrawn("scatter");
  const fills = await q("svg.scatter circle", "[...new Set([...e].map(c => c.getAttribute('fill')))]");
  check("scatter: coloured by plan: 3 colours and a key of 3", fills.length === 3 && (await q("#sc-key .swatch")) === 3, fills);
  // mean ± sd over seeds: wd (4 values) × plan (3): 12 means, each with a spread bar, a line per plan
  await pick("sc-logx", false);
  await pick("sc-x", "wd");
  await pick("sc-mean", true);
  await waitDrawn("scatter");
  const means = await q("svg.scatter circle", "[...e].map(c => c.querySelector('title').textContent)");
  check("scatter: mean ± sd: 12 points (wd × plan), each over its runs", means.length === 12 && means.every(t => /mean .* over \d+ runs/.test(t)), means.slice(0, 2));
  check("scatter: mean ± sd: a spread bar per point and a line per plan", (await q("svg.scatter line.spread")) === 12 && (await q("svg.scatter polyline.group-line")) === 3);
  // parallel coordinates: an axis per param column and one for the metric, a line per child
  await evaluate("document.getElementById('parcoords-open').open = true; true");
  check("parallel coordinates: drawn", await waitDrawn("parcoords"));
  const params = await q('table.results th[data-sort^="param:"]', "[...e].map(th => th.dataset.sort.slice(6))");
  const axes = await q("svg.parcoords g.pc-axis", "[...e].map(g => g.dataset.key)");
  check("parallel coordinates: one axis per param and one for the metric", params.length >= 4 &&
        JSON.stringify(axes) === JSON.stringify([...params, "loss min"]), [axes, params]);
  check("parallel coordinates: a line per child", (await q("svg.parcoords polyline.pc-line")) === 210, await q("svg.parcoords polyline.pc-line"));
  const pc = JSON.parse(await evaluate(`JSON.stringify((() => { const s = document.querySelector('svg.parcoords'); const b = ${box};
    return { svg: b(s), t: [...s.querySelectorAll('text')].map(b) }; })())`));
  check("parallel coordinates: every label inside the plot", pc.t.length > 10 && pc.t.every(t => inside(t, pc.svg)), pc.t.filter(t => !inside(t, pc.svg)));
  await pick("pc-metric", "max:acc");
  check("parallel coordinates: another metric: the 105 children that logged acc", (await q("svg.parcoords polyline.pc-line")) === 105 &&
        (await q("svg.parcoords g.pc-axis.metric", "e[0].dataset.key")) === "acc max");
  await evaluate("document.getElementById('scatter').scrollIntoView(); true");
  const vshot = await send("Page.captureScreenshot", { format: "png" }, sessionId);
  fs.writeFileSync(screenshot.replace(/run_page\.png$/, "sweep_views.png"), Buffer.from(vshot.data, "base64"));
  });

  await part("issue 38: pages", async () => {
  // a sweep parent: its children with their params and metrics, and a link to its table
  await open(`#/run/${sweepId}`);
  const kh = await q("table.children th", "[...e].map(th => th.textContent)");
  check("sweep page: children listed with params and metrics", ["lr", "plan", "wd", "seed", "loss min"].every(h => kh.includes(h)) &&
        (await q("table.children tbody tr")) === 50, kh);
  check("sweep page: a link to its results table", (await q("#sweep-table", "e[0] && e[0].getAttribute('href')")) === `#/table?parent=${sweepId}`);
  // a run page: a chart of one series has no legend (each carried an empty one)
  await open(`#/run/${studyId}`);
  check("run page: no legend under a one-series chart", (await q(".chart .uplot")) >= 2 && (await q(".chart .u-legend")) === 0, await q(".chart .u-legend"));
  // a failed run of one-value metrics: no chart controls, no chart; the traceback in full
  await open(`#/run/${failingId}`);
  check("failed run: its one-value metrics in the table", (await q("table.scalars td", "[...e].map(td => td.textContent)")).includes("final_acc"));
  check("failed run: no chart controls without a chart", (await q("#xaxis, #smooth, #logscale")) === 0 && (await q(".uplot")) === 0, await q("#xaxis, #smooth, #logscale"));
  check("failed run: its page shows the whole traceback", /the data ran out at batch 7[\s\S]*stack traceback/.test(await q("pre.error", "e[0] ? e[0].textContent : ''")));
  // the runs list: the failed run's error in one line; a params column telling runs apart
  await open("#/");
  const err = await q(`input.pick[value="${failingId}"]`, `(() => { const td = e[0].closest('tr').lastElementChild;
    return { text: td.textContent, lines: (${lines})(td), title: td.querySelector('[title]') ? td.querySelector('[title]').title : '' }; })()`);
  check("runs list: a failed run's error in one line, the traceback in its tooltip", err.lines === 1 && /ran out at batch 7$/.test(err.text) &&
        !/traceback/.test(err.text) && /stack traceback/.test(err.title), err);
  await open(`#/?parent=${sweepId}`);
  const cells = await q("table.runs tbody tr", "[...e].map(tr => tr.children[[...tr.closest('table').tHead.rows[0].cells].findIndex(th => th.textContent === 'params')].textContent)");
  check("runs list: a params column that tells a sweep's children apart", cells.length === 100 && new Set(cells).size === 100 &&
        cells.every(t => /lr=/.test(t)), cells.slice(0, 3));
  });

  await part("issue 38: compare", async () => {
  // two runs (the study's children; and one of them with a sweep child: long labels): each legend
  // inside its card, the plot as wide as the card
  const kidList = sweepKids.split(",").map(Number);
  for (const two of [childIds, `${childIds.split(",")[0]},${kidList[0]}`]) {
  await open(`#/compare/${two}`);
  const cards = JSON.parse(await evaluate(`JSON.stringify([...document.querySelectorAll('#compare-charts .chart')].filter(c => c.querySelector('.u-legend')).map(c => {
    const b = ${box}, st = getComputedStyle(c);
    return { metric: c.dataset.metric, card: b(c), legend: b(c.querySelector('.u-legend')), labels: [...c.querySelectorAll('.u-legend .u-label')].map(b),
             plot: c.querySelector('canvas').getBoundingClientRect().width, inner: c.clientWidth - parseFloat(st.paddingLeft) - parseFloat(st.paddingRight) }; }))`));
  check(`compare of ${two}: legends inside their cards`, cards.length >= 1 && cards.every(c => inside(c.legend, c.card) && c.labels.every(l => inside(l, c.card))),
        cards.filter(c => !inside(c.legend, c.card)).map(c => [c.metric, c.card, c.legend]));
  check(`compare of ${two}: each plot as wide as its card`, cards.length >= 1 && cards.every(c => c.plot >= 0.95 * c.inner), cards.map(c => [c.plot, c.inner]));
  }
  // two children of the sweep differ in seed, lr, plan, wd and out (a path): the legend names the seed first
  await open(`#/compare/${kidList[0]},${kidList[1]}`);
  const seedLegend = JSON.parse(await q('[data-metric="loss"] .u-legend .u-series .u-label', "JSON.stringify([...e].map(x => x.textContent))"));
  check("compare of two sweep children: legend labels name the seed first, no path", seedLegend.length === 3 &&
        seedLegend.slice(1).every(t => /^\d+ seed=\d lr=/.test(t) && !t.includes("/")), seedLegend);
  // 210 runs by a range: a colour key, a metric logged once at step 60 on an axis around 60
  await open(`#/compare/${kidList[0]}-${kidList[kidList.length - 1]}`);
  check("compare #/compare/A-B: the range's 210 runs", (await q('[data-metric="loss"] .uplot', "e[0] && e[0].dataset.series")) === "210");
  check("compare of 210: a colour key (by lr, the first param that differs)", (await q("#colour-key .key-bar")) === 1 &&
        /^lr\b/.test(await q("#colour-key", "e[0].textContent")), await q("#colour-key", "e[0] && e[0].textContent"));
  const vx = await evaluate("(() => { const c = charts.find(c => document.contains(c.root) && c.root.parentNode.dataset.metric === 'val_loss'); return c ? [c.scales.x.min, c.scales.x.max] : null; })()");
  check("compare of 210: val_loss (logged once, at step 60) on an axis fitted to it", vx && vx[0] >= 50 && vx[0] < 60 && vx[1] > 60 && vx[1] <= 70, vx);
  });

  await part("a dead run", async () => {
  // a run whose process is gone (kill -9): said so, and its seconds stop
  await open(`#/run/${deadId}`);
  check("dead run: its page says the process is gone", /ended without closing the run/.test(await q("#gone", "e[0] ? e[0].textContent : ''")));
  check("dead run: the badge too", /process gone/.test(await q(".runhead .status", "e[0].textContent")));
  const secs = async () => (await evaluate(`fetch('/api/runs/${deadId}').then(r => r.json()).then(d => d.run.secs)`));
  const s1 = await secs(); await sleep(1500); const s2 = await secs();
  check(`dead run: its seconds do not count on (${s1} -> ${s2})`, s1 !== null && s1 === s2, [s1, s2]);

  });

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
