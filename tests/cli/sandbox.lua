-- tests/cli/sandbox.lua: lt.sandbox's isolation, run by tests/cli/sandbox.sh (which skips where
-- bwrap cannot make namespaces, starts a TCP listener on the host and passes its port, the
-- repository and a unique name in the environment).
local port = assert(tonumber(os.getenv("SANDBOX_TEST_PORT")), "SANDBOX_TEST_PORT")
local repo, unique = assert(os.getenv("SANDBOX_TEST_REPO")), assert(os.getenv("SANDBOX_TEST_UNIQUE"))
local failures, checks = 0, 0
local function check(what, ok, r)
  checks = checks + 1
  if not ok then
    failures = failures + 1
    io.stderr:write("FAIL: ", what, "\n")
    if type(r) == "table" then
      io.stderr:write(("  status=%s exit=%s signal=%s wall=%.3f\n  stdout=%q\n  stderr=%q\n"):format(
        r.status, r.exit, r.signal, r.wall, r.stdout:sub(1, 400), r.stderr:sub(-400)))
    elseif r ~= nil then io.stderr:write("  got: ", tostring(r), "\n") end
  end
end
local function file_exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end
local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  return ok and "(no error)" or tostring(e)
end
local run = lt.sandbox.run

-- ok, stdout and stdin round trip
local r = run{ code = "import sys\ndata = sys.stdin.read()\nprint(data[::-1], end='')", stdin = "abc\0def" }
check("ok: stdin reversed on stdout (a NUL byte included)", r.status == "ok" and r.exit == 0 and r.stdout == "fed\0cba", r)

-- a non-zero exit: error, with stderr
r = run{ code = "import sys\nprint('to stderr', file=sys.stderr)\nraise ValueError('boom')" }
check("error: exit 1, stderr has the message and the traceback", r.status == "error" and r.exit == 1
  and r.stderr:find("to stderr", 1, true) and r.stderr:find("ValueError: boom", 1, true), r)

r = run{ code = "print('no read')", stdin = ("x"):rep(10 * 1024 * 1024) }
check("stdin: 10 MiB that the program never reads (ltrun used to die of SIGPIPE here)",
  r.status == "ok" and r.stdout == "no read\n", r)
r = run{ code = "import sys\nprint(len(sys.stdin.buffer.read()))", stdin = ("x"):rep(10 * 1024 * 1024) }
check("stdin: 10 MiB read in full", r.status == "ok" and r.stdout == "10485760\n", r)

r = run{ code = "print('solution')\0assert False, 'the tests'" }
check("a NUL byte in the code: error, not run (Python 3.11 would run up to the NUL and pass)",
  r.status == "error" and r.stdout == "" and r.stderr:find("source code cannot contain null bytes", 1, true), r)

-- an infinite loop: timeout, killed at the wall-clock limit
r = run{ code = "while True: pass", timeout = 1 }
check("timeout: an infinite loop ends as timeout", r.status == "timeout", r)
check("timeout: within timeout + a generous margin", r.wall >= 1 and r.wall < 1 + 5, r)
r = run{ code = "import time\ntime.sleep(60)", timeout = 1 }
check("timeout: a sleeping program (no CPU) ends by the wall clock", r.status == "timeout" and r.wall < 6, r)

-- a memory hog: memory (RLIMIT_AS makes the allocation fail, Python raises MemoryError)
r = run{ code = "b = bytearray(2 << 30)\nprint('allocated')", memory_mb = 256 }
check("memory: bytearray(2 GiB) under memory_mb = 256", r.status == "memory" and r.stdout == ""
  and r.stderr:find("MemoryError", 1, true), r)
r = run{ code = "b = bytearray(64 << 20)\nprint(len(b))", memory_mb = 256 }
check("memory: 64 MiB fits in memory_mb = 256", r.status == "ok" and r.stdout == "67108864\n", r)

-- files: the host's file system is read-only or absent, /tmp is private
local repo_file = repo .. "/sandbox-escape-" .. unique
r = run{ code = ("open(%q, 'w').write('escaped')"):format(repo_file) }
check("files: writing into the repository fails", r.status == "error" and r.stderr:find("Error", 1, true), r)
check("files: ... and nothing appears there on the host", not file_exists(repo_file))
r = run{ code = "open('/usr/sandbox-escape', 'w').write('escaped')" }
check("files: /usr is read-only", r.status == "error" and r.stderr:find("Read-only file system", 1, true), r)
r = run{ code = "open('/escape', 'w').write('escaped')" }
check("files: the root is read-only", r.status == "error" and r.stderr:find("Read-only file system", 1, true), r)
local home = os.getenv("HOME") or "/root"
r = run{ code = ("import os\nprint(os.path.exists(%q))\nopen(%q, 'w')"):format(home, home .. "/sandbox-escape-" .. unique) }
check("files: $HOME is not even there, and cannot be written", r.status == "error" and r.stdout == "False\n", r)
check("files: ... nothing in the host's $HOME", not file_exists(home .. "/sandbox-escape-" .. unique))
local tmp_name = "/tmp/sandbox-private-" .. unique
r = run{ code = ("open(%q, 'w').write('inside')\nprint(open(%q).read())\nimport os\nprint(os.getcwd())"):format(tmp_name, tmp_name) }
check("files: /tmp is writable inside and the working folder", r.status == "ok" and r.stdout == "inside\n/tmp\n", r)
check("files: ... the file is not in the host's /tmp", not file_exists(tmp_name))
r = run{ code = ("import os\nprint(os.path.exists(%q))"):format(tmp_name) }
check("files: ... nor in the next sandbox's /tmp", r.status == "ok" and r.stdout == "False\n", r)

r = run{ code = "for i in range(40):\n  open(f'/tmp/f{i}', 'wb').write(b'x' * (15 << 20))\nprint('wrote 600 MiB')", memory_mb = 256 }
check("files: /tmp holds at most memory_mb (tmpfs files are memory too)", r.status == "error"
  and r.stderr:find("No space left on device", 1, true), r)
r = run{ code = "open('/tmp/big', 'wb').write(b'x' * (17 << 20))", memory_mb = 256 }
check("files: a file over 16 MiB (RLIMIT_FSIZE)", r.status == "error" and r.stderr:find("File too large", 1, true), r)
r = run{ code = "open('/dev/null', 'w').write('x')\nopen('/dev/shm/a', 'w').write('x')\nopen('/dev/escape', 'w')" }
check("files: /dev/null and /dev/shm work, the rest of /dev is read-only", r.status == "error"
  and r.stderr:find("Read-only file system: '/dev/escape'", 1, true), r)

-- network: the host listens on 127.0.0.1:port; inside, that address is another namespace's
local connect = ("import socket\ns = socket.create_connection(('127.0.0.1', %d), timeout=5)\nprint('connected')"):format(port)
r = run{ code = connect }
check("network: connecting to the host's listener fails inside", r.status == "error" and r.stdout == ""
  and r.stderr:find("ConnectionRefusedError", 1, true), r)
r = run{ code = "import socket\nprint(socket.getaddrinfo('debian.org', 80))" }
check("network: no name resolution", r.status == "error" and r.stderr:find("gaierror", 1, true), r)
r = run{ code = connect, unsafe_local_exec = true }
check("network: the same program unsandboxed reaches the listener (the check above can fail)",
  r.status == "ok" and r.stdout == "connected\n", r)

-- fork bomb: bounded by RLIMIT_NPROC (64 processes in the sandbox, bwrap's init included)
local bomb = "import os, time\nn = 0\nwhile True:\n  if os.fork() == 0:\n    time.sleep(30)\n    os._exit(0)\n  n += 1\n  print(n, flush=True)"
r = run{ code = bomb, timeout = 20 }
local forks = tonumber(r.stdout:match("(%d+)\n$"))
check("fork bomb: ends as error (fork fails: BlockingIOError)", r.status == "error"
  and r.stderr:find("Resource temporarily unavailable", 1, true), r)
check("fork bomb: at most 63 forks", forks and forks >= 1 and forks < 64, r)
check("fork bomb: done long before the timeout (the sleepers die with the sandbox)", r.wall < 10, r)
r = run{ code = "import os\nwhile True: os.fork()", timeout = 20 }
check("fork bomb, every process forking: ends as error or killed, not timeout",
  (r.status == "error" or r.status == "killed") and r.wall < 10, r)
check("fork bomb: the host still starts programs", run{ code = "print(1)" }.stdout == "1\n")

-- output over the cap (64 KiB): the first 64 KiB, then the marker
r = run{ code = "import sys\nsys.stdout.write('x' * 200000)\nsys.stderr.write('y' * 100000)" }
check("cap: stdout keeps 64 KiB then the marker", r.status == "ok" and r.truncated
  and r.stdout:sub(1, 65536) == ("x"):rep(65536)
  and r.stdout:find("[ltrun sandbox: output truncated at 65536 bytes, 134464 more dropped]", 1, true), r)
check("cap: stderr too", r.stderr:sub(1, 65536) == ("y"):rep(65536)
  and r.stderr:find("34464 more dropped]", 1, true), r)
r = run{ code = "while True: print('spam' * 1000)", timeout = 1 }
check("cap: endless output ends as timeout, capped", r.status == "timeout" and #r.stdout < 65536 + 200, r)

-- a signal: killed
r = run{ code = "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)" }
check("killed: SIGSEGV", r.status == "killed" and r.signal == 11, r)

-- run_many: 16 programs, 4 at a time, results in input order (later ones finish first)
local ps = {}
for i = 1, 16 do
  ps[i] = { code = ("import time\ntime.sleep(%g)\nprint(%d)"):format(0.03 * (16 - i), i) }
end
ps[7] = { code = "raise SystemExit(5)" }
local rs = lt.sandbox.run_many(ps, { workers = 4 })
local in_order = #rs == 16
for i = 1, 16 do
  if i == 7 then in_order = in_order and rs[i].status == "error" and rs[i].exit == 5
  else in_order = in_order and rs[i].status == "ok" and rs[i].stdout == i .. "\n" end
end
check("run_many: 16 programs with workers = 4 come back in input order", in_order)
rs = lt.sandbox.run_many({ { code = bomb, timeout = 20 }, { code = bomb, timeout = 20 }, { code = bomb, timeout = 20 } }, { workers = 3 })
local each = true
for i = 1, 3 do
  local n = tonumber(rs[i].stdout:match("(%d+)\n$"))
  each = each and n and n >= 32 and n < 64
end
check("run_many: three fork bombs at once each get their own process limit", each)
check("run_many: an empty list", #lt.sandbox.run_many({}) == 0)

-- bad input: errors that name the option or the program
local e = err_of(run, { code = "print(1)", timeuot = 5 })
check("unknown option named", e:find("lt.sandbox.run: unknown option 'timeuot'", 1, true), e)
e = err_of(lt.sandbox.run_many, { { code = "print(1)" }, { code = "print(2)", memory = 5 } })
check("run_many: unknown option named with its program", e:find("program 2: unknown option 'memory'", 1, true), e)
e = err_of(lt.sandbox.run_many, { { code = "print(1)" } }, { worker = 2 })
check("run_many: unknown option of the pool named", e:find("unknown option 'worker'", 1, true), e)

local failed = failures
print(("%d passed, %d failed"):format(checks - failed, failed))
os.exit(failed == 0 and 0 or 1)
