// runtime/core/interrupt.h: Ctrl-C handling. The first SIGINT (or SIGTERM, or SIGHUP) marks the process
// interrupted and leaves one pending stop that the next check_interrupt() (C++ loops, every
// Lua→C++ call) turns into ltrun::Interrupted; a hook lets the Lua binding stop pure Lua code
// too. A second signal while the first is pending ends the process at once.
// C++ code that checks the flag itself and stops cleanly (the training loop, which first
// writes a checkpoint) holds an InterruptChecked for as long as it runs: the session's
// watchdog, which ends a process whose Lua code ignores Ctrl-C, then leaves it alone.
#pragma once

namespace ltrun {

using InterruptHook = void (*)();
void install_interrupt_handler(InterruptHook hook);  // hook must be async-signal-safe
bool interrupt_requested();  // sticky: Ctrl-C was pressed since the last clear_interrupt()
void clear_interrupt();
void check_interrupt();      // throws ltrun::Interrupted once per Ctrl-C
bool consume_interrupt();    // true once per Ctrl-C (for callers that raise their own error)
bool interrupt_pending();    // Ctrl-C pressed and not yet honoured by any check

class InterruptChecked {  // scope of C++ code that honours Ctrl-C itself
 public:
  InterruptChecked();
  ~InterruptChecked();
  InterruptChecked(const InterruptChecked&) = delete;
  InterruptChecked& operator=(const InterruptChecked&) = delete;
};
bool interrupt_checked();    // some InterruptChecked is alive (any thread)

}  // namespace ltrun
