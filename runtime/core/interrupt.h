// runtime/core/interrupt.h: Ctrl-C handling. The first SIGINT (or SIGTERM) marks the process
// interrupted and leaves one pending stop that the next check_interrupt() (C++ loops, every
// Lua→C++ call) turns into ltrun::Interrupted; a hook lets the Lua binding stop pure Lua code
// too. A second signal while the first is pending ends the process at once.
#pragma once

namespace ltrun {

using InterruptHook = void (*)();
void install_interrupt_handler(InterruptHook hook);  // hook must be async-signal-safe
bool interrupt_requested();  // sticky: Ctrl-C was pressed since the last clear_interrupt()
void clear_interrupt();
void check_interrupt();      // throws ltrun::Interrupted once per Ctrl-C
bool consume_interrupt();    // true once per Ctrl-C (for callers that raise their own error)
bool interrupt_pending();    // Ctrl-C pressed and not yet honoured by any check

}  // namespace ltrun
