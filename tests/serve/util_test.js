// tests/serve/util_test.js: the pure helpers of the `ltrun serve` UI (runtime/serve/ui/util.js)
// under node: tick labels (the cases of issue 27: an lr axis read "0 / 0.001 / 0.001", a
// profile up to 3.6e-4 read "0, 0, 0", a log axis cut "10,000" to "0,000"), the axis width,
// run colours, scalars apart from curves; and issue 38's: numbers to 4 digits, a traceback's
// first line, round and decade ticks, legend keys, colour scales, mean ± sd, fitted ranges,
// id ranges. node util_test.js UTIL_JS
"use strict";
const { tickLabels, axisWidth, runColour, runLabel, splitMetrics, fmtNum, fmtParam, firstLine, niceTicks, logTicks,
        legendKeys, colourScale, meanSpread, fittedRange, parseIds } = require(require("path").resolve(process.argv[2]));

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

// issue 38: numbers to 4 significant digits (params were printed in full double precision)
check("fmtNum: 4 significant digits", same(["0.0006309573444801685", 12.3456, 1200.5, 1200, 0.001, 0.1, 2.5, 123456.7, -0.25, 0].map(v => fmtNum(typeof v === "string" ? +v : v)),
      ["6.31e-4", "12.35", "1201", "1200", "0.001", "0.1", "2.5", "1.235e5", "-0.25", "0"]), null);
check("fmtParam: a long number as 4 digits; integers and text as they are",
      same(["0.0006309573444801685", "0.00030000000000000003", "42", "tiny", "1e-4", "/data/x", null].map(fmtParam), ["6.31e-4", "3e-4", "42", "tiny", "1e-4", "/data/x", ""]),
      ["0.0006309573444801685", "0.00030000000000000003", "42", "tiny", "1e-4", "/data/x", null].map(fmtParam));
check("firstLine: a traceback's first line", firstLine("x.lua:3: boom\nstack traceback:\n\t[C]: in ?") === "x.lua:3: boom" &&
      firstLine("\n  oops  \n") === "oops" && firstLine(null) === "" && firstLine("a".repeat(300)).length === 140);
// scatter ticks: round steps (0.0025, never 1.013911e-5), covering the data; log: on the decades
check("niceTicks: round steps covering the data", same(niceTicks(1.013911e-5, 0.0094623, 5, true), [0, 0.0025, 0.005, 0.0075, 0.01]) &&
      same(niceTicks(0.2, 0.42, 5, true), [0.2, 0.3, 0.4, 0.5]) && same(niceTicks(1, 9), [2, 4, 6, 8]), niceTicks(1.013911e-5, 0.0094623, 5, true));
check("niceTicks labels read short", tickLabels(niceTicks(1.013911e-5, 0.0094623, 5, true)).every(t => t.length <= 6));
check("logTicks: the decades", same(logTicks(1e-4, 0.021), [1e-4, 1e-3, 1e-2]) && same(logTicks(1, 1e4), [1, 10, 100, 1000, 10000]), logTicks(1e-4, 0.021));
check("logTicks: under two decades, 1-2-5", same(logTicks(0.15, 3), [0.2, 0.5, 1, 2]), logTicks(0.15, 3));
// legends name what differs, the seed first, outputs and paths last
check("legendKeys: seed first, then params, paths, outputs last", same(legendKeys([
  { params: { data: "/d/shard_1", final_val_loss: "1.25", lr: "0.1", steps: "5" }, seed: 1 },
  { params: { data: "/d/shard_2", final_val_loss: "1.5", lr: "0.1", steps: "5" }, seed: 2 }]), ["seed", "data", "final_val_loss"]));
check("legendKeys: a param that differs before one that does not", same(legendKeys([{ params: { a: 1, b: 2 } }, { params: { a: 1, b: 3 } }]), ["b"]));
// colour keys
const num = colourScale([...Array(30).keys()].map(i => 1e-4 * 10 ** (i / 10)));
check("colourScale: many numbers: viridis, log over decades", num.kind === "numeric" && num.log && num.colour(1e-4) !== num.colour(0.05) && num.colour(null) === "#bbb");
const cat = colourScale(["plan_2", "plan_0", "plan_1", "plan_0"]);
check("colourScale: a few values: a palette colour each, sorted", cat.kind === "category" && same(cat.values, ["plan_0", "plan_1", "plan_2"]) &&
      cat.colour("plan_0") === runColour(0) && cat.colour("plan_2") === runColour(2));
// mean ± sd over seeds
const ms = meanSpread([{ x: 1, g: "a", y: 1 }, { x: 1, g: "a", y: 3 }, { x: 1, g: "b", y: 5 }, { x: 2, g: "a", y: 2 }]);
check("meanSpread: by x and group, mean and sample sd", ms.length === 3 && ms[0].y === 2 && Math.abs(ms[0].hi - 2 - Math.SQRT2) < 1e-12 &&
      ms[0].n === 2 && ms[1].lo === 5 && ms[1].hi === 5, ms);
check("fittedRange: one x: around it; several: uPlot's", same(fittedRange(60, 60), [57, 63]) && fittedRange(0, 4) === null && same(fittedRange(0, 0), [-1, 1]));
check("parseIds: ranges as the API takes them", same(parseIds("2-5,9,3"), ["2", "3", "4", "5", "9"]) && parseIds("2-201").length === 200 &&
      same(parseIds("x,7,"), ["7"]) && parseIds("1-100000", 5000).length === 5000);

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
