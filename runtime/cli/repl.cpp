// runtime/cli/repl.cpp: `ltrun` with no script: an interactive Lua session (libedit line
// editing, history in ~/.ltrun_history, tab completion of lt.* names, multi-line chunks).
// The session is a run named "repl" whose script text is the chunks that ran, so
// `ltrun rerun` can replay it. Ctrl-C stops the running chunk, or at the prompt drops the chunk
// being typed; Ctrl-D quits. Without a terminal it reads chunks from stdin silently.
#include <editline/readline.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "runtime/cli/cli.h"
#include "runtime/core/device.h"
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
  auto store = store::Store::open(g.db);
  store::RunStart start;
  start.name = "repl";
  start.device = device.str();
  start.seed = int64_t(seed);
  start.torch_version = torch_version();
  store::Session session(store, start);
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
  g_host = &interp;
  const std::string hist = history_path();
  if (tty) {
    std::printf("ltrun %s (LibTorch %s, device %s, run %lld in %s). `=expr` prints; Ctrl-D quits.\n",
                LTRUN_VERSION, torch_version().c_str(), device.str().c_str(), (long long)session.root(),
                g.db.c_str());
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
    clear_interrupt();
    Outcome o = interp.eval(chunk);
    if (o.kind == Outcome::incomplete) continue;
    if (tty && !chunk.empty()) add_history(chunk.c_str());
    if (o.kind == Outcome::ok) {
      for (const auto& v : o.values) std::printf("%s\n", v.c_str());
      std::fflush(stdout);
      transcript += o.script + "\n";
    } else {
      std::fprintf(stderr, "%s\n", o.message.c_str());
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
