// runtime/serve/ui/util.js: the pure helpers of the `ltrun serve` UI (no DOM): axis ticks, their
// labels and the width they need, numbers to 4 significant digits, a colour and a legend label per
// run, colour scales, means over seeds, metrics split into one-value scalars and curves. Loaded
// by index.html before app.js; tests/serve/util_test.js runs them under node.
"use strict";

// Labels for the ticks of an axis: as few digits as tell every tick exactly (0.0005, never a
// rounded 0.001 twice), fixed notation between 1e-4 and 1e6, else exponent notation (3.5e-4);
// a non-zero tick is never "0". On a log axis each tick is labelled on its own (1, 10, 1e4).
function tickLabels(splits, log) {
  const vals = splits.filter(v => v !== null && isFinite(v));
  let step = Infinity;  // the smallest gap between ticks: what a label must resolve
  const sorted = [...new Set(vals)].sort((a, b) => a - b);
  for (let i = 1; i < sorted.length; i++) step = Math.min(step, sorted[i] - sorted[i - 1]);
  const big = Math.max(0, ...vals.map(Math.abs));
  // a tick's label may differ from it by a millionth of the step (uPlot's 0.30000000000000004)
  const tol = v => log || !isFinite(step) ? Math.abs(v) * 1e-6 : step * 1e-6;
  const fixed = v => {
    if ((log ? Math.abs(v) : big) >= 1e6) return null;
    for (let d = 0; d <= 6 && (d <= 4 || Math.abs(v) >= 1e-3); d++) {
      const s = v.toFixed(d);
      if (Math.abs(+s - v) <= tol(v) && +s !== 0) return s;
    }
    return null;
  };
  const expo = v => {
    for (let p = 0; p <= 15; p++) {
      const s = v.toExponential(p);
      if (Math.abs(+s - v) <= tol(v)) return s.replace("e+", "e");
    }
    return String(v);
  };
  const label = f => v => v === null || !isFinite(v) ? "" : v === 0 ? "0" : f(v);
  if (log) return splits.map(label(v => fixed(v) ?? expo(v)));
  // one notation for the whole axis
  const all = splits.map(label(v => fixed(v)));
  return all.includes(null) ? splits.map(label(expo)) : all;
}

// The width in px a y axis needs for these labels: the widest (measure(text) → px) plus
// uPlot's tick (10 px) and gap (5 px) and a margin, never below uPlot's 50.
function axisWidth(labels, measure) {
  const widest = Math.max(0, ...(labels || []).map(s => measure(String(s))));
  return Math.max(50, Math.ceil(widest) + 10 + 5 + 6);
}

// Colour of the i-th run of a page: ten distinct ones, then hues a golden angle apart (a run
// keeps its colour in every chart of the page, whether or not the other runs have the metric).
const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"];
function runColour(i) {
  if (i < PALETTE.length) return PALETTE[i];
  return `hsl(${Math.round((i * 137.508) % 360)}, 65%, ${i % 2 ? 38 : 48}%)`;
}

// A run's label in a chart legend: its id and its values of the params in which the runs on the
// page differ (the first `max` of them, the rest counted; each value cut to 16 characters),
// "12 lr=0.001 seed=2 (+1 more)"; its id and name when no param differs. Starts with the id.
function runLabel(run, params, differing, max = 3) {
  const cut = v => { const t = String(v ?? "-"); return t.length > 16 ? t.slice(0, 15) + "…" : t; };
  const shown = differing.slice(0, max).map(k => `${k}=${cut(params[k])}`);
  const more = differing.length > max ? ` (+${differing.length - max} more)` : "";
  return shown.length ? `${run.id} ${shown.join(" ")}${more}` : `${run.id} ${run.name}`;
}

// A run's metrics (the summaries of /api/runs/ID) split into one-value scalars (a table) and
// curves, the curves grouped by the prefix before the first '/' or '.'; the group holding
// `loss` first, in a group the names with `loss` first, then by name.
function splitMetrics(metrics) {
  const scalars = metrics.filter(m => m.points === 1);
  const curves = metrics.filter(m => m.points !== 1);
  const prefix = n => { const m = /^([^/.]+)[/.]/.exec(n); return m ? m[1] : ""; };
  const lossy = n => /loss/i.test(n) ? 0 : 1;
  const groups = new Map();
  for (const m of curves) {
    const p = prefix(m.name);
    if (!groups.has(p)) groups.set(p, []);
    groups.get(p).push(m);
  }
  const out = [...groups.entries()].map(([name, ms]) => ({
    name, metrics: ms.sort((a, b) => lossy(a.name) - lossy(b.name) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)) }));
  out.sort((a, b) => Math.min(...a.metrics.map(m => lossy(m.name))) - Math.min(...b.metrics.map(m => lossy(m.name))) ||
                     (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { scalars, groups: out };
}

// A number to 4 significant digits, as the tables show metrics: 0.0006309573444801685 → "6.31e-4",
// 12.3456 → "12.35", 1200 → "1200"; exponent notation below 1e-3 and from 1e5; integers whole.
function fmtNum(v) {
  if (v === null || v === undefined || v === "") return "";
  if (typeof v !== "number") return String(v);
  if (!isFinite(v)) return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
  const strip = t => t.replace(/(\.\d*?)0+(e|$)/, "$1$2").replace(/\.(e|$)/, "$1");
  if (v !== 0 && (Math.abs(v) < 1e-3 || Math.abs(v) >= 1e5)) return strip(v.toExponential(3)).replace("e+", "e");
  return strip(v.toPrecision(4));
}

// A param's value for a table cell: a number written with more than 4 significant digits
// ("0.0006309573444801685", stored as text) as fmtNum writes it; any other text as it is. The
// full value goes in the cell's tooltip.
const NUMBER_TEXT = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;
function fmtParam(v) {
  if (v === null || v === undefined) return "";
  if (typeof v === "number") return fmtNum(v);
  const t = String(v);
  if (!NUMBER_TEXT.test(t.trim()) || /^[-+]?\d+$/.test(t.trim())) return t;
  return fmtNum(+t);
}

// The first line of an error (a traceback's message), cut at `max` characters: what the runs
// list shows; the run's page has the whole text.
function firstLine(text, max = 140) {
  if (text === null || text === undefined) return "";
  const line = String(text).split("\n").map(s => s.trim()).find(s => s) || "";
  return line.length > max ? line.slice(0, max - 1) + "…" : line;
}

// Round ticks inside [lo, hi]: steps of 1, 2 or 5 times a power of ten, about `n` of them (a
// scatter's axis: 0.005 0.01 0.015, not 0.00526 0.01013); with `cover`, from the last tick at
// or below lo to the first at or above hi (an axis's ends).
function niceTicks(lo, hi, n = 5, cover = false) {
  if (!isFinite(lo) || !isFinite(hi)) return [];
  if (lo === hi) return [lo];
  const raw = (hi - lo) / Math.max(1, n - 1), p = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map(m => m * p).find(s => s >= raw * 0.999) || 10 * p;
  const out = [];
  const k0 = cover ? Math.floor(lo / step + 1e-9) : Math.ceil(lo / step - 1e-9);
  const k1 = cover ? Math.ceil(hi / step - 1e-9) : Math.floor(hi / step + 1e-9);
  for (let k = k0; k <= k1; k++) out.push(+(k * step).toPrecision(12));
  return out;
}

// Ticks of a log axis over [lo, hi] (both > 0): the decades inside it (1e-4, 0.001, 0.01); when
// it holds fewer than two, also 2 and 5 times them.
function logTicks(lo, hi) {
  if (!(lo > 0) || !(hi > 0)) return [];
  const a = Math.floor(Math.log10(lo) + 1e-9), b = Math.ceil(Math.log10(hi) - 1e-9);
  const inside = v => v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9);
  const decades = [];
  for (let k = a; k <= b; k++) if (inside(+(10 ** k).toPrecision(12))) decades.push(+(10 ** k).toPrecision(12));
  if (decades.length >= 2) return decades;
  const out = [];
  for (let k = a; k <= b; k++) for (const m of [1, 2, 5]) { const v = +(m * 10 ** k).toPrecision(12); if (inside(v)) out.push(v); }
  return out.length >= 2 ? out : [lo, hi];
}

// The keys a legend names a run by, of those that differ between the runs ({params, seed}
// each): the seed (a run field) and the params that set a run up first, then paths and long
// values, and last the params that look like outputs logged as params (final_val_loss,
// best_acc): "where the seed is what differs", the label says seed=2.
const OUTPUT_KEY = /(^|[_./])(final|best|last|min|max|mean)([_./]|$)|loss|acc(uracy)?$|score|ppl|perplexity|secs|time|tok(ens)?_?(per_)?s/i;
function legendKeys(runs) {
  const keys = [...new Set(runs.flatMap(r => Object.keys(r.params || {})))].sort();
  const differs = get => new Set(runs.map(r => JSON.stringify(get(r) ?? null))).size > 1;
  const out = keys.filter(k => differs(r => (r.params || {})[k])).map(k => {
    const vals = runs.map(r => String((r.params || {})[k] ?? ""));
    const rank = OUTPUT_KEY.test(k) ? 2 : vals.some(v => v.length > 24 || (v.includes("/") && !v.includes(" "))) ? 1 : 0;
    return { k, rank };
  });
  if (differs(r => r.seed) && !out.some(o => o.k === "seed")) out.push({ k: "seed", rank: 0, field: true });
  return out.sort((a, b) => a.rank - b.rank || (a.k === "seed" ? -1 : b.k === "seed" ? 1 : 0) || (a.k < b.k ? -1 : 1)).map(o => o.k);
}

// matplotlib's viridis at t in [0, 1] (a few stops, linearly interpolated)
function viridis(t) {
  const stops = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  const p = Math.max(0, Math.min(1, t)) * (stops.length - 1), i = Math.min(Math.floor(p), stops.length - 2), f = p - i;
  const c = stops[i].map((a, k) => Math.round(a + (stops[i + 1][k] - a) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

// A colour per value of a param over runs: numbers on a viridis scale (log when all are > 0 and
// span more than a decade: 20 times), else one palette colour per distinct value (sorted). Returns
// {kind: "numeric"|"category", colour(v), lo, hi, log, values}; values missing get grey.
function colourScale(values) {
  const present = values.filter(v => v !== null && v !== undefined && v !== "");
  const nums = present.map(Number);
  if (present.length && nums.every(isFinite) && new Set(nums).size > PALETTE.length) {
    const lo = Math.min(...nums), hi = Math.max(...nums), log = lo > 0 && hi / lo >= 20;
    const f = v => log ? Math.log10(v) : v, a = f(lo), b = f(hi);
    return { kind: "numeric", lo, hi, log,
             colour: v => v === null || v === undefined || v === "" || !isFinite(+v) ? "#bbb" : viridis(b === a ? 0.5 : (f(+v) - a) / (b - a)) };
  }
  const distinct = [...new Set(present.map(String))].sort((x, y) => nums.every(isFinite) ? x - y : x < y ? -1 : x > y ? 1 : 0);
  const index = new Map(distinct.map((v, i) => [v, i]));
  return { kind: "category", values: distinct,
           colour: v => index.has(String(v)) ? runColour(index.get(String(v))) : "#bbb" };
}

// Points {x, y, g} grouped by (x, g): the mean of y and its spread (mean ± one standard
// deviation; 0 for one point) over the runs that share them (seeds): [{x, g, y, lo, hi, n}].
function meanSpread(points) {
  const groups = new Map();
  for (const p of points) {
    const k = JSON.stringify([p.x, p.g ?? null]);
    if (!groups.has(k)) groups.set(k, { x: p.x, g: p.g ?? null, ys: [] });
    groups.get(k).ys.push(p.y);
  }
  return [...groups.values()].map(({ x, g, ys }) => {
    const n = ys.length, mean = ys.reduce((a, b) => a + b, 0) / n;
    const sd = n > 1 ? Math.sqrt(ys.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1)) : 0;
    return { x, g, y: mean, lo: mean - sd, hi: mean + sd, n };
  });
}

// The range of an axis whose points all sit at one value (a metric logged once, at step 60):
// that value ± 1 (or ± 5% of it; ± `pad` when given), not uPlot's 0 to twice it. null: let uPlot
// choose.
function fittedRange(min, max, pad) {
  if (min === null || max === null || !isFinite(min) || !isFinite(max) || min !== max) return null;
  pad = pad ?? Math.max(1, Math.abs(min) * 0.05);
  return [min - pad, max + pad];
}

// "#/compare/2-201,305": ids and ranges A-B, as the API takes them → the ids, in order, distinct
// (at most `max`); anything else is ignored.
function parseIds(text, max = 5000) {
  const out = [], seen = new Set();
  for (const t of String(text || "").split(",")) {
    const m = /^\s*(\d+)\s*(?:-\s*(\d+))?\s*$/.exec(t);
    if (!m) continue;
    const a = +m[1], b = m[2] === undefined ? a : +m[2];
    for (let i = a; i <= b && out.length < max; i++) if (!seen.has(i)) { seen.add(i); out.push(String(i)); }
  }
  return out;
}

if (typeof module !== "undefined")
  module.exports = { tickLabels, axisWidth, runColour, runLabel, splitMetrics, fmtNum, fmtParam, firstLine, niceTicks, logTicks,
                     legendKeys, viridis, colourScale, meanSpread, fittedRange, parseIds };
