// runtime/cli/serve.cpp: `ltrun serve [--port N] [--host H] [--allow-host NAME]... [--sql-timeout S]
// [--request-mb N] [--memory-mb N]`: the web view of the run store (runtime/serve), read-only, on
// loopback unless --host says otherwise, answering requests for localhost, IP addresses and the
// --allow-host names; what one request and all of them together may hold in memory.
#include <algorithm>
#include <cstdio>

#include "runtime/cli/cli.h"
#include "runtime/core/error.h"
#include "runtime/serve/server.h"

namespace ltrun::cli {

int cmd_serve(const Globals& g, const std::vector<std::string>& args) {
  serve::Options o;
  o.db = g.db;
  ArgReader a(args, 0, "serve");
  while (a.next()) {
    if (a.key() == "--port") {
      const int64_t p = a.integer();
      LT_CHECK(p <= 65535, "serve: --port {}: expected 0 (any free port) to 65535", p);
      o.port = int(p);
    } else if (a.key() == "--sql-timeout") {
      const int64_t secs = a.integer();
      LT_CHECK(secs >= 1 && secs <= 3600, "serve: --sql-timeout {}: expected seconds from 1 to 3600", secs);
      o.sql_timeout_ms = int(secs * 1000);
    } else if (a.key() == "--request-mb" || a.key() == "--memory-mb") {
      const int64_t mb = a.integer();
      LT_CHECK(mb >= 1 && mb <= (int64_t(1) << 20), "serve: {} {}: expected a number of MB from 1 to 1048576", a.key(), mb);
      (a.key() == "--request-mb" ? o.request_bytes : o.memory_bytes) = size_t(mb) << 20;
    } else if (a.key() == "--host") {
      o.host = a.value();
    } else if (a.key() == "--allow-host") {
      const std::string name = a.value();
      LT_CHECK(serve::valid_host_name(name),
               "serve: --allow-host '{}': expected a host name without a port (letters, digits, '-', '.'), "
               "e.g. --allow-host myhost.lan", name);
      o.allow_hosts.push_back(name);
    } else {
      fail("serve: unknown argument '{}' (usage: ltrun serve [--port 8080] [--host 127.0.0.1] "
           "[--allow-host NAME]... [--sql-timeout 10] [--request-mb 128] [--memory-mb 256] [--db PATH])", a.key());
    }
  }
  LT_CHECK(o.memory_bytes >= o.request_bytes,
           "serve: --memory-mb {} is less than --request-mb {}: all requests together may hold at least what one may",
           o.memory_bytes >> 20, o.request_bytes >> 20);
  if (!serve::is_loopback(o.host))
    std::fprintf(stderr,
                 "ltrun serve: warning: listening on %s, not loopback: anyone who can reach this "
                 "address can read every run, script and artifact of %s (there is no login)\n",
                 o.host.c_str(), o.db.c_str());
  serve::serve(o, [&](const std::string& url) {
    std::printf("ltrun serve: %s (run store %s, read-only; Ctrl-C stops)\n", url.c_str(), o.db.c_str());
    std::fflush(stdout);
  });
  return kExitOk;
}

}  // namespace ltrun::cli
