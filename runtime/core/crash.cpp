// runtime/core/crash.cpp: see crash.h.
#include "runtime/core/crash.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdint>

namespace ltrun {
namespace {

void write_str(const char* s) {
  ssize_t ignored = ::write(STDERR_FILENO, s, strlen(s));
  (void)ignored;
}

void write_hex(uintptr_t v) {  // no printf in a signal handler
  char buf[2 + 16 + 1];
  buf[0] = '0';
  buf[1] = 'x';
  for (int i = 0; i < 16; ++i) buf[2 + i] = "0123456789abcdef"[(v >> (60 - 4 * i)) & 0xf];
  buf[18] = 0;
  write_str(buf);
}

// "module+0xOFFSET" of a code address, even where the frame has no unwind information (the
// backtrace stops there): `addr2line -e MODULE OFFSET` then names the function and line
void write_where(const void* pc) {
  Dl_info info{};
  if (pc && dladdr(pc, &info) && info.dli_fname) {
    write_str(info.dli_fname);
    write_str("+");
    write_hex(reinterpret_cast<uintptr_t>(pc) - reinterpret_cast<uintptr_t>(info.dli_fbase));
    if (info.dli_sname) {
      write_str(" (");
      write_str(info.dli_sname);
      write_str(")");
    }
  } else {
    write_hex(reinterpret_cast<uintptr_t>(pc));
    write_str(" (in no loaded module: JIT-compiled code or a bad jump)");
  }
}

void on_fatal(int sig, siginfo_t* si, void* uc) {
  write_str("\nltrun: fatal signal ");
  write_str(strsignal(sig));  // not formally async-signal-safe, but a table lookup in glibc
  write_str(" at address ");
  write_hex(reinterpret_cast<uintptr_t>(si ? si->si_addr : nullptr));
#if defined(__x86_64__)
  if (uc) {
    const auto* ctx = static_cast<const ucontext_t*>(uc);
    write_str("\n  faulting instruction: ");
    write_where(reinterpret_cast<const void*>(ctx->uc_mcontext.gregs[REG_RIP]));
    write_str("\n  return address on the stack: ");
    write_where(*reinterpret_cast<void* const*>(ctx->uc_mcontext.gregs[REG_RSP]));
  }
#endif
  write_str("\nnative backtrace (most recent call first):\n");
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
  sa.sa_sigaction = on_fatal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) sigaction(sig, &sa, nullptr);
}

}  // namespace ltrun
