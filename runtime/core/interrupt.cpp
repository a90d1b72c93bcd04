// runtime/core/interrupt.cpp: SIGINT/SIGTERM/SIGHUP → sticky flag + one pending stop (+ hook).
#include "runtime/core/interrupt.h"

#include <atomic>
#include <csignal>

#include "runtime/core/error.h"

namespace ltrun {
namespace {
volatile std::sig_atomic_t g_happened = 0;
volatile std::sig_atomic_t g_pending = 0;
InterruptHook g_hook = nullptr;
std::atomic<int> g_checked{0};

void on_signal(int sig) {
  if (g_pending && sig == SIGHUP) return;  // a hang-up can come twice (to the session and its group)
  if (g_pending) {  // pressed again before the first was honoured: stop now
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_happened = 1;
  g_pending = 1;
  if (g_hook) g_hook();
}
}  // namespace

void install_interrupt_handler(InterruptHook hook) {
  g_hook = hook;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);  // schedulers and `timeout` stop jobs this way
  sigaction(SIGHUP, &sa, nullptr);   // a closed terminal or ssh session: the run ends `interrupted`
}

bool interrupt_requested() { return g_happened != 0; }

void clear_interrupt() {
  g_happened = 0;
  g_pending = 0;
}

bool interrupt_pending() { return g_pending != 0; }

bool consume_interrupt() {
  if (!g_pending) return false;
  g_pending = 0;
  return true;
}

InterruptChecked::InterruptChecked() { ++g_checked; }
InterruptChecked::~InterruptChecked() { --g_checked; }
bool interrupt_checked() { return g_checked.load() > 0; }

void check_interrupt() {
  if (consume_interrupt()) throw Interrupted();
}

}  // namespace ltrun
