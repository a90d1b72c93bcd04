# tests/cli/repl_pty.py LTRUN MODEL: drives the REPL under a pseudo-terminal (as a user types,
# Tab included) and prints what it showed between markers, for tests/cli/repl_pty.sh to check.
# Waits are generous and only wait for the prompt; nothing here measures time.
import fcntl, os, pty, re, select, struct, sys, termios, time

ltrun, model = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    os.environ["TERM"] = "xterm"
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 100 columns, every run
    os.execv(ltrun, [ltrun])

buf = b""


def wait_for(pattern, timeout=300):
    """Reads until `pattern` (bytes regex) shows; returns the text up to and including it."""
    global buf
    end = time.time() + timeout
    while True:
        m = re.search(pattern, buf)
        if m:
            out, buf = buf[: m.end()], buf[m.end():]
            return out.decode("utf-8", "replace")
        if time.time() > end:
            sys.exit("repl_pty: no %r within %d s; the REPL showed: %r" % (pattern, timeout, buf[-2000:]))
        ready, _, _ = select.select([fd], [], [], 1)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            if not data:
                sys.exit("repl_pty: the REPL ended early; it showed: %r" % buf[-2000:])
            buf += data


PROMPT = rb"(^|\n)> $"


def step(name, keys, until=PROMPT):
    os.write(fd, keys.encode())
    print("=== " + name)
    print(wait_for(until))


def raw_mode(timeout=300):
    """Waits until the line editor has the terminal in raw mode (ICANON off: the pty's two ends
    share one termios): the line editor prints its prompt and then leaves canonical mode, and
    keys that arrive before that are taken by the line discipline (a Tab echoes as text and
    completes nothing). A condition, not a duration."""
    end = time.time() + timeout
    while termios.tcgetattr(fd)[3] & termios.ICANON:
        if time.time() > end:
            sys.exit("repl_pty: the terminal never left canonical mode")
        time.sleep(0.01)


def tab_step(name, keys):
    """A completion listing: keys end in Tab Tab #, typed once the editor reads keys raw."""
    raw_mode()
    step(name, keys, rb"#$")


wait_for(PROMPT)
step("table", 't = {name = "x", list = {1, 2, 3}, deep = {a = {b = {c = {d = 1}}}}, w = lt.zeros(2, 3)}\n')
step("table_shown", "t\n")
step("help", "?lt.model.load\n")
step("load", 'm = lt.model.load("%s")\n' % model)
step("method_help", "?m:generate\n")
# Tab Tab lists the completions; the '#' typed after them echoes only once the listing is out
# (the line editor takes keys in order), so waiting for it waits for the whole listing; DEL
# (0x7f) erases it and the line is finished
tab_step("fields", "m.\t\t#")
step("fields_done", "\x7fn_layers\n")
tab_step("nested", "m.tokenizer:\t\t#")
step("nested_done", "\x7fencode('hi')\n")
step("time", "%time 1 + 2\n")
step("time_statement", "%time x = 40 + 2\n")
step("time_statement_done", "x\n")
step("time_statements", "%time local s = 0; for i = 1, 10 do s = s + i end; total = s\n")
step("time_statements_done", "total\n")
step("usage", "?\n")
step("typo", 'lt.model.load("%s", {dtyp = "float32"})\n' % model)
step("tensor", "lt.tensor({{1, 2, 3}, {4, 5, 60}})\n")
step("tensor_3d", "lt.zeros(2, 2, 2)\n")
step("tensor_big", "lt.arange(2000)\n")
step("error", "error('oops')\n")
step("nested_error", "function inner() error('deep') end; function outer() inner() end; outer()\n")
# `exit` typed as a line, not Ctrl-D: a ^D that reaches the terminal while it is between two
# reads in its cooked mode is taken by the line discipline and lost, and the session would wait on
os.write(fd, b"exit\n")
print("=== end")
end = time.time() + 120
while True:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        print("exit", os.waitstatus_to_exitcode(status))
        break
    if time.time() > end:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        print("exit: still running after `exit`; it showed: %r" % buf[-2000:])
        break
    if select.select([fd], [], [], 0.2)[0]:
        try:
            buf += os.read(fd, 65536)
        except OSError:
            pass
