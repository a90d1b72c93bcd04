// runtime/cli/serve.cpp: `ltrun serve [--port N] [--host H] [--allow-host NAME]... [--sql-timeout S]`:
// the web view of the run store (runtime/serve), read-only, on loopback unless --host says
// otherwise, answering requests for localhost, IP addresses and the --allow-host names.
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
      o.sql_timeout_ms = int(std::min<int64_t>(a.integer(), 3600) * 1000);
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
           "[--allow-host NAME]... [--sql-timeout 10] [--db PATH])", a.key());
    }
  }
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
