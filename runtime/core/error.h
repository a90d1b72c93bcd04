// runtime/core/error.h: the one exception type of ltrun, and helpers that build messages
// with context (which file, which tensor, which layer, what was expected).
#pragma once
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace ltrun {

// Every failure the runtime reports to a user is an ltrun::Error whose message alone
// says what went wrong and where; bindings turn it into a Lua error, the CLI prints it.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Raised by check_interrupt() after Ctrl-C; the run is then marked `interrupted`.
struct Interrupted : Error {
  Interrupted() : Error("interrupted (SIGINT or SIGTERM)") {}
};

template <class... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

#define LT_CHECK(cond, ...)                  \
  do {                                       \
    if (!(cond)) ::ltrun::fail(__VA_ARGS__); \
  } while (0)

}  // namespace ltrun
