// tests/serve/chromium.js: headless Chromium driven over the DevTools protocol on a pipe
// (--remote-debugging-pipe: fd 3 to it, fd 4 from it, messages ended by NUL). Shared by the
// browser test (tests/serve/browser_test.js) and the results-table bench
// (experiments/bench/serve_table.js).
//   const { proc, send } = require(".../chromium.js").launch(CHROME, PROFILE_DIR);
//   await send("Target.createTarget", { url: "about:blank" });   // → result, or throws
//   const { sessionId, evaluate } = await newPage(send);         // a blank page; evaluate(JS) → value
"use strict";
const { spawn } = require("child_process");

function launch(chrome, profile) {
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
  return { proc, send };
}

// A blank page attached to `send`'s browser: its session and evaluate(expr), which awaits a
// promise and returns the value, or throws with the expression and its exception.
async function newPage(send) {
  const { targetId } = await send("Target.createTarget", { url: "about:blank" });
  const { sessionId } = await send("Target.attachToTarget", { targetId, flatten: true });
  const evaluate = async expr => {
    const r = await send("Runtime.evaluate", { expression: expr, returnByValue: true, awaitPromise: true }, sessionId);
    if (r.exceptionDetails) throw new Error(expr + ": " + JSON.stringify(r.exceptionDetails));
    return r.result.value;
  };
  return { sessionId, evaluate };
}

module.exports = { launch, newPage };
