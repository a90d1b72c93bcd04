// runtime/serve/api.h: the JSON API of `ltrun serve`, independent of the HTTP library so that
// tests call it directly. Every answer is JSON except an artifact's bytes; an error is
// {"error": "..."} with the HTTP status that fits (400 bad input or a query past its limits,
// 403 a refused write or artifact, 404 no such run / artifact / route, 409 an artifact that
// changed since it was registered, 413 one too large to serve, 500 otherwise).
//
//   GET /api/info                         db path, schema version, run count, latest run id
//   GET /api/runs?name=&status=&parent=&limit=&offset=   newest first, `limit` (default 100,
//                                         at most 1000) from `offset`; parent=none: top-level;
//                                         `total` counts them all; each run's `params` (values
//                                         cut at 60 characters)
//   GET /api/table?parent=&name=&status=&param=K=V&params=A,B&metrics=M,N&sort=&order=&limit=&offset=
//                                         the results table: runs (default top-level) as rows
//                                         with the params' values and each metric's last, min,
//                                         max (and last_step); sort=id|name|status|started|
//                                         children|param:K|last:M|min:M|max:M, order=asc|desc
//                                         (NULLs last); `limit` (default 50, at most 1000) from
//                                         `offset`, sorted and paged in SQL; `total`; `available`
//                                         param keys of the runs in scope and metric names of
//                                         them (past 300 runs: of the page's and the newest 300);
//                                         default columns: params most runs have, not paths,
//                                         varying ones first, and metrics half the runs logged
//                                         (then others a quarter of them logged); per
//                                         row `child_metrics`: the chosen metrics a child logged
//   GET /api/runs/ID                      fields, args, script, command lines, params, metric
//                                         and layer_metric summaries, eval summaries, artifacts,
//                                         children
//   GET /api/runs/ID/metrics?name=A,B&x=step|time&points=N   series, LTTB-downsampled to N
//   GET /api/runs/ID/layer_metrics?name=N[&step=S]   matrix group × layer (default: last step)
//   GET /api/runs/ID/eval_items?bench=&protocol=&category=&correct=0|1&limit=&offset=
//                                         items with prediction, answer, correct, prompt, output
//                                         (each cut at 1M characters: prompt_truncated), `limit`
//                                         of them, fewer past 8 MB of texts: then `truncated`
//                                         and `next_offset`
//   GET /api/runs/ID/artifacts/K          the K-th registered artifact file (0-based), while it
//                                         lies under the run's folders with its recorded sha256
//   GET /api/compare?ids=A,B,C-D          many runs in one answer (at most 5000; C-D: C to D):
//                                         per run its fields, params, metric names with point
//                                         counts and layer metric names
//   GET /api/compare/metrics?ids=&name=A,B&x=&points=   their series (runs lacking one: left out)
//   GET /api/compare/layer_metrics?ids=&name=N   the matrices of the runs that have it
//   GET /api/queries                      the named queries of db/queries
//   GET /api/sql?q=SQL | ?name=NAME       one read-only statement, at most 5000 rows and 16 MB
//   GET /api/compare?a=A&b=B[&tolerance=X]   `ltrun compare A B`: report text and counts; `eval`:
//                                         per bench and protocol both evaluated, the items
//                                         both / only a / only b / neither solved, and the first
//                                         200 solved by one only, with both predictions, prompts
//                                         and outputs
#pragma once
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/serve/reader.h"

namespace ltrun::serve {

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // the share of the server's budget (MemoryBudget) the body holds: given back when the last
  // copy of this goes (the server keeps it until the body is sent)
  std::shared_ptr<void> hold;
};

// What all requests in flight may hold at once (the server's bound): every charge of a request
// (Api: the rows it reads, the points it builds, its answer) is taken from it too, and given
// back when the request's answer has been sent. A request that would pass it gets a 503 (try
// again) before it reads on: what requests hold stays under `bytes` however many run at once.
class MemoryBudget {
 public:
  explicit MemoryBudget(size_t bytes) : cap_(bytes) {}
  bool take(size_t n);  // false (and nothing taken): that much is not left
  void give(size_t n);
  size_t cap() const { return cap_; }
  size_t used() const { return used_; }
  size_t peak() const { return peak_; }  // the most ever held at once

 private:
  const size_t cap_;
  std::atomic<size_t> used_{0}, peak_{0};
};

using Params = std::multimap<std::string, std::string>;

// Does `path` name a heavy route: one whose answer may be large or whose reading is (sql,
// table, compare and compare/*, a run's metrics, layer_metrics, eval_items and artifacts)? The
// server runs few of them at a time. The rest (info, queries, the runs list, one run's page) are
// light.
bool heavy_route(const std::string& path);

class Api {
 public:
  // What one request may hold (ltrun serve --request-mb): the rows it reads from the store as
  // they sit in memory (Reader::row_bytes), what it builds from them, its answer. Past it the
  // answer is a 413 saying to ask for less; where counts of rows tell beforehand that a request
  // would pass it (a comparison, metric series, layer metrics), the 413 comes before any of
  // them is read. It bounds every walk that reads the store row by row too, a parent cycle of
  // an edited store included.
  static constexpr size_t kRequestBytes = size_t(128) << 20;
  // What all requests in flight may hold together (ltrun serve --memory-mb): MemoryBudget.
  static constexpr size_t kServerBytes = size_t(256) << 20;

  // sql_timeout_ms: a statement of /api/sql running longer is stopped (400); server: the
  // budget shared with the other requests of the server (nullptr: one of kServerBytes)
  explicit Api(std::shared_ptr<Reader> reader, int sql_timeout_ms = 10000, size_t request_bytes = kRequestBytes,
               std::shared_ptr<MemoryBudget> server = nullptr);
  // path without the query string; never throws (errors become JSON responses). What one
  // request holds is bounded (past it: 413), and what all hold together (past it: 503).
  Response get(const std::string& path, const Params& params) const;
  const MemoryBudget& server_budget() const { return *server_; }
  // The server stops: queries in flight end at their next progress check, later ones at once
  // (503), so that no request holds the server up.
  void stop() const { reader_->cancel(); }

 private:
  std::shared_ptr<Reader> reader_;
  int sql_timeout_ms_;
  size_t request_bytes_;
  std::shared_ptr<MemoryBudget> server_;
};

}  // namespace ltrun::serve
