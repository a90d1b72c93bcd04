// runtime/serve/server.cpp: the HTTP side of `ltrun serve` (see server.h), on cpp-httplib.
#include "runtime/serve/server.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "runtime/core/error.h"
#include "runtime/core/interrupt.h"
#include "runtime/serve/api.h"

namespace ltrun::serve {
namespace {

const char* content_type(const std::string& path) {
  auto ends = [&](const char* e) {
    const size_t n = std::strlen(e);
    return path.size() >= n && path.compare(path.size() - n, n, e) == 0;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  return "text/plain; charset=utf-8";
}

void send(httplib::Response& res, const Response& r) {
  res.status = r.status;
  for (const auto& [k, v] : r.headers) res.set_header(k, v);
  res.set_content(r.body, r.content_type);
}

}  // namespace

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

void serve(const Options& o, const std::function<void(const std::string&)>& on_listening) {
  auto reader = std::make_shared<Reader>(o.db);
  Api api(reader, o.sql_timeout_ms);
  httplib::Server svr;
  svr.set_default_headers({{"Cache-Control", "no-store"}});
  for (const auto& f : ui_files()) {
    const std::string path = f.path, text = f.text;
    const std::string route = path == "index.html" ? "/" : "/" + path;
    svr.Get(route, [text, path](const httplib::Request&, httplib::Response& res) {
      res.set_content(text, content_type(path));
    });
  }
  svr.Get(R"(/api/.*)", [&api](const httplib::Request& req, httplib::Response& res) {
    send(res, api.get(req.path, Params(req.params.begin(), req.params.end())));
  });
  auto refuse = [](const httplib::Request& req, httplib::Response& res) {
    Response r;
    r.status = 405;
    r.body = R"({"error": "ltrun serve is read-only: only GET is served"})";
    r.headers = {{"Allow", "GET"}};
    send(res, r);
  };
  svr.Post(".*", refuse);
  svr.Put(".*", refuse);
  svr.Delete(".*", refuse);
  svr.Patch(".*", refuse);
  svr.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 404 && res.body.empty())
      res.set_content(R"({"error": "no such page: )" + req.path + "\"}", "application/json");
  });

  int port = o.port;
  if (port == 0) {
    port = svr.bind_to_any_port(o.host);
    LT_CHECK(port > 0, "serve: cannot bind to {} (any port)", o.host);
  } else {
    LT_CHECK(svr.bind_to_port(o.host, port), "serve: cannot bind to {}:{} (in use? try --port 0)", o.host, port);
  }

  // SIGINT/SIGTERM (the runtime's handler) stop the server from a thread of its own: stop()
  // is not async-signal-safe
  install_interrupt_handler(nullptr);
  std::atomic<bool> done{false};
  std::thread watcher([&] {
    while (!done) {
      if (interrupt_requested()) {
        svr.stop();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  const std::string shown = o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host;
  on_listening("http://" + shown + ":" + std::to_string(port) + "/");
  svr.listen_after_bind();
  done = true;
  watcher.join();
  clear_interrupt();
}

}  // namespace ltrun::serve
