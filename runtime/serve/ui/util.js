// runtime/serve/ui/util.js: the pure helpers of the `ltrun serve` UI (no DOM): axis tick
// labels and the width they need, a colour and a legend label per run, metrics split into one-value scalars and
// curves. Loaded by index.html before app.js; tests/serve/util_test.js runs them under node.
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

if (typeof module !== "undefined") module.exports = { tickLabels, axisWidth, runColour, runLabel, splitMetrics };
