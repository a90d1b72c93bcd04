// runtime/cli/repl.cpp: `ltrun` with no script: an interactive Lua session (libedit line
// editing, history in ~/.ltrun_history, multi-line chunks). Values print readably, `?x` shows
// help (`?` alone: the REPL's usage), `%time CODE` times an expression or statements, `exit` or
// `quit` leaves, an unknown option key gets "did you mean" and Tab completes names, fields and methods along a
// chain (lib/lt/repl.lua). With --log the session is a run named "repl" whose script text is
// the chunks that ran, so `ltrun rerun` can replay it; without, nothing is stored. Ctrl-C stops
// the running chunk, or at the prompt drops the chunk being typed; Ctrl-D quits. Without a
// terminal it reads chunks from stdin silently.
#include <editline/readline.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "runtime/cli/cli.h"
#include "runtime/core/device.h"
#include "runtime/core/error.h"
#include "runtime/core/env.h"
#include "runtime/core/interrupt.h"
#include "runtime/core/sha256.h"
#include "runtime/store/session.h"

namespace ltrun::cli {
namespace {

ScriptHost* g_host = nullptr;

char* completion_entry(const char* text, int state) {
  static std::vector<std::string> matches;
  static size_t next = 0;
  if (state == 0) {
    matches = g_host ? g_host->complete(text) : std::vector<std::string>{};
    next = 0;
  }
  return next < matches.size() ? strdup(matches[next++].c_str()) : nullptr;
}

char** completion(const char* text, int, int) {
  rl_attempted_completion_over = 1;
  rl_completion_append_character = '\0';  // a unique match stays open for a following . : or (
  return rl_completion_matches(text, completion_entry);
}

// An error's traceback without the frames that say nothing to the user: C functions and
// builtins ("[C]: at 0x...", "[builtin#19]: at 0x...") and the REPL's own (lib/lt/repl.lua); a
// traceback left with the typed chunk alone goes entirely, as the message already names it.
std::string trim_traceback(const std::string& message) {
  const auto at = message.find("\nstack traceback:\n");
  if (at == std::string::npos) return message;
  std::string frames, line;
  bool beyond_chunk = false;
  std::istringstream in(message.substr(at + 18));
  while (std::getline(in, line)) {
    // (LuaJIT names a builtin "[builtin#19]: at 0x...", a C function "[C]: in function 'x'")
    if (line.rfind("\t[C]:", 0) == 0 || line.rfind("\t[builtin#", 0) == 0 ||
        line.find("lt/repl.lua:") != std::string::npos)
      continue;
    if (line.find(": in main chunk") == std::string::npos) beyond_chunk = true;
    frames += "\n" + line;
  }
  return message.substr(0, at) + (beyond_chunk ? "\nstack traceback:" + frames : "");
}

// s as a Lua string literal
std::string lua_quoted(const std::string& s) {
  std::string q = "\"";
  for (const char c : s) {
    if (c == '\\' || c == '"') q += std::string("\\") + c;
    else if (static_cast<unsigned char>(c) < 0x20) q += fmt::format("\\{:03d}", static_cast<unsigned char>(c));
    else q += c;
  }
  return q + "\"";
}

// `?x` → help(x, "x") (`?` alone: help(), the REPL's usage); `%time CODE` → CODE timed, an
// expression or statements (lib/lt/repl.lua time_code); other chunks as typed
std::string rewrite(const std::string& chunk) {
  const auto first = chunk.find_first_not_of(" \t");
  if (first == std::string::npos) return chunk;
  if (chunk[first] == '?') {
    std::string x = chunk.substr(first + 1);
    while (!x.empty() && (x.back() == ' ' || x.back() == '\t')) x.pop_back();
    if (x.empty()) return "help()";
    std::string value = x;
    // `?m:generate` names a method: its value is m.generate (m:generate alone is no expression)
    if (value.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:") == std::string::npos)
      for (char& c : value) c = c == ':' ? '.' : c;
    return "help(" + value + ", " + lua_quoted(x) + ")";
  }
  if (chunk.compare(first, 6, "%time ") == 0)
    return "=require('lt.repl').time_code(" + lua_quoted(chunk.substr(first + 6)) + ")";
  return chunk;
}

// `exit`, `quit`, `exit()` or `quit()` typed alone leaves, as Ctrl-D does
bool is_exit(const std::string& chunk) {
  const auto a = chunk.find_first_not_of(" \t"), b = chunk.find_last_not_of(" \t;");
  if (a == std::string::npos) return false;
  const std::string w = chunk.substr(a, b - a + 1);
  return w == "exit" || w == "quit" || w == "exit()" || w == "quit()";
}

// An error's first line with "; did you mean NAME?" when it names an unknown option key near a
// known one (lib/lt/repl.lua hint), for every option checker alike
std::string with_hint(ScriptHost& interp, const std::string& message) {
  const std::string line = message.substr(0, message.find('\n'));
  const Outcome h = interp.eval("=require('lt.repl').hint(" + lua_quoted(line) + ")");
  if (h.kind != Outcome::ok || h.values.empty() || h.values[0].empty()) return message;
  return line + h.values[0] + message.substr(line.size());
}

std::string history_path() {
  if (const char* p = std::getenv("LTRUN_HISTORY")) return p;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.ltrun_history";
}

}  // namespace

int run_repl(const Globals& g) {
  const bool tty = isatty(STDIN_FILENO) == 1;
  const c10::Device device = parse_device(g.device);
  const uint64_t seed = g.seed ? *g.seed : kDefaultSeed;
  auto store = store::Store::open(g.log ? g.db : ":memory:");  // kept only with --log
  store::RunStart start;
  start.name = "repl";
  start.device = device.str();
  start.seed = int64_t(seed);
  start.torch_version = torch_version();
  store::Session session(store, start);
  if (!g.log && file_exists(g.db)) session.read_from(store::Store::open_readonly(g.db));  // lt.run.query reads --db
  seed_all(seed);

  const std::unique_ptr<ScriptHost> host = g.make_host();
  ScriptHost& interp = *host;
  RunContext ctx;
  ctx.seed = seed;
  ctx.device = device.str();
  ctx.sink = &session;
  ctx.session = &session;
  interp.set_run(ctx);
  interp.set_script("=stdin", {});
  const Outcome setup = interp.run("require('lt.repl').install()", "=(repl)");  // show, help, time
  if (setup.kind != Outcome::ok)
    std::fprintf(stderr, "ltrun: the REPL's helpers failed to load: %s\n", setup.message.c_str());
  g_host = &interp;
  const std::string hist = history_path();
  if (tty) {
    const std::string where =
        g.log ? fmt::format("run {} in {}", session.root(), g.db) : std::string("not stored: --log stores it");
    std::printf("ltrun %s (LibTorch %s, device %s, %s). `=expr` prints, `?x` helps, `%%time CODE` times, "
                "`exit` leaves; `?` alone: more.\n", LTRUN_VERSION, torch_version().c_str(), device.str().c_str(), where.c_str());
    rl_readline_name = "ltrun";
    rl_basic_word_break_characters = const_cast<char*>(" \t\n\"\\'`@$><=;|&{(+-*/,[");
    rl_attempted_completion_function = completion;
    rl_completion_append_character = '\0';
    using_history();
    read_history(hist.c_str());
  }

  std::string transcript, chunk;
  for (;;) {
    std::string line;
    if (tty) {
      char* l = readline(chunk.empty() ? "> " : ">> ");
      if (!l && interrupt_requested()) {  // Ctrl-C at the prompt drops the chunk being typed
        clear_interrupt();
        chunk.clear();
        std::printf("\n");
        continue;
      }
      if (!l) break;
      line = l;
      std::free(l);
    } else if (!std::getline(std::cin, line)) {
      break;
    }
    chunk += chunk.empty() ? line : "\n" + line;
    if (is_exit(chunk)) {
      if (tty) add_history(chunk.c_str());
      chunk.clear();
      break;
    }
    clear_interrupt();
    const std::string code = rewrite(chunk);
    Outcome o = interp.eval(code);
    if (o.kind == Outcome::incomplete) continue;
    if (tty && !chunk.empty()) add_history(chunk.c_str());
    if (o.kind == Outcome::ok) {
      for (const auto& v : o.values) std::printf("%s\n", v.c_str());
      std::fflush(stdout);
      if (code.rfind("help(", 0) != 0 || code == chunk) transcript += o.script + "\n";  // ?x only shows
    } else {
      std::fprintf(stderr, "%s\n", trim_traceback(with_hint(interp, o.message)).c_str());
    }
    chunk.clear();
  }
  if (!chunk.empty()) std::fprintf(stderr, "ltrun: incomplete chunk at end of input ignored\n");
  if (tty) {
    write_history(hist.c_str());
    std::printf("\n");
  }
  g_host = nullptr;
  store->query("UPDATE runs SET script_text = ?, script_sha256 = ? WHERE id = ?",
               {store::Value(transcript), store::Value(sha256_hex(transcript)), store::Value(session.root())});
  session.end(session.root(), store::Status::ok);
  return kExitOk;
}

}  // namespace ltrun::cli
