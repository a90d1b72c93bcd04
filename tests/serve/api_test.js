// tests/serve/api_test.js: the JSON API of `ltrun serve` against the store that
// tests/serve/study.lua wrote. Every expected value comes from the sqlite3 command line on
// the same file (or from the study's known formulas), not from the server.
// node api_test.js URL DB STUDY_ID STUDY_DIR SCRIPT   (run by tests/cli/serve.sh)
"use strict";
const { execFileSync } = require("child_process");
const fs = require("fs");

const [url, db, studyId, studyDir, script] = process.argv.slice(2);
const base = url.replace(/\/$/, "");
let passed = 0, failed = 0;
function check(what, ok, detail) {
  if (ok) passed++;
  else { failed++; console.error("FAIL: " + what + (detail !== undefined ? "\n  " + JSON.stringify(detail).slice(0, 600) : "")); }
}
function sql(q) { return JSON.parse(execFileSync("sqlite3", ["-json", "-readonly", db, q]).toString() || "[]"); }
async function get(path, init) {
  const r = await fetch(base + path, init);
  const text = await r.text();
  let body = null;
  try { body = JSON.parse(text); } catch (e) { /* an artifact */ }
  return { status: r.status, body, text, headers: r.headers };
}
const near = (a, b, tol = 1e-12) => Math.abs(a - b) <= tol * Math.max(1, Math.abs(b));

(async () => {
  const id = +studyId;
  const before = fs.readFileSync(db);

  // --- /api/info, /api/runs ---------------------------------------------------------------
  let r = await get("/api/info");
  check("info: runs = count(*)", r.status === 200 && r.body.runs === sql("select count(*) n from runs")[0].n, r.body);
  r = await get("/api/runs?parent=all");
  const ids = sql("select id from runs order by id desc").map(x => x.id);
  check("runs: every run, newest first", r.status === 200 && JSON.stringify(r.body.runs.map(x => x.id)) === JSON.stringify(ids), r.body);
  r = await get("/api/runs?name=plan_");
  check("runs?name=plan_: the two children", JSON.stringify(r.body.runs.map(x => x.name).sort()) === '["plan_a","plan_b"]', r.body);
  r = await get(`/api/runs?parent=${id}`);
  const kids = sql(`select id from runs where parent_id = ${id} order by id desc`).map(x => x.id);
  check("runs?parent=ID: its children", JSON.stringify(r.body.runs.map(x => x.id)) === JSON.stringify(kids) && kids.length === 2, r.body);
  r = await get("/api/runs?parent=none");
  check("runs?parent=none: top-level runs only", r.body.runs.every(x => x.parent_id === null) && r.body.runs.some(x => x.id === id), r.body);
  r = await get("/api/runs?status=ok");
  check("runs?status=ok", r.body.total === sql("select count(*) n from runs where status='ok'")[0].n && r.body.runs.every(x => x.status === "ok"), r.body);
  r = await get("/api/runs?status=bogus");
  check("runs?status=bogus: 400 naming the status", r.status === 400 && /bogus/.test(r.body.error), r);
  r = await get("/api/runs?parent=x1");
  check("runs?parent=x1: 400", r.status === 400 && /parent/.test(r.body.error), r);

  r = await get("/api/runs?parent=all&limit=2&offset=1");
  check("runs?limit=2&offset=1: the 2nd and 3rd newest, total of all", JSON.stringify(r.body.runs.map(x => x.id)) === JSON.stringify(ids.slice(1, 3)) &&
        r.body.total === ids.length, r.body);

  // --- /api/compare: many runs in one request ---------------------------------------------
  const [k1, k2] = [...kids].sort((a, b) => a - b);
  r = await get(`/api/compare?ids=${id},${k1}-${k2}`);
  check("compare?ids=A,B-C: the three runs in order", r.status === 200 && JSON.stringify(r.body.runs.map(x => x.run.id)) === JSON.stringify([id, k1, k2]), r.body);
  const kidParams = Object.fromEntries(sql(`select key, value from params where run_id=${k1}`).map(p => [p.key, p.value]));
  check("compare: a child's params", JSON.stringify(r.body.runs[1].params) === JSON.stringify(kidParams), [r.body.runs[1], kidParams]);
  const counts = sql(`select name, count(*) n from metrics where run_id=${id} group by name order by name`);
  check("compare: metric names with point counts", JSON.stringify(r.body.runs[0].metrics.map(m => [m.name, m.points])) === JSON.stringify(counts.map(c => [c.name, c.n])), r.body.runs[0].metrics);
  check("compare: layer metric names", JSON.stringify(r.body.runs[2].layer_metrics) === '["p_max"]', r.body.runs[2]);
  r = await get(`/api/compare/metrics?ids=${id},${k1}-${k2}&name=loss,lr&points=5`);
  const lossRows = sql(`select run_id, count(*) n from metrics where name='loss' and run_id in (${id},${k1},${k2}) group by run_id order by run_id`);
  check("compare/metrics: loss of the three, lr of the study only", r.status === 200 &&
        JSON.stringify(r.body.series.map(s => [s.run, s.name])) === JSON.stringify([[id, "loss"], [id, "lr"], [k1, "loss"], [k2, "loss"]]), r.body.series);
  check("compare/metrics: point counts, downsampled to 5", r.body.series.filter(s => s.name === "loss").every(s => s.x.length === 5 &&
        s.points === lossRows.find(x => x.run_id === s.run).n), r.body.series);
  r = await get(`/api/compare/layer_metrics?ids=${id},${k1}&name=p_max`);
  check("compare/layer_metrics: a matrix per run", r.status === 200 && r.body.runs.length === 2 && r.body.runs[1].run === k1 && r.body.runs[1].groups.length === 1, r.body);
  for (const [q, status, re] of [["ids=", 400, /give \?ids/], ["ids=5-3", 400, /backwards/], ["ids=1-99999", 400, /more than 5000/],
                                 ["ids=x", 400, /ids/], [`ids=${id},999999`, 404, /no run with id 999999/]]) {
    r = await get("/api/compare?" + q);
    check(`compare?${q}: ${status}`, r.status === status && re.test(r.body.error), r.body);
  }
  r = await get(`/api/compare/metrics?ids=${id}`);
  check("compare/metrics without name: 400", r.status === 400 && /name/.test(r.body.error), r.body);

  // --- /api/runs/ID -----------------------------------------------------------------------
  r = await get(`/api/runs/${id}`);
  const d = r.body;
  check("run: 200", r.status === 200, r);
  const params = Object.fromEntries(sql(`select key, value from params where run_id=${id}`).map(p => [p.key, p.value]));
  check("run: params", JSON.stringify(d.params) === JSON.stringify(Object.fromEntries(Object.keys(params).sort().map(k => [k, params[k]]))), [d.params, params]);
  const loss = d.metrics.find(m => m.name === "loss");
  check("run: loss summary (50 points, last 1/50, min 1/50, max 1)", loss && loss.points === 50 && near(loss.last, 1 / 50) && near(loss.min, 1 / 50) && loss.max === 1, loss);
  check("run: script text is the file's", d.run.script_text === fs.readFileSync(script, "utf8"));
  check("run: command line replays script and args", d.run.command.includes(script) && d.run.command.includes("--out=" + studyDir) && d.run.command.includes("--seed"), d.run.command);
  check("run: rerun command", d.run.rerun.endsWith(`rerun ${id}`) && d.run.rerun.includes("--db"), d.run.rerun);
  check("run: children", JSON.stringify(d.children.map(c => c.id).sort()) === JSON.stringify([...kids].sort()), d.children);
  const lm = d.layer_metrics.find(x => x.name === "p_max");
  check("run: layer metric summary (3 groups x 3 layers)", lm && lm.groups === 3 && lm.layers === 3 && lm.rows === 9, d.layer_metrics);
  const ev = sql(`select bench, protocol, count(*) items, sum(correct) correct from eval_items where run_id=${id} group by 1, 2`);
  check("run: eval summary = sqlite3's", ev.length > 0 && d.eval.length === ev.length &&
        ev.every((e, i) => d.eval[i].bench === e.bench && d.eval[i].items === e.items && d.eval[i].correct === e.correct &&
                          near(d.eval[i].accuracy, e.correct / e.items) &&
                          d.eval[i].categories.reduce((n, c) => n + c.items, 0) === e.items), [d.eval, ev]);
  check("run: one svg artifact, present", d.artifacts.length === 1 && d.artifacts[0].kind === "svg" && d.artifacts[0].exists, d.artifacts);
  r = await get("/api/runs/999999");
  check("run 999999: 404 JSON", r.status === 404 && /999999/.test(r.body.error), r);
  r = await get("/api/runs/abc");
  check("run abc: 400 JSON", r.status === 400 && /abc/.test(r.body.error), r);
  r = await get("/api/nothing");
  check("unknown route: 404 JSON", r.status === 404 && r.body.error, r);

  // --- metric series ----------------------------------------------------------------------
  r = await get(`/api/runs/${id}/metrics?name=loss`);
  const s = r.body.series[0];
  check("series: all 50 points, loss = 1/(1+step)", s.points === 50 && !s.downsampled && s.x.length === 50 &&
        s.x.every((x, i) => x === i) && s.y.every((y, i) => near(y, 1 / (1 + i))), s);
  r = await get(`/api/runs/${id}/metrics?name=loss&points=10`);
  const ds = r.body.series[0];
  check("series: downsampled to 10 real points, first and last kept", ds.downsampled && ds.x.length === 10 && ds.x[0] === 0 &&
        ds.x[9] === 49 && ds.x.every((x, i) => i === 0 || x > ds.x[i - 1]) && ds.y.every((y, i) => near(y, 1 / (1 + ds.x[i]))), ds);
  r = await get(`/api/runs/${id}/metrics?name=loss&x=time`);
  const tmin = sql(`select min(t) t from metrics where run_id=${id} and name='loss'`)[0].t;
  check("series: x=time is unix seconds", near(r.body.series[0].x[0], tmin, 1e-9), r.body.series[0].x[0]);
  r = await get(`/api/runs/${id}/metrics?name=nope`);
  check("series: unknown metric 404", r.status === 404 && /nope/.test(r.body.error), r);
  r = await get(`/api/runs/${id}/metrics?name=loss&x=epoch`);
  check("series: x=epoch 400", r.status === 400, r);

  // --- layer metrics ----------------------------------------------------------------------
  r = await get(`/api/runs/${id}/layer_metrics?name=p_max`);
  const rows = sql(`select grp, layer, value from layer_metrics where run_id=${id} and name='p_max'`);
  check("layers: groups g1..g3 x layers 0..2", JSON.stringify(r.body.groups) === '["g1","g2","g3"]' && JSON.stringify(r.body.layers) === "[0,1,2]", r.body);
  check("layers: every cell = sqlite3's", rows.length === 9 && rows.every(x => near(r.body.values[r.body.groups.indexOf(x.grp)][r.body.layers.indexOf(x.layer)], x.value)), [r.body.values, rows]);
  r = await get(`/api/runs/${id}/layer_metrics?name=zzz`);
  check("layers: unknown name 404", r.status === 404, r);

  // --- eval items -------------------------------------------------------------------------
  const bench = ev[0].bench;
  r = await get(`/api/runs/${id}/eval_items?bench=${encodeURIComponent(bench)}&protocol=logit&correct=1`);
  const nright = sql(`select count(*) n from eval_items where run_id=${id} and bench='${bench}' and protocol='logit' and correct=1`)[0].n;
  check("eval items: correct=1 count", r.body.total === nright && r.body.items.every(i => i.correct === 1), r.body);
  const cat = sql(`select category, count(*) n from eval_items where run_id=${id} group by 1 order by 2 desc limit 1`)[0];
  r = await get(`/api/runs/${id}/eval_items?category=${encodeURIComponent(cat.category)}`);
  check("eval items: by category", r.body.total === cat.n && r.body.items.every(i => i.category === cat.category), r.body);

  // --- eval text (db/migrations/0008) and two runs item by item ----------------------------
  const [ka, kb] = sql(`select id from runs where parent_id = ${id} order by id`).map(x => x.id);
  r = await get(`/api/runs/${ka}/eval_items?bench=quiz&protocol=logit`);
  const ref = sql(`select value from params where run_id = ${ka} and key = 'quiz_prompt_q1'`)[0].value;
  check("eval items: the prompt stored is lt.eval.prompt's", r.body.items.length === 4 && r.body.items[0].item_id === "q1" &&
        r.body.items[0].prompt === ref && r.body.items.every(i => i.output === null), [r.body.items[0], ref]);
  r = await get(`/api/runs/${ka}/eval_items?bench=quiz&protocol=generate`);
  const outs = sql(`select output from eval_items where run_id = ${ka} and bench = 'quiz' and protocol = 'generate' order by rowid`);
  check("eval items: generate outputs = sqlite3's", r.body.items.length === 4 && outs.length === 4 &&
        r.body.items.every((i, k) => i.output === outs[k].output || (i.output === null && outs[k].output === null)), [r.body.items, outs]);
  r = await get(`/api/compare?a=${ka}&b=${kb}`);
  const joined = sql(`select x.bench, x.protocol, count(*) n, sum(x.correct and y.correct) both_, sum(x.correct and not y.correct) a,
                      sum(not x.correct and y.correct) b from eval_items x join eval_items y on y.run_id = ${kb} and y.bench = x.bench
                      and y.protocol = x.protocol and y.item_id = x.item_id where x.run_id = ${ka} and x.correct is not null
                      and y.correct is not null group by 1, 2 order by 1, 2`);
  check("compare: eval item by item = sqlite3's join", r.status === 200 && r.body.eval.length === joined.length &&
        joined.every((j, k) => r.body.eval[k].bench === j.bench && r.body.eval[k].protocol === j.protocol && r.body.eval[k].items === j.n &&
                              r.body.eval[k].both === j.both_ && r.body.eval[k].only_a === j.a && r.body.eval[k].only_b === j.b), [r.body.eval, joined]);
  const ql = r.body.eval.find(e => e.bench === "quiz" && e.protocol === "logit");
  check("compare: quiz/logit: q2 solved by a only, q3 by b only", ql && JSON.stringify(ql.differing.map(i => i.item_id + i.solved_by)) === '["q2a","q3b"]', ql);

  // --- artifacts --------------------------------------------------------------------------
  r = await get(`/api/runs/${id}/artifacts/0`);
  const file = fs.readFileSync(studyDir + "/p_max.svg", "utf8");
  check("artifact 0: the SVG file, as image/svg+xml, under a CSP", r.status === 200 && r.text === file &&
        r.headers.get("content-type").startsWith("image/svg+xml") && /default-src 'none'/.test(r.headers.get("content-security-policy")), r.headers);
  for (const bad of ["1", "-1", "..%2F..%2Fetc%2Fpasswd", "0/../../../etc/passwd"]) {
    r = await get(`/api/runs/${id}/artifacts/${bad}`);
    check(`artifact ${bad}: refused with a JSON error`, (r.status === 400 || r.status === 404) && r.body && r.body.error && !r.text.includes("root:"), r);
  }

  // --- SQL --------------------------------------------------------------------------------
  r = await get("/api/sql?q=" + encodeURIComponent("select count(*) as n from runs"));
  check("sql: select", r.status === 200 && r.body.columns[0] === "n" && r.body.rows[0][0] === ids.length, r.body);
  r = await get("/api/sql?q=" + encodeURIComponent("select id from runs where 0"));
  check("sql: no rows still names the columns", r.status === 200 && r.body.columns[0] === "id" && r.body.rows.length === 0, r.body);
  for (const w of ["insert into params values (1, 'x', 'y')", "delete from runs", "update runs set name='x'",
                   "drop table runs", "attach database '" + studyDir + "/x.db' as x", "pragma journal_mode=delete",
                   "create table t(x)", "pragma query_only=0"]) {
    r = await get("/api/sql?q=" + encodeURIComponent(w));
    check(`sql: "${w}" refused (403, says read-only)`, r.status === 403 && /read-only/.test(r.body.error), r);
  }
  r = await get("/api/sql?q=" + encodeURIComponent("select 1; delete from runs"));
  check("sql: a second statement refused", r.status === 400 && /one statement/.test(r.body.error), r);
  r = await get("/api/sql?q=" + encodeURIComponent("selec 1"));
  check("sql: syntax error 400", r.status === 400 && /syntax/.test(r.body.error), r);
  r = await get("/api/sql?q=" + encodeURIComponent("with recursive c(x) as (select 1 union all select x+1 from c) select count(*) from c"));
  check("sql: a runaway query is stopped", r.status === 400 && /stopped/.test(r.body.error), r);
  r = await get("/api/sql?name=status");
  const st = sql("select status, count(*) as runs from runs group by status order by runs desc");
  check("sql: named query @status", r.status === 200 && JSON.stringify(r.body.rows) === JSON.stringify(st.map(x => [x.status, x.runs])), [r.body, st]);
  r = await get("/api/sql?name=nope");
  check("sql: unknown named query 404 listing names", r.status === 404 && /status/.test(r.body.error), r);
  r = await get("/api/queries");
  check("queries: the embedded db/queries", r.body.some(q => q.name === "runs") && r.body.every(q => q.sql.length > 0), r.body);
  r = await get("/api/sql", { method: "POST", body: "delete from runs" });
  check("POST: 405", r.status === 405 && /read-only/.test(r.body.error), r);

  // --- the UI is served -------------------------------------------------------------------
  r = await get("/");
  check("/: the page", r.status === 200 && r.text.includes("/app.js") && r.headers.get("content-type").startsWith("text/html"));
  r = await get("/uPlot.iife.min.js");
  check("/uPlot.iife.min.js: embedded uPlot", r.status === 200 && r.text.includes("uPlot"));

  check("the store file is unchanged by serving", Buffer.compare(before, fs.readFileSync(db)) === 0);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
})().catch(e => { console.error(e); process.exit(1); });
