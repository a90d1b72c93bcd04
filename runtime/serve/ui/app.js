// runtime/serve/ui/app.js: the single-page UI of `ltrun serve` (embedded in the binary).
// Pages by URL hash: #/ runs, #/run/ID, #/compare/ID,ID,A-B,..., #/table (results, with a sweep's
// scatter and parallel coordinates), #/sql; docs/web.md describes them. Charts are uPlot, the
// sweep views SVG; data comes from the JSON API (runtime/serve/api.h). A page whose run is
// `running` polls every POLL_MS and updates its curves in place. When a page has drawn everything
// it sets document.body.dataset.ready (the browser test waits for it). Pure helpers (ticks,
// number formats, run colours and legend keys, colour scales, metric groups) are in util.js.
"use strict";

const POLL_MS = 2000;
const PAGE = 100;     // runs per page of the runs list
const CHILDREN_SHOWN = 50;  // children listed on a run's page (the rest: the results table)
const main = document.getElementById("main");
let timers = [];      // polling of the current page, cleared on navigation
let charts = [];      // uPlot instances of the current page
const prefs = { x: "step", smooth: 0, log: false };

// --- small helpers ------------------------------------------------------------------------
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
  return e;
}
function svgEl(tag, attrs, ...kids) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const k of kids) e.append(k instanceof Node ? k : String(k));
  return e;
}
async function api(path) {
  let r = await fetch(path);
  // the server runs a few heavy requests at a time and answers 503 past that: try again later
  for (let tries = 0; r.status === 503 && tries < 5; tries++) {
    await new Promise(ok => setTimeout(ok, 1000 * (Number(r.headers.get("Retry-After")) || 2)));
    r = await fetch(path);
  }
  let body;
  try { body = await r.json(); } catch (e) { throw new Error(`${path}: HTTP ${r.status}, not JSON`); }
  if (!r.ok) throw new Error(body.error || `${path}: HTTP ${r.status}`);
  return body;
}
function fmt(v) { return typeof v === "number" ? fmtNum(v) : v === null || v === undefined ? "" : String(v); }
// a start time in a table of runs: to the minute, on one line; the whole in the tooltip
function dateCell(t) { return el("span", { class: "date", title: t || false }, t ? String(t).slice(0, 16) : ""); }
// a param's value in a table of runs: 4 significant digits, cut to the column; the whole in its tooltip
function paramCell(v) {
  const t = fmtParam(v), full = v === null || v === undefined ? "" : String(v);
  return el("span", { class: "pv", title: full !== t || full.length > 16 ? full : false }, t);
}
function statusBadge(status, alive, gone) {
  const dead = status === "running" && alive === false;
  return el("span", { class: "status " + status + (dead ? " dead" : ""), title: dead ? (gone || "its process is gone") + ": the next writer marks it crashed" : "" },
            status === "running" && !dead ? "● running" : status + (dead ? " (process gone)" : ""));
}
function table(columns, rows, opts = {}) {
  const t = el("table", { class: opts.class || "", id: opts.id });
  t.append(el("thead", {}, el("tr", {}, columns.map(c => el("th", {}, c)))));
  const tb = el("tbody");
  for (const r of rows) tb.append(el("tr", {}, r.map(c => el("td", {}, c instanceof Node ? c : fmt(c)))));
  t.append(tb);
  return t;
}
function section(title, ...kids) { return el("section", {}, el("h2", {}, title), ...kids); }
function showError(e) { main.replaceChildren(el("p", { class: "error" }, String(e.message || e))); document.body.dataset.ready = "error"; }
function ready() { document.body.dataset.ready = "1"; }
function forget(list) {  // destroys these charts
  for (const c of list) { c.destroy(); charts = charts.filter(x => x !== c); }
}
function every(ms, fn) { timers.push(setInterval(fn, ms)); }

// --- charts -----------------------------------------------------------------------------
function smooth(ys, alpha) {  // exponential moving average, as TensorBoard's slider
  if (!alpha) return ys;
  let last = null;
  return ys.map(y => {
    if (y === null || !isFinite(y)) return y;
    last = last === null ? y : last * alpha + (1 - alpha) * y;
    return last;
  });
}
// series: [{label, x: [...], y: [...]}] on possibly different x: merged onto one x axis
function alignSeries(series) {
  const xs = [...new Set(series.flatMap(s => s.x))].sort((a, b) => a - b);
  const index = new Map(xs.map((x, i) => [x, i]));
  const ys = series.map(s => {
    const out = new Array(xs.length).fill(null);
    s.x.forEach((x, i) => { out[index.get(x)] = s.y[i]; });
    return out;
  });
  return [xs, ...ys];
}
function chartData(series) {
  const data = alignSeries(series.map(s => ({ x: s.x, y: smooth(s.y, prefs.smooth) })));
  if (prefs.log) for (let i = 1; i < data.length; i++) data[i] = data[i].map(v => v > 0 ? v : null);
  return data;
}
let measureCtx = null;
function measure(text) {  // px of `text` in uPlot's axis font
  if (!measureCtx) { measureCtx = document.createElement("canvas").getContext("2d"); measureCtx.font = AXIS_FONT; }
  return measureCtx.measureText(text).width;
}
const AXIS_FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Noto Sans", sans-serif';
// tick spacings of an axis of whole numbers (steps, layers): no tick at step 4.25
const INTEGER_STEPS = [1, 2, 5].flatMap(m => [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8].map(p => m * p)).sort((a, b) => a - b);
// series: [{label, x, y, colour (the run's index on the page)}]
function lineChart(holder, title, series, opts = {}) {
  const width = opts.width || 560;
  holder.style.width = width + "px";  // the card as wide as the plot: a legend wraps inside it
  const log = prefs.log && !opts.linear;
  const ticks = (u, splits) => tickLabels(splits, false);
  const allX = series.flatMap(s => s.x), allY = series.flatMap(s => s.y).filter(v => v !== null && isFinite(v));
  const xr = fittedRange(Math.min(...allX), Math.max(...allX), opts.time ? 60 : undefined);
  const yr = allY.length ? fittedRange(Math.min(...allY), Math.max(...allY)) : null;
  const u = new uPlot({
    title, width, height: opts.height || 220,
    // a metric logged once (all its points at step 60) on 57..63, not uPlot's 0..120; one value on
    // a range around it, not 0..100
    scales: { x: { time: opts.time || false, ...(xr ? { auto: false, range: xr } : {}) },
              y: { distr: log ? 3 : 1, ...(yr && !log ? { auto: false, range: yr } : {}) } },
    axes: [{ label: opts.xlabel || "", font: AXIS_FONT, ...(opts.time ? {} : { values: ticks }),
             ...(opts.xlabel === "step" || opts.xlabel === "layer" ? { incrs: INTEGER_STEPS } : {}) },
           { font: AXIS_FONT, values: (u, splits) => tickLabels(splits, log), size: (u, values) => axisWidth(values, measure) }],
    legend: { show: series.length > 1 && series.length <= 12 },  // one series: its name is the title
    series: [{ label: opts.xlabel || "x" },
             ...series.map((s, i) => ({ label: s.label, stroke: s.stroke || runColour(s.colour ?? i), width: 1.5, spanGaps: true,
                                        points: { show: s.x.length < 60 } }))],
    hooks: { draw: [u => { u.root.dataset.drawn = String(+(u.root.dataset.drawn || 0) + 1); }] },
  }, opts.linear ? alignSeries(series) : chartData(series), holder);
  u.root.dataset.series = String(series.length);
  u.root.dataset.points = String(series.reduce((n, s) => n + s.x.length, 0));
  charts.push(u);
  return u;
}

// heatmap group × layer as SVG (one rect per cell, a tooltip with the value)
function heatmap(lm, opts = {}) {
  const cell = opts.cell || 22, left = 90, top = 24, rows = lm.groups.length, cols = lm.layers.length;
  const vals = lm.values.flat().filter(v => v !== null && isFinite(v));
  const lo = Math.min(...vals), hi = Math.max(...vals);
  const title = `${lm.name}${lm.step !== null ? " (step " + lm.step + ")" : ""}: ${fmt(lo)} … ${fmt(hi)}`;
  const w = Math.max(left + cols * cell + 10, 6.5 * title.length + 8), h = top + rows * cell + 30;
  const s = svgEl("svg", { class: "heatmap", width: w, height: h, viewBox: `0 0 ${w} ${h}`, "data-cells": String(rows * cols) });
  s.append(svgEl("text", { x: 4, y: 14, class: "ttl" }, title));
  lm.groups.forEach((g, r) => {
    s.append(svgEl("text", { x: left - 4, y: top + r * cell + cell * 0.65, "text-anchor": "end" }, g === "" ? "(all)" : g.slice(0, 12)));
    lm.layers.forEach((l, c) => {
      const v = lm.values[r][c];
      const t = v === null || hi === lo ? 0.5 : (v - lo) / (hi - lo);
      const rect = svgEl("rect", { x: left + c * cell, y: top + r * cell, width: cell - 1, height: cell - 1,
                                   fill: v === null ? "#eee" : viridis(t) });
      rect.append(svgEl("title", {}, `group ${g}, layer ${l}: ${v === null ? "—" : v}`));
      s.append(rect);
    });
  });
  lm.layers.forEach((l, c) => {
    if (cols <= 40 || c % Math.ceil(cols / 40) === 0)
      s.append(svgEl("text", { x: left + c * cell + cell / 2, y: top + rows * cell + 14, "text-anchor": "middle" }, l));
  });
  s.append(svgEl("text", { x: left + cols * cell / 2, y: h - 2, "text-anchor": "middle" }, "layer"));
  return s;
}
// per-layer profile: the mean over groups at each layer
function profile(lm) {
  const y = lm.layers.map((_, c) => {
    const v = lm.values.map(r => r[c]).filter(v => v !== null);
    return v.length ? v.reduce((a, b) => a + b, 0) / v.length : null;
  });
  return { x: lm.layers, y };
}

function chartControls(onChange) {
  const sm = el("input", { type: "range", min: 0, max: 0.99, step: 0.01, value: prefs.smooth, id: "smooth" });
  const smv = el("span", {}, prefs.smooth);
  sm.addEventListener("input", () => { prefs.smooth = +sm.value; smv.textContent = sm.value; onChange(); });
  const xs = el("select", { id: "xaxis" }, el("option", { value: "step" }, "step"), el("option", { value: "time" }, "time"),
                el("option", { value: "elapsed" }, "elapsed s"));
  xs.value = prefs.x;
  xs.addEventListener("change", () => { prefs.x = xs.value; onChange(true); });
  const lg = el("input", { type: "checkbox", id: "logscale", checked: prefs.log });
  lg.addEventListener("change", () => { prefs.log = lg.checked; onChange(); });
  return el("div", { class: "controls" }, el("label", {}, "x axis ", xs), el("label", {}, "smoothing ", sm, " ", smv),
            el("label", {}, lg, " log scale"));
}

// --- runs page --------------------------------------------------------------------------
// Newest first, PAGE at a time (the API's limit/offset); by default the top-level runs, each
// with its children a click away (▸), nested as deep as they go.
async function runsPage(q) {
  const f = { name: q.get("name") || "", status: q.get("status") || "", parent: q.get("parent") || "none",
              offset: Math.max(0, parseInt(q.get("offset") || "0", 10) || 0) };
  const name = el("input", { id: "f-name", placeholder: "name contains", value: f.name });
  const status = el("select", { id: "f-status" }, ["", "running", "ok", "failed", "interrupted", "crashed"].map(s => el("option", { value: s }, s || "any status")));
  status.value = f.status;
  const parent = el("input", { id: "f-parent", placeholder: "parent id, none or all", value: f.parent, size: 10,
                               title: "none: top-level runs; all: every run; a run id: its children" });
  const list = el("div", { id: "runs" });
  const cmp = el("button", { id: "compare-btn", onclick: () => {
    const ids = [...new Set([...list.querySelectorAll("input.pick:checked")].map(c => c.value))];
    if (ids.length) location.hash = "#/compare/" + ids.join(",");
  } }, "compare selected");
  const hashFor = (offset) => {
    const p = new URLSearchParams();
    if (name.value) p.set("name", name.value);
    if (status.value) p.set("status", status.value);
    p.set("parent", parent.value || "none");
    if (offset) p.set("offset", offset);
    return "#/?" + p.toString();
  };
  const apply = () => { location.hash = hashFor(0); };
  for (const i of [name, parent]) i.addEventListener("keydown", e => { if (e.key === "Enter") apply(); });
  status.addEventListener("change", apply);
  main.replaceChildren(el("h1", {}, "runs"), el("div", { class: "filters" }, name, status, parent, el("button", { onclick: apply }, "filter"), cmp), list);
  const open = new Set();  // runs whose children are shown
  const COLS = ["", "id", "parent", "name", "status", "params", "started", "secs", "device", "children", "error"];
  // params: those in which the runs listed together differ (the seed among them; outputs and
  // paths last), three at most, every param in the tooltip; an error: its first line
  const paramsOf = (r, keys) => {
    const shown = keys.filter(k => k === "seed" && !(k in r.params) ? r.seed !== null : k in r.params).slice(0, 3);
    const all = Object.entries(r.params).map(([k, v]) => `${k}=${v}`).join("\n");
    return el("span", { class: "run-params", title: all || false },
              shown.map(k => { const v = fmtParam(k in r.params ? r.params[k] : r.seed); return `${k}=${v.length > 16 ? v.slice(0, 15) + "…" : v}`; }).join(" "));
  };
  const rowsOf = (runs, depth) => {
   const keys = legendKeys(runs.map(r => ({ params: r.params || {}, seed: r.seed })));
   return runs.flatMap(r => {
    const kids = r.children ? el("button", { class: "kids", "data-run": r.id, title: "show the children",
                                              onclick: () => { open.has(r.id) ? open.delete(r.id) : open.add(r.id); load().catch(showError); } },
                                  (open.has(r.id) ? "▾ " : "▸ ") + r.children) : "";
    const tr = el("tr", { class: depth ? "child" : "" }, [
      el("input", { type: "checkbox", class: "pick", value: r.id, checked: checked.has(String(r.id)) }),
      el("a", { href: "#/run/" + r.id, style: depth ? `margin-left:${depth * 1.2}em` : false }, r.id),
      r.parent_id ? el("a", { href: "#/run/" + r.parent_id }, r.parent_id) : "",
      el("a", { href: "#/run/" + r.id }, r.name), statusBadge(r.status, r.alive, r.gone), paramsOf({ params: {}, ...r }, keys),
      dateCell(r.started_at), fmt(r.secs), r.device,
      kids, r.error ? el("span", { class: "error1", title: r.error }, firstLine(r.error)) : ""].map(c => el("td", {}, c)));
    return [tr, ...(open.has(r.id) && childRows.has(r.id) ? childRows.get(r.id) : [])];
   });
  };
  let checked = new Set(), childRows = new Map();
  const load = async () => {
    const p = new URLSearchParams({ limit: PAGE, offset: f.offset });
    if (f.name) p.set("name", f.name);
    if (f.status) p.set("status", f.status);
    if (f.parent !== "all") p.set("parent", f.parent);
    const d = await api("/api/runs?" + p.toString());
    // the children of the open rows, nested (one request per open row; a row lists at most 1000)
    const kids = new Map();
    const fetchKids = async (id, depth) => {
      const c = await api(`/api/runs?parent=${id}&limit=1000`);
      kids.set(id, { runs: c.runs, depth, total: c.total });
      await Promise.all(c.runs.filter(r => open.has(r.id)).map(r => fetchKids(r.id, depth + 1)));
    };
    await Promise.all(d.runs.filter(r => open.has(r.id)).map(r => fetchKids(r.id, 1)));
    checked = new Set([...list.querySelectorAll("input.pick:checked")].map(c => c.value));
    childRows = new Map();
    const build = (id) => {  // rows of an open run's children, deepest first
      const k = kids.get(id);
      k.runs.filter(r => kids.has(r.id)).forEach(r => build(r.id));
      const rows = rowsOf(k.runs, k.depth);
      if (k.total > k.runs.length)
        rows.push(el("tr", { class: "child" }, el("td", { colspan: COLS.length, class: "muted" },
          `${k.runs.length} of ${k.total} children shown: `, el("a", { href: `#/?parent=${id}` }, "all of them"))));
      childRows.set(id, rows);
    };
    d.runs.filter(r => kids.has(r.id)).forEach(r => build(r.id));
    const t = table(COLS, [], { class: "runs" });
    t.tBodies[0].append(...rowsOf(d.runs, 0));
    const last = f.offset + d.runs.length;
    const pager = el("div", { class: "pager" },
      el("span", { class: "muted", id: "runs-count" }, d.total ? `runs ${f.offset + 1}–${last} of ${d.total}` : "no runs",
         f.parent === "none" ? " (top-level; parent=all lists every run)" : ""), " ",
      f.offset > 0 ? el("a", { href: hashFor(Math.max(0, f.offset - PAGE)), id: "prev" }, "‹ newer") : "", " ",
      last < d.total ? el("a", { href: hashFor(last), id: "next" }, "older ›") : "");
    list.replaceChildren(pager, el("div", { class: "wide" }, t));
    return d.runs.some(r => r.status === "running");
  };
  try {
    await load();
    every(POLL_MS, () => load().catch(() => {}));  // live status
    ready();
  } catch (e) { showError(e); }
}

// --- run page ---------------------------------------------------------------------------
// names in groups whose request line stays well under the server's 8 KB
function chunks(names, chars = 4000) {
  const out = [[]];
  let n = 0;
  for (const name of names) {
    const len = encodeURIComponent(name).length + 1;
    if (out[out.length - 1].length && n + len > chars) { out.push([]); n = 0; }
    out[out.length - 1].push(name);
    n += len;
  }
  return out.filter(c => c.length);
}
// the series of `names` on the x axis `x` (step, time, elapsed): one run (`ids` a number) or
// many at once (/api/compare/metrics; `ids` an array, each series then carries its `run`)
async function metricSeries(ids, names, x = prefs.x, points = 2000) {
  if (!names.length) return [];
  const ax = x === "step" ? "step" : "time";
  const many = Array.isArray(ids);
  const parts = await Promise.all(chunks(names).map(c => api(many
    ? `/api/compare/metrics?ids=${idRanges(ids)}&x=${ax}&points=${points}&name=${c.map(encodeURIComponent).join(",")}`
    : `/api/runs/${ids}/metrics?x=${ax}&points=${points}&name=${c.map(encodeURIComponent).join(",")}`)));
  const series = parts.flatMap(d => d.series);
  if (x === "elapsed")  // seconds since the series' first point: runs line up in compare
    for (const s of series) { const x0 = s.x[0]; s.x = s.x.map(v => v - x0); }
  return series;
}
// ids as the API's ranges: 3,4,5,6,9 → "3-6,9" (a sweep's 2,000 children fit a request line)
function idRanges(ids) {
  const n = [...new Set(ids.map(Number))].sort((a, b) => a - b), out = [];
  for (let i = 0; i < n.length; i++) {
    let j = i;
    while (j + 1 < n.length && n[j + 1] === n[j] + 1) j++;
    out.push(j > i ? `${n[i]}-${n[j]}` : String(n[i]));
    i = j;
  }
  return out.join(",");
}

async function runPage(id) {
  const d = await api("/api/runs/" + id);
  const r = d.run;
  const head = el("div", { class: "runhead" });
  const renderHead = (d) => head.replaceChildren(
    el("h1", {}, `run ${d.run.id}: ${d.run.name} `, statusBadge(d.run.status, d.run.alive, d.run.gone)),
    el("p", { class: "muted" }, `started ${d.run.started_at}`, d.run.finished_at ? `, finished ${d.run.finished_at}` : "",
       `, ${fmt(d.run.secs)} s`, d.run.device ? `, ${d.run.device}` : "", d.run.seed !== null ? `, seed ${d.run.seed}` : "",
       d.run.git_rev ? `, git ${String(d.run.git_rev).slice(0, 12)}` : ""),
    d.run.parent_id ? el("p", {}, "child of ", el("a", { href: "#/run/" + d.run.parent_id }, "run " + d.run.parent_id)) : "",
    d.run.rerun_of ? el("p", {}, "a rerun of ", el("a", { href: "#/run/" + d.run.rerun_of }, "run " + d.run.rerun_of), ": ",
                        el("a", { href: `#/compare/${d.run.rerun_of},${d.run.id}` }, "compare with it")) : "",
    d.run.gone ? el("p", { class: "error", id: "gone" }, `${d.run.gone}: shown as running until the next writer marks it crashed`) : "",
    d.run.error ? el("pre", { class: "error" }, d.run.error) : "");
  renderHead(d);

  const page = [head];
  page.push(section("command",
    d.run.command ? el("div", {}, el("span", { class: "muted" }, "as run: "), el("code", { id: "command" }, d.run.command)) : "",
    el("div", {}, el("span", { class: "muted" }, "rerun: "), el("code", { id: "rerun" }, d.run.rerun)),
    d.run.script_text ? el("details", {}, el("summary", {}, `script ${d.run.script_path || ""} (${d.run.script_text.length} bytes)`),
                           el("pre", { class: "script" }, d.run.script_text)) : ""));
  const pk = Object.keys(d.params);
  if (pk.length) page.push(section("params", el("div", { class: "wide" }, table(["key", "value"], pk.map(k => [k, d.params[k]]), { class: "params" }))));

  // metrics: the one-value ones in a table first, then the curves grouped by prefix, loss first
  const curves = el("div", { id: "metric-charts" });
  const scalars = el("div", { id: "scalars" });
  const summary = el("div");
  const search = el("input", { id: "metric-filter", placeholder: "filter curves", size: 16 });
  let series = [], seriesX = prefs.x, mine = [], generation = 0;
  const curveNames = (d) => splitMetrics(d.metrics).groups.flatMap(g => g.metrics.map(m => m.name));
  const showMatching = () => {
    const t = search.value.toLowerCase();
    for (const b of curves.querySelectorAll(".chart")) b.style.display = b.dataset.metric.toLowerCase().includes(t) ? "" : "none";
  };
  search.addEventListener("input", showMatching);
  const drawCurves = async (refetch) => {
    const mineNow = ++generation;  // a newer draw (another x axis, another poll) wins
    if (refetch) {
      const x = prefs.x, fresh = await metricSeries(id, curveNames(d), x);
      if (mineNow !== generation) return;
      series = fresh;
      seriesX = x;
    }
    forget(mine.splice(0));
    curves.replaceChildren();
    const byName = new Map(series.map(s => [s.name, s]));
    const groups = splitMetrics(d.metrics).groups;
    for (const g of groups) {
      const box = el("div", { class: "charts", "data-group": g.name });
      if (groups.length > 1) curves.append(el("h3", {}, g.name || "(no prefix)"));
      curves.append(box);
      for (const m of g.metrics) {
        const s = byName.get(m.name);
        if (!s) continue;
        const holder = el("div", { class: "chart", "data-metric": s.name });
        box.append(holder);
        const c = lineChart(holder, `${s.name}${s.downsampled ? ` (${s.x.length} of ${s.points} points)` : ""}`, [{ label: s.name, x: s.x, y: s.y }],
                            { time: seriesX === "time", xlabel: seriesX === "elapsed" ? "seconds" : seriesX });
        c.root.dataset.x = seriesX;
        mine.push(c);
      }
    }
    showMatching();
  };
  const renderSummary = (d) => {
    const sc = splitMetrics(d.metrics).scalars;
    scalars.replaceChildren(sc.length ? table(["value", "metric", "step"], sc.map(m => [m.last, m.name, m.last_step]), { class: "scalars" }) : "");
    summary.replaceChildren(d.metrics.length ? table(["metric", "points", "first step", "last step", "last", "min", "max"],
      d.metrics.map(m => [m.name, m.points, m.first_step, m.last_step, m.last, m.min, m.max])) : el("p", { class: "muted" }, "no metrics"));
  };
  renderSummary(d);
  // chart controls only above charts (a run of one-value metrics has none; a running one may get curves)
  const hasCurves = splitMetrics(d.metrics).groups.length > 0 || r.status === "running";
  page.push(section("metrics", scalars, el("details", {}, el("summary", {}, "summary of every metric"), el("div", { class: "wide" }, summary)),
                    hasCurves ? el("div", { class: "controls" }, chartControls(refetch => drawCurves(refetch).catch(showError)), search) : "", curves));

  // layer metrics: a heatmap and a profile per name
  const layerBox = el("div", { id: "layer-metrics" });
  if (d.layer_metrics.length) page.push(section("layer metrics", layerBox));
  // evaluation
  if (d.eval.length) page.push(section("evaluation", evalView(id, d.eval)));
  // artifacts
  if (d.artifacts.length) page.push(section("artifacts", el("div", { class: "artifacts" }, d.artifacts.map(a => {
    const link = el("a", { href: a.url, target: "_blank" }, a.path);
    if (a.refused) return el("div", {}, `${a.kind}: `, el("span", { class: "muted" }, `${a.path} (not served: ${a.refused})`));
    if (/\.(svg|png|jpe?g|gif)$/i.test(a.path) && a.exists)  // by file type: a kind "figure" is an SVG too
      return el("figure", {}, el("img", { src: a.url, alt: a.path, class: "svg-artifact" }), el("figcaption", {}, `${a.kind}: `, link));
    return el("div", {}, `${a.kind}: `, a.exists ? link : el("span", { class: "muted" }, a.path + " (missing)"));
  }))));
  // children: the first CHILDREN_SHOWN with the params in which they differ and their key metrics
  // (the results table's default columns), and links to all of them in the table and compare
  if (d.children.length) {
    const kids = await api("/api/table?" + new URLSearchParams({ parent: id, sort: "id", order: "asc", limit: CHILDREN_SHOWN }).toString());
    const metricHead = kids.metrics.flatMap(m => [`${m} last`, `${m} min`]);
    const t = table(["id", "name", "status", ...kids.params, ...metricHead, "started", "secs"],
      kids.rows.map(c => [el("a", { href: "#/run/" + c.id }, c.id), el("a", { href: "#/run/" + c.id }, c.name), statusBadge(c.status, c.alive, c.gone),
                          ...kids.params.map(k => paramCell(c.params[k])),
                          ...kids.metrics.flatMap(m => [fmt((c.metrics[m] || {}).last), fmt((c.metrics[m] || {}).min)]),
                          dateCell(c.started_at), c.secs]), { class: "children", id: "children" });
    page.push(section("children", el("p", {},
      el("a", { id: "sweep-table", href: "#/table?" + new URLSearchParams({ parent: id }).toString() },
         `all ${kids.total} in the results table`), " (sort, filter, param against metric, parallel coordinates) · ",
      el("a", { href: "#/compare/" + d.children.map(c => c.id).join(",") }, "compare the children")),
      el("div", { class: "wide" }, t),
      kids.total > kids.rows.length ? el("p", { class: "muted" }, `the first ${kids.rows.length} of ${kids.total}`) : ""));
  }

  main.replaceChildren(...page);
  await drawCurves(true);
  for (const lm of d.layer_metrics) {
    const data = await api(`/api/runs/${id}/layer_metrics?name=${encodeURIComponent(lm.name)}`);
    const box = el("div", { class: "layer", "data-layer-metric": lm.name });
    layerBox.append(box);
    drawLayer(box, id, data);
  }

  if (r.status === "running") {
    let busy = false;
    every(POLL_MS, async () => {
      if (busy) return;
      busy = true;
      try {
        const nd = await api("/api/runs/" + id);
        renderHead(nd);
        renderSummary(nd);
        const asked = generation, x = prefs.x;
        const fresh = await metricSeries(id, curveNames(nd), x);
        if (asked !== generation) throw new Error("superseded");  // the x axis changed meanwhile
        const sameNames = fresh.length === series.length && fresh.every((s, i) => s.name === series[i].name);
        d.metrics = nd.metrics;
        series = fresh;
        seriesX = x;
        const byName = new Map(series.map(s => [s.name, s]));
        if (sameNames) mine.forEach(c => {
          const s = byName.get(c.root.parentNode.dataset.metric);
          c.setData(chartData([{ x: s.x, y: s.y }]));
          c.root.dataset.points = String(s.x.length);
        });
        else await drawCurves(false);
        if (nd.run.status !== "running") { timers.forEach(clearInterval); timers = []; }
      } catch (e) { /* the next poll tries again */ }
      busy = false;
    });
  }
  ready();
}

function drawLayer(box, id, data) {
  const steps = data.steps.length > 1 ? el("select", {}, data.steps.map(s => el("option", { value: s }, "step " + s))) : null;
  if (steps) {
    steps.value = data.step;
    steps.addEventListener("change", async () => {
      const nd = await api(`/api/runs/${id}/layer_metrics?name=${encodeURIComponent(data.name)}&step=${steps.value}`);
      box.replaceChildren();
      drawLayer(box, id, nd);
    });
  }
  const prof = el("div", { class: "chart" });
  box.append(el("h3", {}, data.name, " ", steps || ""), el("div", { class: "row" }, el("div", { class: "hm" }, heatmap(data)), prof));
  const p = profile(data);
  lineChart(prof, `${data.name} by layer${data.groups.length > 1 ? " (mean over groups)" : ""}`, [{ label: data.name, ...p }], { xlabel: "layer", linear: true, height: 200 });
}

// an item's prompt, folded (its last line shown: the question's end); and what it generated
// (none for the logit and cloze protocols; not stored before db/migrations/0008)
function promptCell(p) {
  if (p === null || p === undefined) return el("span", { class: "muted" }, "(not stored)");
  const lines = p.trimEnd().split("\n");
  return el("details", { class: "prompt" }, el("summary", {}, lines[lines.length - 1].slice(0, 60) || "(prompt)"), el("pre", { class: "evaltext" }, p));
}
function outputCell(o, protocol) {
  if (o === null || o === undefined)
    return el("span", { class: "muted" }, protocol === "logit" || protocol === "cloze" ? "(no output: " + protocol + ")" : "(not stored)");
  return el("pre", { class: "evaltext output" }, o);
}

function evalView(id, evals) {
  const items = el("div", { class: "items" });
  const drill = async (bench, protocol, category) => {
    const p = new URLSearchParams({ bench, protocol, limit: 200 });
    if (category !== undefined) p.set("category", category);
    const d = await api(`/api/runs/${id}/eval_items?` + p.toString());
    items.replaceChildren(el("h3", {}, `${bench} / ${protocol}${category !== undefined ? " / " + (category || "(none)") : ""}: ${d.total} items${d.total > d.items.length ? ", first " + d.items.length : ""}`),
      table(["item", "category", "prompt", "output", "prediction", "answer", "correct"],
            d.items.map(i => [i.item_id, i.category, promptCell(i.prompt), outputCell(i.output, i.protocol),
                              i.prediction === null || i.prediction === "" ? el("span", { class: "muted" }, "(none)") : i.prediction,
                              i.answer, i.correct === null ? "" : el("span", { class: i.correct ? "ok" : "bad" }, i.correct ? "✓" : "✗")]),
            { class: "eval-items" }));
  };
  const rows = [];
  for (const e of evals) {
    rows.push([el("a", { href: "javascript:void 0", class: "drill", onclick: () => drill(e.bench, e.protocol).catch(showError) }, e.bench), e.protocol, "(all)", e.items, e.correct, e.accuracy]);
    if (e.categories.length > 1 || (e.categories[0] && e.categories[0].category))
      for (const c of e.categories)
        rows.push(["", "", el("a", { href: "javascript:void 0", onclick: () => drill(e.bench, e.protocol, c.category).catch(showError) }, c.category || "(none)"), c.items, c.correct, c.accuracy]);
  }
  return el("div", {}, table(["bench", "protocol", "category", "items", "correct", "accuracy"], rows, { class: "eval" }), items);
}

// the items two runs were both scored on, per bench and protocol: how many each solved, and
// those solved by one only, with both predictions and outputs (/api/compare?a=&b=, `eval`)
function evalDiff(c, runs) {
  const name = k => { const d = runs.find(r => r.run.id === c[k]); return d ? `${d.run.id} ${d.run.name}` : String(c[k]); };
  const out = [table(["bench", "protocol", "items", "both solved", `only ${name("a")}`, `only ${name("b")}`, "neither"],
                     c.eval.map(e => [e.bench, e.protocol, e.items, e.both, e.only_a, e.only_b, e.neither]), { class: "eval-diff-summary" })];
  for (const e of c.eval) {
    if (!e.differing.length) continue;
    const shown = e.differing.length < e.only_a + e.only_b ? ` (the first ${e.differing.length} of ${e.only_a + e.only_b})` : "";
    out.push(el("h3", {}, `${e.bench} / ${e.protocol}: solved by one only${shown}`),
      table(["item", "category", "answer", "solved by", `${name("a")}: prediction`, "output", `${name("b")}: prediction`, "output", "prompt"],
            e.differing.map(i => [i.item_id, i.category, i.answer, el("span", { class: "ok solver" }, name(i.solved_by)),
                                  i.a.prediction, outputCell(i.a.output, e.protocol), i.b.prediction, outputCell(i.b.output, e.protocol),
                                  promptCell(i.a.prompt)]),
            { class: "eval-diff" }));
  }
  return el("div", { id: "eval-diff" }, out);
}

// the key of a colour scale (util.js colourScale) of param `k`: a viridis bar from its least to
// its greatest value, or a swatch per value
function colourLegend(k, sc) {
  if (sc.kind === "numeric") {
    const stops = [0, 0.25, 0.5, 0.75, 1].map(t => `${viridis(t)} ${t * 100}%`).join(", ");
    return el("div", { class: "key-numeric" }, el("b", {}, k), " ", el("span", { class: "key-lo" }, fmtNum(sc.lo)), " ",
              el("span", { class: "key-bar", style: `background: linear-gradient(to right, ${stops})` }), " ",
              el("span", { class: "key-hi" }, fmtNum(sc.hi)), sc.log ? el("span", { class: "muted" }, " (log)") : "");
  }
  return el("div", { class: "key-category" }, el("b", {}, k), " ", sc.values.slice(0, 40).map(v =>
    el("span", { class: "key-item" }, el("span", { class: "swatch", style: `background:${sc.colour(v)}` }), fmtParam(v))),
    sc.values.length > 40 ? el("span", { class: "muted" }, ` (+${sc.values.length - 40} more)`) : "");
}

// --- compare ----------------------------------------------------------------------------
// Any number of runs (a sweep's 2,000 children): one request for the runs, one per batch of
// metric names for the curves, one per layer metric; each run keeps its colour in every chart.
const HEATMAPS = 12;  // per layer metric, the heatmaps of the first runs only
const LEGEND_RUNS = 12;  // past this many runs: no legends, a colour key by a param
async function comparePage(idsText) {
  const ids = parseIds(idsText);  // ids and ranges A-B, as the API takes them
  if (!ids.length) {
    main.replaceChildren(el("h1", {}, "compare"), el("p", {}, "Pick runs on the ", el("a", { href: "#/" }, "runs page"), ", or open #/compare/ID,ID,... (ranges A-B too)"));
    return ready();
  }
  const runs = (await api("/api/compare?ids=" + idRanges(ids))).runs;
  const label = d => `${d.run.id} ${d.run.name}`;
  const head = ids.length <= 20 ? ids.map(i => el("a", { href: "#/run/" + i }, i + " ")) : `${ids.length} runs`;
  const page = [el("h1", {}, "compare ", head)];
  // what tells the runs apart: the params that differ and the seed, those that set a run up
  // first (outputs logged as params and paths last); the legends name runs by them
  const keys = [...new Set(runs.flatMap(d => Object.keys(d.params)))].sort();
  const differing = legendKeys(runs.map(d => ({ params: d.params, seed: d.run.seed })));
  const valueOf = (d, k) => k in d.params ? d.params[k] : k === "seed" ? d.run.seed : null;
  const same = keys.filter(k => !differing.includes(k));
  if (runs.length <= LEGEND_RUNS) {
    // a few runs: a column per run, the differing params first and marked
    const sorted = [...differing, ...same];
    const pt = table(["param", ...runs.map(label)], sorted.map(k => [k, ...runs.map(d => paramCell(valueOf(d, k)))]), { class: "params-diff" });
    [...pt.tBodies[0].rows].forEach((tr, i) => { if (differing.includes(sorted[i])) tr.className = "differs"; });
    page.push(section("params", el("p", { class: "muted" }, `${differing.length} of ${keys.length} differ (first)`), el("div", { class: "wide", id: "params-wide" }, pt)));
  } else {
    // many runs (a sweep): a row per run with only what differs; what all share, once
    const pt = table(["id", "name", ...differing], runs.map(d => [el("a", { href: "#/run/" + d.run.id }, d.run.id), d.run.name,
                                                                  ...differing.map(k => paramCell(valueOf(d, k)))]), { class: "params-runs", id: "params-runs" });
    page.push(section("params", el("p", { class: "muted" }, `${differing.length} differ between the ${runs.length} runs; ${same.length} are the same in all`),
      el("div", { class: "wide tall", id: "params-wide" }, pt),
      same.length ? el("details", {}, el("summary", {}, `the same in all ${runs.length} runs`),
                       table(["param", "value"], same.map(k => [k, paramCell(runs[0].params[k])]), { class: "params-same" })) : ""));
  }
  // colours: a few runs one palette colour each (and a legend per chart); many runs coloured by
  // a param (the first that differs, or one picked) with a colour key above the charts
  const legend = d => runLabel(d.run, { ...d.params, seed: d.run.seed }, differing, 2);
  const colourKey = el("div", { id: "colour-key", class: "colour-key" });
  const colourBy = el("select", { id: "colour-by" }, el("option", { value: "" }, "run"), differing.map(k => el("option", { value: k }, k)));
  // many runs: coloured by the first param that differs (not the seed: means are over seeds)
  colourBy.value = runs.length > LEGEND_RUNS ? differing.find(k => k !== "seed") || differing[0] || "" : "";
  const recolour = () => {
    const k = colourBy.value;
    if (!k) {
      runs.forEach((d, i) => { d.stroke = runColour(i); });
      colourKey.replaceChildren(runs.length > LEGEND_RUNS ? el("span", { class: "muted" }, "colour: one per run (run order)") : "");
      return;
    }
    const sc = colourScale(runs.map(d => valueOf(d, k)));
    runs.forEach(d => { d.stroke = sc.colour(valueOf(d, k)); });
    colourKey.replaceChildren(colourLegend(k, sc));
  };
  recolour();
  if (ids.length === 2) {  // what `ltrun compare A B` prints: sources (diffs), inputs, metrics aligned
    const c = await api(`/api/compare?a=${ids[0]}&b=${ids[1]}`);
    page.push(section("reproduction", el("p", { id: "reproduced" }, c.reproduced), el("pre", { id: "compare-report" }, c.report)));
    if (c.eval.length) page.push(section("evaluation, item by item", evalDiff(c, runs)));
  }
  const curves = el("div", { class: "charts", id: "compare-charts" });
  colourBy.addEventListener("change", () => { recolour(); draw().catch(showError); });
  page.push(section("metrics", el("div", { class: "controls" }, chartControls(() => draw().catch(showError)),
                                  el("label", {}, "colour by ", colourBy)), colourKey, curves));
  const lnames = [...new Set(runs.flatMap(d => d.layer_metrics))];
  const layerBox = el("div");
  if (lnames.length) page.push(section("layer metrics", layerBox));
  main.replaceChildren(...page);

  const names = [...new Set(runs.flatMap(d => d.metrics.map(m => m.name)))];
  const points = Math.max(100, Math.min(2000, Math.floor(200000 / runs.length)));  // a 2,000-run page stays small
  const byId = new Map(runs.map(d => [d.run.id, d]));
  let mine = [], generation = 0;
  const draw = async () => {
    const mineNow = ++generation, x = prefs.x;
    const all = await metricSeries(runs.map(d => d.run.id), names, x, points);
    if (mineNow !== generation) return;  // a newer x axis or smoothing was asked for meanwhile
    forget(mine.splice(0));
    curves.replaceChildren();
    const ordered = splitMetrics(names.map(n => ({ name: n, points: Math.max(...runs.map(d => (d.metrics.find(m => m.name === n) || {}).points || 0)) })));
    // one-value metrics of a few runs: a table (metric × run); of many, charts fitted to their data
    const fewScalars = runs.length <= LEGEND_RUNS ? ordered.scalars.map(m => m.name) : [];
    if (fewScalars.length) {
      const cell = (d, n) => { const s = all.find(s => s.run === d.run.id && s.name === n); return s && s.y.length ? fmt(s.y[s.y.length - 1]) : ""; };
      curves.append(el("div", { class: "wide", style: "flex-basis: 100%" }, table(["metric", ...runs.map(legend)],
        fewScalars.map(n => [n, ...runs.map(d => cell(d, n))]), { class: "scalars compare-scalars" })));
    }
    for (const n of [...ordered.groups.flatMap(g => g.metrics.map(m => m.name)), ...ordered.scalars.map(m => m.name).filter(n => !fewScalars.includes(n))]) {
      const ss = all.filter(s => s.name === n).map(s => ({ label: legend(byId.get(s.run)), stroke: byId.get(s.run).stroke, x: s.x, y: s.y }));
      const box = el("div", { class: "chart", "data-metric": n });
      curves.append(box);
      const c = lineChart(box, n, ss, { time: x === "time", xlabel: x === "elapsed" ? "seconds" : x });
      c.root.dataset.x = x;
      c.root.dataset.colours = JSON.stringify(ss.map(s => [String(s.label.split(" ")[0]), s.stroke]));
      mine.push(c);
    }
  };
  await draw();
  // per-layer metrics side by side: a profile per run overlaid, and the first runs' heatmaps
  for (const n of lnames) {
    const data = (await api(`/api/compare/layer_metrics?ids=${idRanges(ids)}&name=${encodeURIComponent(n)}`)).runs;
    const prof = el("div", { class: "chart" });
    const lab = lm => legend(byId.get(lm.run));
    layerBox.append(el("h3", {}, n), prof, el("div", { class: "row" }, data.slice(0, HEATMAPS).map(lm => el("div", { class: "hm" }, el("div", {}, lab(lm)), heatmap(lm, { cell: 14 })))),
                    data.length > HEATMAPS ? el("p", { class: "muted" }, `heatmaps of the first ${HEATMAPS} of ${data.length} runs`) : "");
    lineChart(prof, `${n} by layer`, data.map(lm => ({ label: lab(lm), stroke: byId.get(lm.run).stroke, ...profile(lm) })), { xlabel: "layer", linear: true });
  }
  ready();
}

// --- results table ----------------------------------------------------------------------
// Runs as rows; chosen params and the last / min / max of chosen metrics as columns, sorted and
// paged by the server (/api/table: ORDER BY and LIMIT/OFFSET in SQL), TABLE_PAGE rows at a time.
// Everything is in the hash (#/table?parent=&name=&status=&param=K=V&params=&metrics=&sort=
// &order=&offset=), so a view is a link. A run with children opens them in place (▸, in the same
// columns and order), or on a page of their own sorted by a metric's min ("best M": the best
// run of a sweep in one click).
const TABLE_PAGE = 50;
async function tablePage(q) {
  const keep = ["parent", "name", "status", "param", "params", "metrics", "sort", "order"];
  const st = {};
  for (const k of keep) if (q.has(k)) st[k] = q.get(k);
  const offset = Math.max(0, parseInt(q.get("offset") || "0", 10) || 0);
  const apiQuery = (over = {}) => {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries({ ...st, ...over })) if (v !== undefined && v !== null) p.set(k, v);
    return p;
  };
  const go = (over) => { const p = apiQuery(over); p.delete("limit"); location.hash = "#/table?" + p.toString(); };
  const d = await api("/api/table?" + apiQuery({ limit: TABLE_PAGE, offset }).toString());
  const cols = { params: d.params, metrics: d.metrics };
  const colArgs = { params: cols.params.join(","), metrics: cols.metrics.join(",") };

  // filters
  const name = el("input", { id: "t-name", placeholder: "name contains", value: st.name || "" });
  const status = el("select", { id: "t-status" }, ["", "running", "ok", "failed", "interrupted", "crashed"].map(s => el("option", { value: s }, s || "any status")));
  status.value = st.status || "";
  const parent = el("input", { id: "t-parent", placeholder: "parent: none, all or a run id", value: st.parent || "none", size: 10 });
  const pf = el("input", { id: "t-param", placeholder: "param KEY=VALUE", value: st.param || "", size: 14 });
  const apply = () => go({ name: name.value || undefined, status: status.value || undefined, parent: parent.value || "none",
                           param: pf.value || undefined, offset: undefined });
  for (const i of [name, parent, pf]) i.addEventListener("keydown", e => { if (e.key === "Enter") apply(); });
  status.addEventListener("change", apply);
  // columns: a checkbox per param key and metric name of these runs
  const pick = (kind, names) => el("div", { class: "colpick" }, el("b", {}, kind + ": "), names.map(n => el("label", {},
    el("input", { type: "checkbox", class: "col-" + kind, value: n, checked: cols[kind].includes(n),
                  onchange: () => go({ ...colArgs, [kind]: [...main.querySelectorAll("input.col-" + kind + ":checked")].map(c => c.value).join(","), offset: undefined }) }),
    " " + n)));
  const chooser = el("details", { id: "t-columns" }, el("summary", {}, `columns (${cols.params.length} params, ${cols.metrics.length} metrics)`),
                     pick("params", d.available.params), pick("metrics", d.available.metrics));
  // the metric a sweep's best run is picked by (its min): of the chosen ones that a child of the
  // row logged (none: no link), the first named like a loss
  const bestOf = r => { const ms = r.child_metrics || []; return ms.find(m => /loss/i.test(m)) || ms[0]; };

  // header: a click sorts by that column (again: the other way)
  const heads = [["", null], ["id", "id"], ["name", "name"], ["status", "status"], ["started", "started"], ["children", "children"],
                 ...cols.params.map(k => [k, "param:" + k]),
                 ...cols.metrics.flatMap(m => ["last", "min", "max"].map(a => [`${m} ${a}`, `${a}:${m}`]))];
  const thead = el("tr", {}, heads.map(([label, key]) => {
    if (!key) return el("th", {}, label);
    const on = d.sort === key;
    return el("th", { class: "sortable" + (on ? " sorted" : "") + (key.startsWith("param:") ? " param" : ""), "data-sort": key, title: "sort by " + label,
                      onclick: () => go({ ...colArgs, sort: key, order: on && d.order === "asc" ? "desc" : on ? "asc" : (key === "id" || key === "started" ? "desc" : "asc"), offset: undefined }) },
              label, on ? (d.order === "asc" ? " ▲" : " ▼") : "");
  }));
  const t = el("table", { class: "results", id: "results" }, el("thead", {}, thead), el("tbody"));
  const open = new Set();
  const rowOf = (r, depth) => {
    const bestBy = bestOf(r);
    const kids = r.children ? [
      el("button", { class: "kids", "data-run": r.id, title: "show the children here", onclick: () => toggle(r).catch(showError) },
         (open.has(r.id) ? "▾ " : "▸ ") + r.children),
      bestBy ? el("a", { class: "best", id: "best-" + r.id, title: `its children sorted by the min of ${bestBy}`,
                         href: "#/table?" + new URLSearchParams({ parent: r.id, ...colArgs, sort: "min:" + bestBy, order: "asc" }).toString() },
                  " best " + bestBy) : ""] : "";
    const tr = el("tr", { class: depth ? "child" : "", "data-run": r.id }, [
      el("input", { type: "checkbox", class: "pick", value: r.id }),
      el("a", { href: "#/run/" + r.id, style: depth ? `margin-left:${depth * 1.2}em` : false }, r.id),
      el("a", { href: "#/run/" + r.id }, r.name), statusBadge(r.status, r.alive, r.gone), dateCell(r.started_at), kids,
      ...cols.params.map(k => paramCell(r.params[k])),
      ...cols.metrics.flatMap(m => ["last", "min", "max"].map(a => el("span", { class: "num" }, fmt((r.metrics[m] || {})[a]))))
    ].map(c => el("td", {}, c)));
    return tr;
  };
  const childRows = new Map();  // run id → its rows shown under it
  const toggle = async (r) => {
    const tr = t.querySelector(`tr[data-run="${r.id}"]`);
    if (open.has(r.id)) {
      open.delete(r.id);
      for (const c of childRows.get(r.id) || []) c.remove();
      childRows.delete(r.id);
    } else {
      delete document.body.dataset.ready;
      const c = await api("/api/table?" + new URLSearchParams({ parent: r.id, ...colArgs, sort: d.sort, order: d.order, limit: TABLE_PAGE }).toString());
      open.add(r.id);
      const depth = +(tr.dataset.depth || 0) + 1;
      const rows = c.rows.map(k => { const x = rowOf(k, depth); x.dataset.depth = depth; return x; });
      if (c.total > c.rows.length)
        rows.push(el("tr", { class: "child" }, el("td", { colspan: heads.length, class: "muted" }, `${c.rows.length} of ${c.total} children: `,
          el("a", { href: "#/table?" + new URLSearchParams({ parent: r.id, ...colArgs, sort: d.sort, order: d.order }).toString() }, "all of them"))));
      tr.after(...rows);
      childRows.set(r.id, rows);
      ready();
    }
    tr.querySelector("button.kids").textContent = (open.has(r.id) ? "▾ " : "▸ ") + r.children;
  };
  t.tBodies[0].append(...d.rows.map(r => rowOf(r, 0)));
  const last = d.offset + d.rows.length;
  const pager = el("div", { class: "pager" },
    el("span", { id: "table-count" }, d.total ? `runs ${d.offset + 1}–${last} of ${d.total}` : "no runs"),
    d.offset > 0 ? el("a", { id: "t-prev", href: "#/table?" + (() => { const p = apiQuery({ offset: Math.max(0, d.offset - TABLE_PAGE) }); return p.toString(); })() }, "‹ newer") : "",
    last < d.total ? el("a", { id: "t-next", href: "#/table?" + apiQuery({ offset: last }).toString() }, "more ›") : "");
  const cmp = el("button", { id: "t-compare", onclick: () => {
    const ids = [...new Set([...t.querySelectorAll("input.pick:checked")].map(c => c.value))];
    if (ids.length) location.hash = "#/compare/" + ids.join(",");
  } }, "compare selected");
  const sweep = st.parent && /^\d+$/.test(st.parent);
  const title = sweep ? ["results: children of ", el("a", { href: "#/run/" + st.parent }, "run " + st.parent)] : ["results"];
  // a sweep's views over every child (a param against a metric; parallel coordinates), drawn
  // only when opened (a click on the table stays one request of 50 rows); the children fetched
  // once for both
  let allRows = null;
  const rowsOnce = () => allRows || (allRows = sweepRows(st, cols));
  const view = (id, summary, draw) => {
    const box = el("div", { id });
    const det = el("details", { id: id + "-open" }, el("summary", {}, summary), box);
    det.addEventListener("toggle", () => {
      if (!det.open || box.dataset.drawn) return;
      box.dataset.drawn = "0";
      rowsOnce().then(rows => draw(box, rows, cols)).then(() => { box.dataset.drawn = "1"; }).catch(showError);
    });
    return det;
  };
  const views = sweep && d.total && cols.params.length && cols.metrics.length
    ? [view("scatter", "param against metric (every child a point; colour, mean over seeds)", sweepScatter),
       view("parcoords", "parallel coordinates (every child a line through its params and a metric)", parallelCoords)] : [];
  main.replaceChildren(el("h1", {}, ...title),
    el("div", { class: "filters" }, name, status, parent, pf, el("button", { onclick: apply }, "filter"), cmp), chooser, pager,
    el("div", { class: "wide" }, t), ...views);
  ready();
}

// Every child of a sweep in the table's columns (its filters apply; /api/table 1,000 rows a
// request, at most 5,000)
async function sweepRows(st, cols) {
  const rows = [];
  for (let offset = 0; offset < 5000; offset += 1000) {
    const p = new URLSearchParams({ parent: st.parent, params: cols.params.join(","), metrics: cols.metrics.join(","), limit: 1000, offset });
    for (const k of ["name", "status", "param"]) if (st[k]) p.set(k, st[k]);
    const d = await api("/api/table?" + p.toString());
    rows.push(...d.rows);
    if (offset + d.rows.length >= d.total) break;
  }
  return rows;
}
const present = v => v !== null && v !== undefined && v !== "";
// a metric column's choices: "min:loss" for each metric and aggregate, a loss's min first
function metricChoices(cols) {
  const ms = [...cols.metrics].sort((a, b) => (/loss/i.test(a) ? 0 : 1) - (/loss/i.test(b) ? 0 : 1));
  return ms.flatMap(m => ["min", "last", "max"].map(a => el("option", { value: a + ":" + m }, `${m} ${a}`)));
}
const metricOf = (r, key) => { const [agg, ...rest] = key.split(":"); return (r.metrics[rest.join(":")] || {})[agg]; };

// SVG text widths in the views' font (11px)
const VIEW_FONT = "11px system-ui, sans-serif";
let viewCtx = null;
function textWidth(t) {
  if (!viewCtx) { viewCtx = document.createElement("canvas").getContext("2d"); viewCtx.font = VIEW_FONT; }
  return viewCtx.measureText(String(t)).width;
}
// a numeric axis over values: {ticks, labels, lo, hi, at(v) → 0..1}; log (decades) when asked
function numericAxis(vals, log) {
  let lo = Math.min(...vals), hi = Math.max(...vals);
  if (log) {
    let a = Math.floor(Math.log10(lo) + 1e-9), b = Math.ceil(Math.log10(hi) - 1e-9);
    if (b === a) b = a + 1;
    lo = 10 ** a; hi = 10 ** b;
    const ticks = logTicks(lo, hi);
    return { ticks, labels: tickLabels(ticks, true), lo, hi, at: v => (Math.log10(v) - a) / (b - a) };
  }
  if (lo === hi) { const pad = Math.abs(lo) * 0.1 || 1; lo -= pad; hi += pad; }
  const ticks = niceTicks(lo, hi, 5, true);
  lo = ticks[0]; hi = ticks[ticks.length - 1];
  return { ticks, labels: tickLabels(ticks, false), lo, hi, at: v => (v - lo) / (hi - lo) };
}

// A sweep's children as points: a param (x) against a metric's min, last or max (y); coloured by
// another param (its key below); or, with "mean", one point per x and colour (the runs that
// share them: seeds) at their mean, a bar over mean ± sd and a line through each colour's means
async function sweepScatter(box, rows, cols) {
  const xs = el("select", { id: "sc-x" }, cols.params.map(k => el("option", { value: k }, k)));
  const ys = el("select", { id: "sc-y" }, metricChoices(cols));
  const cs = el("select", { id: "sc-colour" }, el("option", { value: "" }, "none"), cols.params.map(k => el("option", { value: k }, k)));
  const logx = el("input", { type: "checkbox", id: "sc-logx" });
  const mean = el("input", { type: "checkbox", id: "sc-mean" });
  const plot = el("div", { class: "chart" }), key = el("div", { class: "colour-key", id: "sc-key" });
  box.replaceChildren(el("div", { class: "controls" }, el("label", {}, "x ", xs), el("label", {}, "y ", ys), el("label", {}, "colour ", cs),
                         el("label", {}, logx, " log x"), el("label", { title: "one point per x and colour: the mean over the runs sharing them (seeds), a bar over ± one sd" }, mean, " mean ± sd")),
                      plot, key);
  const draw = () => {
    const px = r => r.params[xs.value];
    let pts = rows.map(r => ({ r, x: Number(px(r)), y: metricOf(r, ys.value), g: cs.value ? r.params[cs.value] : null }))
                  .filter(p => present(px(p.r)) && isFinite(p.x) && present(p.y) && isFinite(p.y) && (!logx.checked || p.x > 0));
    const sc = cs.value ? colourScale(rows.map(r => r.params[cs.value])) : null;
    const colour = g => sc ? sc.colour(g) : runColour(0);
    const agg = mean.checked ? meanSpread(pts) : null;
    plot.replaceChildren(scatter(agg || pts, { xlabel: xs.value, ylabel: ys.value.replace(/^(\w+):(.*)$/, "$2 $1"), logx: logx.checked, colour, mean: !!agg }));
    key.replaceChildren(sc ? colourLegend(cs.value, sc) : "");
  };
  for (const c of [xs, ys, cs, logx, mean]) c.addEventListener("change", () => { box.dataset.drawn = "0"; draw(); box.dataset.drawn = "1"; });
  draw();
}

// points [{r (a run) | n (runs averaged), x, y, g, lo?, hi?}] as SVG circles: round ticks (on the
// decades when x is log), every label inside the box, the y title clear of the tick labels
function scatter(pts, o) {
  const W = 600, H = 320, T = 12, B = 40;
  const s = svgEl("svg", { class: "scatter", width: W, height: H, viewBox: `0 0 ${W} ${H}`, "data-points": String(pts.length) });
  if (!pts.length) { s.append(svgEl("text", { x: 60, y: H / 2 }, "no run has both")); return s; }
  const xa = numericAxis(pts.map(p => p.x), o.logx);
  const ya = numericAxis(pts.flatMap(p => o.mean ? [p.lo, p.hi] : [p.y]), false);
  const yw = Math.max(...ya.labels.map(textWidth));
  const L = 16 + 8 + Math.ceil(yw) + 6;  // the y title (rotated, 16 px), a gap, the widest tick label, the tick gap
  const R = Math.max(12, Math.ceil(textWidth(xa.labels[xa.labels.length - 1]) / 2) + 4);  // the last x label whole
  const X = v => L + xa.at(v) * (W - L - R), Y = v => H - B - ya.at(v) * (H - T - B);
  s.append(svgEl("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#999" }), svgEl("line", { x1: L, y1: T, x2: L, y2: H - B, stroke: "#999" }));
  xa.ticks.forEach((v, i) => s.append(svgEl("line", { x1: X(v), y1: H - B, x2: X(v), y2: H - B + 4, stroke: "#999" }),
                                      svgEl("text", { x: X(v), y: H - B + 16, "text-anchor": "middle", class: "tick x" }, xa.labels[i])));
  ya.ticks.forEach((v, i) => s.append(svgEl("line", { x1: L - 4, y1: Y(v), x2: L, y2: Y(v), stroke: "#999" }),
                                      svgEl("text", { x: L - 6, y: Y(v) + 4, "text-anchor": "end", class: "tick y" }, ya.labels[i])));
  s.append(svgEl("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle", class: "title x" }, o.xlabel + (o.logx ? " (log)" : "")),
           svgEl("text", { x: 12, y: (T + H - B) / 2, "text-anchor": "middle", class: "title y", transform: `rotate(-90 12 ${(T + H - B) / 2})` }, o.ylabel));
  if (o.mean) {  // a line through each colour's means, in x order
    const byG = new Map();
    for (const p of pts) { const k = JSON.stringify(p.g); if (!byG.has(k)) byG.set(k, []); byG.get(k).push(p); }
    for (const g of byG.values())
      if (g.length > 1) s.append(svgEl("polyline", { class: "group-line", fill: "none", stroke: o.colour(g[0].g), "stroke-width": 1.5,
        points: [...g].sort((a, b) => a.x - b.x).map(p => `${X(p.x).toFixed(1)},${Y(p.y).toFixed(1)}`).join(" ") }));
  }
  // means of several colours at one x side by side, 6 px apart
  const gs = [...new Set(pts.map(p => JSON.stringify(p.g)))].sort();
  const dx = p => o.mean ? (gs.indexOf(JSON.stringify(p.g)) - (gs.length - 1) / 2) * 6 : 0;
  pts.forEach(p => {
    if (o.mean) s.append(svgEl("line", { class: "spread", x1: X(p.x) + dx(p), x2: X(p.x) + dx(p), y1: Y(p.lo), y2: Y(p.hi), stroke: o.colour(p.g), "stroke-width": 1.5 }));
    const c = svgEl("circle", { cx: (X(p.x) + dx(p)).toFixed(2), cy: Y(p.y).toFixed(2), r: o.mean ? 4 : 3, fill: o.colour(p.g), "fill-opacity": 0.75,
                                "data-run": p.r ? p.r.id : null });
    c.append(svgEl("title", {}, p.r ? `run ${p.r.id} ${p.r.name}: ${o.xlabel} = ${p.x}, ${o.ylabel} = ${p.y}`
                                    : `${o.xlabel} = ${p.x}${p.g !== null ? ", " + p.g : ""}: mean ${fmtNum(p.y)} ± ${fmtNum(p.hi - p.y)} over ${p.n} runs`));
    s.append(c);
  });
  return s;
}

// Parallel coordinates: an axis per param of the table's columns (numbers on a linear or, from
// 20 times the least, a log axis; text evenly spaced) and one for a chosen metric; a line per
// child through its values, coloured by the metric
async function parallelCoords(box, rows, cols) {
  const ms = el("select", { id: "pc-metric" }, metricChoices(cols));
  const plot = el("div", { class: "chart" }), key = el("div", { class: "colour-key" });
  box.replaceChildren(el("div", { class: "controls" }, el("label", {}, "metric ", ms)), plot, key);
  const draw = () => {
    const mkey = ms.value, mlabel = mkey.replace(/^(\w+):(.*)$/, "$2 $1");
    const runs = rows.filter(r => present(metricOf(r, mkey)) && isFinite(metricOf(r, mkey)));
    const axes = cols.params.map(k => {
      const vals = runs.map(r => r.params[k]).filter(present);
      const nums = vals.map(Number);
      if (vals.length && nums.every(isFinite)) {
        const lo = Math.min(...nums), hi = Math.max(...nums);
        const a = numericAxis(nums, lo > 0 && hi / lo >= 20);
        return { key: k, ...a, pos: v => present(v) && isFinite(+v) ? a.at(+v) : null };
      }
      const cats = [...new Set(vals.map(String))].sort();
      const at = v => cats.length > 1 ? cats.indexOf(String(v)) / (cats.length - 1) : 0.5;
      const shown = cats.length <= 12 ? cats : cats.filter((_, i) => i % Math.ceil(cats.length / 12) === 0);
      return { key: k, ticks: shown, labels: shown.map(c => c.length > 14 ? c.slice(0, 13) + "…" : c), at, pos: v => present(v) ? at(v) : null };
    });
    const mvals = runs.map(r => metricOf(r, mkey));
    const ma = numericAxis(mvals.length ? mvals : [0], false);
    axes.push({ key: mlabel, metric: true, ...ma, pos: v => ma.at(v) });
    const gap = 130, L = 70, R = 90, T = 34, B = 24, H = 320, W = L + R + gap * (axes.length - 1);
    const s = svgEl("svg", { class: "parcoords", width: W, height: H, viewBox: `0 0 ${W} ${H}`, "data-lines": String(runs.length) });
    const Y = t => H - B - t * (H - T - B);
    const lo = Math.min(...mvals), hi = Math.max(...mvals);
    const colour = v => viridis(hi === lo ? 0.5 : (v - lo) / (hi - lo));
    for (const r of runs) {
      const ys = axes.map(a => a.metric ? a.pos(metricOf(r, mkey)) : a.pos(r.params[a.key]));
      if (ys.some(y => y === null || !isFinite(y))) continue;
      const line = svgEl("polyline", { class: "pc-line", fill: "none", stroke: colour(metricOf(r, mkey)), "stroke-opacity": 0.6, "stroke-width": 1.2,
                                       "data-run": r.id, points: ys.map((y, i) => `${L + i * gap},${Y(y).toFixed(1)}`).join(" ") });
      line.append(svgEl("title", {}, `run ${r.id} ${r.name}: ${cols.params.map(k => `${k}=${r.params[k]}`).join(" ")} → ${mlabel} ${fmtNum(metricOf(r, mkey))}`));
      s.append(line);
    }
    axes.forEach((a, i) => {
      const x = L + i * gap, g = svgEl("g", { class: "pc-axis" + (a.metric ? " metric" : ""), "data-key": a.key });
      g.append(svgEl("line", { x1: x, y1: T, x2: x, y2: H - B, stroke: "#555" }),
               svgEl("text", { x, y: T - 14, "text-anchor": "middle", class: "title" }, a.key.length > 20 ? a.key.slice(0, 19) + "…" : a.key));
      a.ticks.forEach((v, k) => g.append(svgEl("line", { x1: x - 3, y1: Y(a.at(v)), x2: x, y2: Y(a.at(v)), stroke: "#555" }),
                                         svgEl("text", { x: x - 5, y: Y(a.at(v)) + 4, "text-anchor": "end", class: "tick" }, a.labels[k])));
      s.append(g);
    });
    plot.replaceChildren(s);
    key.replaceChildren(runs.length ? colourLegend(mlabel, { kind: "numeric", lo, hi, log: false }) : "no child has " + mlabel);
  };
  ms.addEventListener("change", () => { box.dataset.drawn = "0"; draw(); box.dataset.drawn = "1"; });
  draw();
}

// --- SQL --------------------------------------------------------------------------------
async function sqlPage(q) {
  const box = el("textarea", { id: "sql", rows: 6, cols: 100, spellcheck: "false" }, q.get("q") || "SELECT id, name, status FROM runs ORDER BY id DESC LIMIT 20");
  const out = el("div", { id: "sql-out" });
  const queries = await api("/api/queries");
  const pick = el("select", { id: "named" }, el("option", { value: "" }, "named queries…"), queries.map(n => el("option", { value: n.name }, "@" + n.name)));
  pick.addEventListener("change", () => { const n = queries.find(n => n.name === pick.value); if (n) box.value = n.sql; });
  const run = async () => {
    try {
      const d = await api("/api/sql?q=" + encodeURIComponent(box.value));
      out.replaceChildren(el("p", { class: "muted" }, `${d.rows.length} row(s)${d.truncated ? " (truncated)" : ""}`), table(d.columns, d.rows));
    } catch (e) { out.replaceChildren(el("p", { class: "error" }, e.message)); }
    out.dataset.done = "1";
  };
  main.replaceChildren(el("h1", {}, "sql"), el("p", { class: "muted" }, "read-only: one SELECT at a time; writes are refused"),
                       el("div", {}, pick), box, el("div", {}, el("button", { id: "run-sql", onclick: run }, "run")), out);
  if (q.get("q")) await run();
  ready();
}

// --- router -----------------------------------------------------------------------------
async function route() {
  timers.forEach(clearInterval);
  timers = [];
  for (const c of charts.splice(0)) c.destroy();
  delete document.body.dataset.ready;
  const h = location.hash.replace(/^#/, "") || "/";
  const [path, qs] = h.split("?");
  const q = new URLSearchParams(qs || "");
  const parts = path.split("/").filter(Boolean);
  try {
    if (parts[0] === "run" && parts[1]) await runPage(parts[1]);
    else if (parts[0] === "compare") await comparePage(parts[1]);
    else if (parts[0] === "sql") await sqlPage(q);
    else if (parts[0] === "table") await tablePage(q);
    else await runsPage(q);
  } catch (e) { showError(e); }
}
window.addEventListener("hashchange", route);
api("/api/info").then(i => { document.getElementById("dbinfo").textContent = `${i.db} · ${i.runs} runs · schema ${i.schema_version}`; }).catch(() => {});
route();
