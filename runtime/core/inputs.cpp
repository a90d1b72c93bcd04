// runtime/core/inputs.cpp: see inputs.h.
#include "runtime/core/inputs.h"

#include <sys/stat.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>
#include <set>

#include "runtime/core/env.h"
#include "runtime/core/error.h"
#include "runtime/core/sha256.h"

namespace ltrun {
namespace {
std::mutex mu;
InputListener listener;
std::set<std::string> written;  // files the run opened for writing (absolute)
std::map<std::string, std::string> redirects;

// `abs` redirected (mu held): a key itself, or a path below a key (a file of a model folder)
std::optional<std::string> redirect_of(const std::string& abs) {
  for (const auto& [from, to] : redirects) {
    if (abs == from) return to;
    if (abs.size() > from.size() && abs.compare(0, from.size(), from) == 0 && abs[from.size()] == '/')
      return to + abs.substr(from.size());
  }
  return std::nullopt;
}
}  // namespace

void set_input_listener(InputListener l) {
  std::lock_guard<std::mutex> lock(mu);
  listener = std::move(l);
  written.clear();
}

void note_input(const std::string& kind, const std::string& path) {
  InputListener l;
  {
    std::lock_guard<std::mutex> lock(mu);
    l = listener;
  }
  if (!l) return;
  try {
    l(kind, path);
  } catch (const Interrupted&) {
    throw;  // Ctrl-C while an input was hashed: the reader stops, as anywhere else
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ltrun: warning: could not record input %s %s with the run: %s\n", kind.c_str(),
                 path.c_str(), e.what());
  }
}

std::string note_read(const std::string& path, const std::string& mode) {
  const std::string abs = absolute_path(path);
  const bool writes = mode.find_first_of("wa+") != std::string::npos;
  std::string source = path;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!listener) return redirect_of(abs).value_or(path);
    if (writes) {
      written.insert(abs);
      return path;
    }
    if (written.count(abs)) return path;
    source = redirect_of(abs).value_or(path);
  }
  // only a regular file on disk: a missing one fails in io.open itself; a folder, a FIFO or
  // /proc/self/... is not data a replay could check
  char real[PATH_MAX];
  struct stat st;
  if (!::realpath(source.c_str(), real) || pseudo_file_path(real) || ::stat(real, &st) != 0 || !S_ISREG(st.st_mode))
    return source;
  note_input("data", source == path ? path : abs);
  return source;
}

void set_input_redirects(std::map<std::string, std::string> from_to) {
  std::lock_guard<std::mutex> lock(mu);
  redirects = std::move(from_to);
}

std::string input_source(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu);
  if (redirects.empty()) return path;
  return redirect_of(absolute_path(path)).value_or(path);
}

std::string input_origin(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& [from, to] : redirects)
    if (path == to) return from;
  return "";
}

}  // namespace ltrun
