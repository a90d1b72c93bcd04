// runtime/core/crash.cpp: see crash.h.
#include "runtime/core/crash.h"

#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

namespace ltrun {
namespace {

void write_str(const char* s) {
  ssize_t ignored = ::write(STDERR_FILENO, s, strlen(s));
  (void)ignored;
}

void on_fatal(int sig) {
  write_str("\nltrun: fatal signal ");
  write_str(strsignal(sig));  // not formally async-signal-safe, but a table lookup in glibc
  write_str("; native backtrace (most recent call first):\n");
  void* frames[64];
  const int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  signal(sig, SIG_DFL);  // die with the same signal (exit status, core dump as configured)
  raise(sig);
}

}  // namespace

void install_crash_handler() {
  static bool done = false;
  if (done) return;
  done = true;
  void* prime[1];
  backtrace(prime, 1);
  struct sigaction sa {};
  sa.sa_handler = on_fatal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND | SA_NODEFER;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) sigaction(sig, &sa, nullptr);
}

}  // namespace ltrun
