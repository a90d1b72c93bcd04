// runtime/core/crash.h: a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL) prints the
// signal and a native backtrace to stderr before the process dies with that signal, so that a
// crash on a machine without a debugger (a GPU node) still says where it happened: the
// faulting address, the faulting instruction and the return address as MODULE+OFFSET (for
// addr2line; also where the backtrace stops at code without unwind information).
#pragma once

namespace ltrun {

// Installs the handlers once (later calls do nothing). The handler uses only async-signal-safe
// calls (write, backtrace_symbols_fd); backtrace() is primed here so that it does not load
// libgcc inside the handler.
void install_crash_handler();

}  // namespace ltrun
