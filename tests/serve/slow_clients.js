// tests/serve/slow_clients.js: clients that never finish a request must not hold up others.
// node slow_clients.js URL
//   40 sockets send only a request line and wait; then a normal request must be answered
//   (before: 8 threads, each held ~10 s per idle socket: ~50 s); the server closes the idle
//   sockets of one client past 16 at once; a client that sends its headers a byte at a time is
//   cut off (before: never, since each read had its own 5 s timeout).
// Prints one line per check, "ok ..." or "FAIL ...", and exits 1 on a failure. The bounds are
// for hangs (10 s, 30 s), not timings.
const net = require("net");

const url = new URL(process.argv[2]);
const port = Number(url.port), host = url.hostname;
let failures = 0;
function check(what, ok, detail) {
  console.log(`${ok ? "ok" : "FAIL"} ${what}${ok ? "" : ": " + JSON.stringify(detail)}`);
  if (!ok) failures++;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function connect() {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, host, () => resolve(s));
    s.closedAt = null;
    s.on("close", () => { s.closedAt = Date.now(); });
    s.on("error", () => {});
    s.on("data", () => {});
    setTimeout(() => reject(new Error("connect timed out")), 10000);
  });
}

(async () => {
  const idle = [];
  for (let i = 0; i < 40; i++) {
    const s = await connect();
    s.write(`GET /api/info HTTP/1.1\r\n`);  // a request line, then nothing
    idle.push(s);
  }
  await sleep(200);

  const t0 = Date.now();
  let status = 0, text = "";
  try {
    const res = await fetch(new URL("/api/info", url), { signal: AbortSignal.timeout(10000) });
    status = res.status;
    text = await res.text();
  } catch (e) {
    text = String(e);
  }
  const secs = (Date.now() - t0) / 1000;
  check(`a normal request beside 40 idle sockets is answered (${secs.toFixed(2)} s; bound 10 s, before ~50 s)`,
        status === 200 && text.includes("schema_version"), { status, text: text.slice(0, 200), secs });

  // all but 16 waiting sockets of this client were closed when newer ones came
  for (let i = 0; i < 50 && idle.filter((s) => s.closedAt).length < 24; i++) await sleep(100);
  const closedEarly = idle.filter((s) => s.closedAt).length;
  check(`the oldest idle sockets of the client were closed at once (${closedEarly} of 40)`, closedEarly >= 24, closedEarly);

  // a client that drips its headers, a byte every 500 ms, is cut off (after 5 s of reading,
  // with a 400)
  const drip = await connect();
  const started = Date.now();
  drip.write("GET /api/info HTTP/1.1\r\n");
  const header = "X-Slow: " + "a".repeat(200) + "\r\n";
  for (let i = 0; i < header.length && !drip.closedAt && Date.now() - started < 30000; i++) {
    drip.write(header[i]);
    await sleep(500);
  }
  const dripSecs = ((drip.closedAt || Date.now()) - started) / 1000;
  check(`a client sending a byte every 500 ms is cut off (${dripSecs.toFixed(1)} s; bound 30 s)`,
        !!drip.closedAt && dripSecs < 30, dripSecs);

  // the remaining idle sockets are closed too (request reads are bounded)
  for (let i = 0; i < 150 && idle.some((s) => !s.closedAt); i++) await sleep(100);
  check("every idle socket is closed in the end", idle.every((s) => s.closedAt), idle.filter((s) => !s.closedAt).length);

  // and the server still answers
  const res = await fetch(new URL("/api/info", url), { signal: AbortSignal.timeout(10000) });
  check("the server answers afterwards", res.status === 200, res.status);
  for (const s of idle) s.destroy();
  drip.destroy();
  process.exit(failures ? 1 : 0);
})().catch((e) => {
  console.log("FAIL " + e.stack);
  process.exit(1);
});
