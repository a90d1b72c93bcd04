// tests/serve/util_test.js: the pure helpers of the `ltrun serve` UI (runtime/serve/ui/util.js)
// under node: tick labels (the cases of issue 27: an lr axis read "0 / 0.001 / 0.001", a
// profile up to 3.6e-4 read "0, 0, 0", a log axis cut "10,000" to "0,000"), the axis width,
// run colours, scalars apart from curves. node util_test.js UTIL_JS
"use strict";
const { tickLabels, axisWidth, runColour, runLabel, splitMetrics } = require(require("path").resolve(process.argv[2]));

let passed = 0, failed = 0;
function check(what, ok, detail) {
  if (ok) passed++;
  else { failed++; console.error("FAIL: " + what + (detail !== undefined ? " (" + JSON.stringify(detail) + ")" : "")); }
}
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const eq = (splits, want, log) => {
  const got = tickLabels(splits, log);
  check(`ticks ${JSON.stringify(splits)}${log ? " (log)" : ""} -> ${JSON.stringify(want)}`, same(got, want), got);
};

eq([0, 0.0005, 0.001, 0.0015], ["0", "0.0005", "0.001", "0.0015"]);  // lr: not 0 / 0.001 / 0.001
eq([0, 0.0002, 0.0004, 0.0006, 0.0008, 0.001], ["0", "0.0002", "0.0004", "0.0006", "0.0008", "0.001"]);
eq([0, 0.0001, 0.0002, 0.0003], ["0", "0.0001", "0.0002", "0.0003"]);  // a profile up to 3.6e-4
eq([0, 0.00005, 0.0001, 0.00015, 0.0002, 0.00025, 0.0003, 0.00035],
   ["0", "5e-5", "1e-4", "1.5e-4", "2e-4", "2.5e-4", "3e-4", "3.5e-4"]);
eq([0.00036], ["3.6e-4"]);
eq([1, 10, 100, 1000, 10000], ["1", "10", "100", "1000", "10000"], true);  // log: all of 10000
eq([0.001, 0.01, 0.1, 1], ["0.001", "0.01", "0.1", "1"], true);
eq([1e-6, 1e-3, 1, 1e3, 1e6], ["1e-6", "0.001", "1", "1000", "1e6"], true);
eq([0.1, 0.2, 0.30000000000000004, 0.4], ["0.1", "0.2", "0.3", "0.4"]);  // uPlot's float noise
eq([-0.002, -0.001, 0, 0.001], ["-0.002", "-0.001", "0", "0.001"]);
eq([0, 2e6, 4e6, 6e6], ["0", "2e6", "4e6", "6e6"]);
eq([0, 0.25, 0.5, 0.75, 1], ["0", "0.25", "0.5", "0.75", "1"]);
eq([1.5, 2, 2.5], ["1.5", "2", "2.5"]);
eq([0, 2000, 4000, 6000], ["0", "2000", "4000", "6000"]);
eq([null, 1, NaN], ["", "1", ""]);
// any evenly spaced ticks: as many distinct labels as ticks, each reading back to its tick
// within a thousandth of the spacing, and only 0 reads "0"
let bad = [];
for (const step of [1e-9, 3e-7, 2.5e-5, 1e-4, 5e-4, 0.002, 0.05, 0.2, 1, 2.5, 20, 500, 1e4, 2e5, 5e7])
  for (const start of [0, -3, 7, 1234]) {
    const splits = [...Array(6).keys()].map(i => (start + i) * step);
    const got = tickLabels(splits);
    const ok = new Set(got).size === got.length && got.every((s, i) => Math.abs(+s - splits[i]) <= step * 1e-3 && (s !== "0") === (splits[i] !== 0));
    if (!ok) bad.push([splits, got]);
  }
check("evenly spaced ticks at 15 scales: distinct labels that read back", bad.length === 0, bad.slice(0, 3));

const w = s => 7 * s.length;  // 7 px a character
check("axis width holds the widest label and the tick", axisWidth(["1", "10000"], w) >= 35 + 15, axisWidth(["1", "10000"], w));
check("axis width: at least uPlot's 50", axisWidth([], w) === 50);
check("axis width of a 12-character label", axisWidth(["-1.2345678e-5"], w) >= 13 * 7 + 15);

const colours = [...Array(60).keys()].map(runColour);
check("60 runs: 60 distinct colours", new Set(colours).size === 60, colours);
check("a run's colour depends only on its index", runColour(12) === runColour(12) && runColour(3) === "#ff7f0e");

const m = (name, points) => ({ name, points });
// legend labels from the params that differ (issue 27: "one compact legend with labels from the
// params that differ"): the id first, at most three params, the rest counted, long values cut
const run = { id: 12, name: "layer_scan" };
check("a legend label names the params that differ",
      runLabel(run, { lr: "0.001", seed: "2", steps: "50" }, ["lr", "seed"]) === "12 lr=0.001 seed=2");
check("past three, the rest are counted",
      runLabel(run, { a: 1, b: 2, c: 3, d: 4, e: 5 }, ["a", "b", "c", "d", "e"]) === "12 a=1 b=2 c=3 (+2 more)");
check("a long value is cut, a missing one is '-'",
      runLabel(run, { model: "/very/long/path/to/models/tiny" }, ["model", "lr"]) === "12 model=/very/long/path… lr=-");
check("no param differs: id and name", runLabel(run, { lr: "1" }, []) === "12 layer_scan");
const s = splitMetrics([m("acc/ceval", 1), m("eval/acc", 1), m("grad_norm", 80), m("train/lr", 80), m("train/loss", 80),
                        m("val.loss", 80), m("val.acc", 80), m("tok_s", 1)]);
check("one-value metrics are scalars", same(s.scalars.map(x => x.name), ["acc/ceval", "eval/acc", "tok_s"]), s.scalars);
check("curves grouped by prefix, loss first", same(s.groups.map(g => [g.name, g.metrics.map(x => x.name)]),
      [["train", ["train/loss", "train/lr"]], ["val", ["val.loss", "val.acc"]], ["", ["grad_norm"]]]), s.groups);
const s2 = splitMetrics([m("acc", 5), m("loss", 5), m("lr", 5)]);
check("loss first among unprefixed curves", same(s2.groups[0].metrics.map(x => x.name), ["loss", "acc", "lr"]), s2);

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
