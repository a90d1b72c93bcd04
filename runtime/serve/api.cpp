// runtime/serve/api.cpp: the JSON API of `ltrun serve` (routes listed in api.h).
#include "runtime/serve/api.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "runtime/core/env.h"
#include "runtime/core/sha256.h"
#include "runtime/store/artifact.h"
#include "runtime/store/compare.h"
#include "runtime/store/store.h"
#include "runtime/store/views.h"
#include "runtime/serve/downsample.h"

namespace ltrun::serve {
namespace {

using json = nlohmann::json;
using store::Value;

constexpr size_t kSqlMaxRows = 5000;
constexpr size_t kSqlMaxBytes = 16u << 20;  // of an answer's strings and blobs
constexpr size_t kDefaultPoints = 2000, kMaxPoints = 100000;
constexpr uintmax_t kMaxArtifactBytes = 64u << 20;  // the most an answer may have (server.cpp)
constexpr size_t kMaxCompare = 5000;  // runs of one /api/compare request
// What one request holds (Api's request_bytes) is counted as the reader counts its rows
// (Reader::row_bytes: what they take in memory), plus kJsonCellBytes a cell made a JSON
// object's member (a map node with its key), plus what a comparison builds per point
// (kPointBytes), plus its answer; and each statement as this many bytes: a walk that reads the store a row per statement (the
// parents of a run, in a store edited to hold a cycle) ends after request_bytes / 2 KB
// statements (65,536), a second or two, not after tens of millions
constexpr size_t kStatementBytes = 2048;
constexpr size_t kJsonCellBytes = 128;
// A comparison (store::compare_runs) keeps per metric point of either run a Point (three
// strings and a Value, 144 bytes, in a vector that grows by doubling) and a map node of its key
// (96 bytes or more): 512 bytes a point besides the row read (168 bytes for 3 columns), 680 in
// all, where the server's peak grew by 365 bytes a point (a compare of two runs of 300k points,
// names of 2 characters); a long name adds to it (its three strings), counted from the names'
// lengths.
constexpr size_t kPointBytes = 512;
// eval items: the prompt and output of an item shown up to this many characters, and items of one
// answer up to kEvalPageBytes (at least one): past that the answer says `truncated` and where the
// next page starts
constexpr int64_t kEvalTextChars = 1 << 20;
constexpr size_t kEvalPageBytes = size_t(8) << 20;

struct HttpError : Error {
  int status;
  HttpError(int s, const std::string& m) : Error(m), status(s) {}
};
template <class... Args>
[[noreturn]] void http_fail(int status, fmt::format_string<Args...> f, Args&&... args) {
  throw HttpError(status, fmt::format(f, std::forward<Args>(args)...));
}

json to_json(const Value& v) {
  if (std::holds_alternative<int64_t>(v)) return std::get<int64_t>(v);
  if (std::holds_alternative<double>(v)) {
    const double d = std::get<double>(v);
    return std::isfinite(d) ? json(d) : json(nullptr);
  }
  if (std::holds_alternative<std::string>(v)) return std::get<std::string>(v);
  return nullptr;
}

// rows as objects {column: value}
json table_objects(const store::Table& t) {
  json out = json::array();
  for (const auto& row : t.rows) {
    json o = json::object();
    for (size_t c = 0; c < t.columns.size(); c++) o[t.columns[c]] = to_json(row[c]);
    out.push_back(std::move(o));
  }
  return out;
}

std::string param(const Params& p, const std::string& key, const std::string& def = "") {
  auto it = p.find(key);
  return it == p.end() ? def : it->second;
}

int64_t parse_int(const std::string& what, const std::string& s) {
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos)
    http_fail(400, "{}: expected a non-negative integer, got '{}'", what, s);
  return std::stoll(s);
}

int64_t int_param(const Params& p, const std::string& key, int64_t def, int64_t max) {
  const std::string v = param(p, key);
  if (v.empty()) return def;
  return std::min(parse_int(key, v), max);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep))
    if (!cur.empty()) out.push_back(cur);
  return out;
}

// POSIX shell quoting, for the command lines shown on a run's page
std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                        "@%+=:,./-_") == std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// a file name inside a quoted header value
std::string header_safe(std::string s) {
  for (char& c : s)
    if (c == '"' || c == '\\' || (unsigned char)c < 0x20 || (unsigned char)c >= 0x7f) c = '_';
  return s;
}

Response json_response(const json& j, int status = 200) {
  Response r;
  r.status = status;
  r.body = j.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

class Handler {
 public:
  Handler(Reader& db, int sql_timeout_ms, size_t request_bytes, const std::shared_ptr<MemoryBudget>& server)
      : db_(db), sql_timeout_ms_(sql_timeout_ms), request_bytes_(request_bytes), budget_(request_bytes), server_(server) {}
  ~Handler() { server_->give(taken_); }
  Handler(const Handler&) = delete;
  Handler& operator=(const Handler&) = delete;

  // The answer made: of what this request took from the server's budget, its body's share stays
  // taken until the body is sent (r.hold), the rest goes back now; a body larger than what was
  // charged is charged first (a 413 or 503 in its place when that fails).
  Response finish(Response r) {
    const size_t body = r.body.capacity() + 1;
    try {
      if (body > taken_) charge(body - taken_);
    } catch (const HttpError& e) {
      return json_response({{"error", e.what()}}, e.status);
    }
    server_->give(taken_ - body);
    taken_ = 0;
    auto server = server_;
    r.hold = std::shared_ptr<void>(nullptr, [server, body](void*) { server->give(body); });
    return r;
  }

  Response route(const std::string& path, const Params& p) {
    const auto parts = split(path, '/');  // "", "api", ...
    if (parts.size() < 2 || parts[0] != "api") http_fail(404, "no such route: {}", path);
    const std::string& what = parts[1];
    if (what == "info" && parts.size() == 2) return json_response(info());
    if (what == "queries" && parts.size() == 2) return json_response(queries());
    if (what == "sql" && parts.size() == 2) return json_response(sql(p));
    if (what == "table" && parts.size() == 2) return json_response(table(p));
    // ?a=A&b=B: the comparison `ltrun compare` prints; ?ids=...: the runs of a compare page
    if (what == "compare" && parts.size() == 2 && !p.count("ids")) return json_response(compare(p));
    if (what == "compare") {
      const auto ids = id_list(p);
      if (parts.size() == 2) return json_response(compare(ids));
      if (parts.size() == 3 && parts[2] == "metrics") return json_response(compare_metrics(ids, p));
      if (parts.size() == 3 && parts[2] == "layer_metrics") return json_response(compare_layer_metrics(ids, p));
    }
    if (what == "runs") {
      if (parts.size() == 2) return json_response(runs(p));
      const int64_t id = parse_int("run id", parts[2]);
      if (parts.size() == 3) return json_response(run(id));
      require_run(id);
      const std::string& sub = parts[3];
      if (sub == "metrics" && parts.size() == 4) return json_response(metrics(id, p));
      if (sub == "layer_metrics" && parts.size() == 4) return json_response(layer_metrics(id, p));
      if (sub == "eval_items" && parts.size() == 4) return json_response(eval_items(id, p));
      if (sub == "artifacts" && parts.size() == 5) return artifact(id, parse_int("artifact", parts[4]));
    }
    http_fail(404, "no such route: {}", path);
  }

 private:
  Reader& db_;
  int sql_timeout_ms_;
  size_t request_bytes_;
  size_t budget_;  // of request_bytes_, what is left
  std::shared_ptr<MemoryBudget> server_;
  size_t taken_ = 0;     // from the server's budget
  size_t reserved_ = 0;  // charged ahead (expect) and not yet used

  // `bytes` more of this request's budget (a 413 past it) and of the server's (a 503)
  void charge(size_t bytes) {
    const size_t prepaid = std::min(bytes, reserved_);
    reserved_ -= prepaid;
    bytes -= prepaid;
    if (bytes == 0) return;
    if (bytes > budget_)
      http_fail(413, "this answer would read more than {} MB of the run store; ask for less (fewer runs or "
                "names, a smaller limit= or points=), or use the command line (ltrun sql, ltrun compare)",
                std::max<size_t>(request_bytes_ >> 20, 1));
    if (!server_->take(bytes)) busy();
    budget_ -= bytes;
    taken_ += bytes;
  }
  [[noreturn]] void busy() {
    http_fail(503, "busy: the requests in flight hold {} MB of the {} MB this server gives them all; try again in a "
              "moment", server_->used() >> 20, server_->cap() >> 20);
  }
  // Before reading: what the counts of rows say the reading will hold (`bytes`; `what` names
  // the rows, for the message). Past this request's budget: a 413 now, before any is read;
  // otherwise it is charged ahead, and the reading draws on it.
  void expect(size_t bytes, const std::string& what) {
    if (bytes <= reserved_) return;
    if (bytes - reserved_ > budget_)
      http_fail(413, "{}: about {} MB in memory, past the {} MB one request may hold here; ask for less (fewer runs "
                "or names, a smaller limit= or points=), or use the command line (ltrun sql, ltrun compare)",
                what, std::max<size_t>(bytes >> 20, 1), std::max<size_t>(request_bytes_ >> 20, 1));
    const size_t more = bytes - reserved_;
    reserved_ = 0;
    charge(more);
    reserved_ = bytes;
  }
  // what a row of `columns` values (numbers, short texts) holds as the reader reads it
  static size_t row_estimate(size_t columns) { return row_bytes(std::vector<Value>(columns)); }

  Meter meter(size_t row_extra = 0) { return Meter{[this](size_t n) { charge(n); }, row_extra}; }

  store::Table q(const std::string& sql, const std::vector<Value>& binds = {}, size_t row_extra = 0) {
    if (db_.cancelled()) http_fail(503, "the server is stopping");
    charge(kStatementBytes);
    const Meter m = meter(row_extra);
    try {
      return std::move(db_.query(sql, binds, SIZE_MAX, 10000, SIZE_MAX, &m).table);
    } catch (const HttpError&) {
      throw;
    } catch (const Error&) {
      if (db_.cancelled()) http_fail(503, "the server is stopping");
      throw;
    }
  }

  // rows as JSON objects {column: value}, each member charged
  json objects(const store::Table& t) {
    charge(t.rows.size() * t.columns.size() * kJsonCellBytes);
    return table_objects(t);
  }

  void require_run(int64_t id) {
    if (q("SELECT 1 FROM runs WHERE id = ?", {Value(id)}).rows.empty())
      http_fail(404, "no run with id {} in {}", id, db_.path());
  }

  json info() {
    auto t = q("SELECT count(*), max(id) FROM runs");
    return {{"db", db_.path()}, {"schema_version", db_.schema_version()},
            {"runs", to_json(t.rows[0][0])}, {"latest_run", to_json(t.rows[0][1])},
            {"ltrun_version", LTRUN_VERSION}, {"host", host_name()}};
  }

  json queries() {
    json out = json::array();
    for (const auto& n : store::named_query_names()) out.push_back({{"name", n}, {"sql", store::named_query(n)}});
    return out;
  }

  json sql(const Params& p) {
    std::string text = param(p, "q");
    const std::string name = param(p, "name");
    if (!name.empty()) {
      try {
        text = store::named_query(name);
      } catch (const Error& e) {
        http_fail(404, "{}", e.what());
      }
    }
    if (text.empty()) http_fail(400, "sql: give ?q=SELECT ... or ?name=NAME");
    Reader::Result r;
    try {
      const Meter m = meter();
      r = db_.query(text, {}, kSqlMaxRows, sql_timeout_ms_, kSqlMaxBytes, &m);
      charge(r.table.rows.size() * r.table.columns.size() * sizeof(json));  // its rows as JSON arrays
    } catch (const HttpError&) {
      throw;
    } catch (const Refused& e) {
      http_fail(403, "{}", e.what());
    } catch (const Error& e) {
      http_fail(400, "sql: {}", e.what());
    }
    json rows = json::array();
    for (const auto& row : r.table.rows) {
      json a = json::array();
      for (const auto& v : row) a.push_back(to_json(v));
      rows.push_back(std::move(a));
    }
    return {{"columns", r.table.columns}, {"rows", rows}, {"truncated", r.truncated}};
  }

  // A `running` run whose process is gone (judged as the store judges it before marking it
  // crashed: store::judge_running) gets alive=false, its seconds up to its last logged point
  // (not counting on), and `gone` saying why; the next writer marks it crashed. Reads the
  // process columns itself: they stay out of the answer.
  void add_alive(json& runs) {
    const bool process_cols = db_.schema_version() >= 2;
    for (auto& r : runs) {
      if (r["status"] != "running" || !r["id"].is_number()) continue;
      const int64_t id = r["id"].get<int64_t>();
      auto t = q(process_cols ? "SELECT host, pid, boot_id, machine_id, process_start FROM runs WHERE id = ?"
                              : "SELECT host, pid, NULL, NULL, NULL FROM runs WHERE id = ?", {Value(id)});
      if (t.rows.empty() || !std::holds_alternative<int64_t>(t.rows[0][1])) continue;
      const auto& row = t.rows[0];
      store::RunProcess proc{store::to_text(row[0]), std::get<int64_t>(row[1]), std::nullopt, std::nullopt, std::nullopt};
      if (std::holds_alternative<std::string>(row[2])) proc.boot_id = std::get<std::string>(row[2]);
      if (std::holds_alternative<std::string>(row[3])) proc.machine_id = std::get<std::string>(row[3]);
      if (std::holds_alternative<int64_t>(row[4])) proc.process_start = std::get<int64_t>(row[4]);
      const store::Liveness l = store::judge_running(proc);
      if (l.state == store::Liveness::unknown) continue;
      r["alive"] = l.state == store::Liveness::alive;
      if (l.state == store::Liveness::dead) {
        r["gone"] = l.why;
        r["secs"] = to_json(q("SELECT round(max(t) - (julianday(r.started_at) - 2440587.5) * 86400, 1) "
                              "FROM runs r LEFT JOIN metrics m ON m.run_id = r.id WHERE r.id = ?", {Value(id)}).rows[0][0]);
      }
    }
  }

  json runs(const Params& p) {
    std::string where;
    std::vector<Value> binds;
    run_filter(p, "all", where, binds);
    const int64_t limit = int_param(p, "limit", 100, 1000), offset = int_param(p, "offset", 0, INT64_MAX);
    const auto total = q("SELECT count(*) FROM runs r WHERE " + where, binds);
    binds.emplace_back(limit);
    binds.emplace_back(offset);
    json list = objects(q(
        "SELECT r.id, r.parent_id, r.name, r.status, r.started_at, r.finished_at, "
        "round((julianday(coalesce(r.finished_at, strftime('%Y-%m-%d %H:%M:%f','now'))) - julianday(r.started_at)) * 86400, 1) AS secs, "
        "r.device, r.seed, r.host, r.pid, substr(r.error, 1, 200) AS error, "
        "(SELECT count(*) FROM runs c WHERE c.parent_id = r.id) AS children "
        "FROM runs r WHERE " + where + " ORDER BY r.id DESC LIMIT ? OFFSET ?", binds));
    add_alive(list);
    // each run's params (values cut at 60 characters): the list shows those in which runs of one
    // name differ, so that 24 runs of one script are told apart
    if (!list.empty()) {
      std::vector<int64_t> ids;
      for (const auto& r : list) ids.push_back(r["id"].get<int64_t>());
      std::vector<Value> b;
      const std::string in = in_ids(ids, b);
      std::map<int64_t, json> ps;
      for (const auto& row : q("SELECT run_id, key, substr(value, 1, 60) FROM params WHERE " + in + " ORDER BY run_id, key", b).rows)
        ps[std::get<int64_t>(row[0])][std::get<std::string>(row[1])] = to_json(row[2]);
      for (auto& r : list) {
        auto it = ps.find(r["id"].get<int64_t>());
        r["params"] = it == ps.end() ? json::object() : std::move(it->second);
      }
    }
    return {{"total", to_json(total.rows[0][0])}, {"runs", list}};
  }

  // The WHERE clause (over `runs r`) of ?name= (contained), ?status=, ?parent= (none: top-level,
  // all, or a run id: its children; `parent_default` when not given) and, for the results
  // table, each ?param=KEY=VALUE (that value, as text) or ?param=KEY (has the key).
  void run_filter(const Params& p, const std::string& parent_default, std::string& where, std::vector<Value>& binds) {
    where = "1";
    const std::string name = param(p, "name"), status = param(p, "status"), parent = param(p, "parent", parent_default);
    if (!name.empty()) {
      where += " AND r.name LIKE ? ESCAPE '\\'";
      std::string pat = "%";
      for (char c : name) {
        if (c == '%' || c == '_' || c == '\\') pat += '\\';
        pat += c;
      }
      binds.emplace_back(pat + "%");
    }
    if (!status.empty()) {
      static const char* const known[] = {"running", "ok", "failed", "interrupted", "crashed"};
      if (std::find(std::begin(known), std::end(known), status) == std::end(known))
        http_fail(400, "status '{}': expected running, ok, failed, interrupted or crashed", status);
      where += " AND r.status = ?";
      binds.emplace_back(status);
    }
    if (parent == "none") {
      where += " AND r.parent_id IS NULL";
    } else if (!parent.empty() && parent != "all") {
      where += " AND r.parent_id = ?";
      binds.emplace_back(parse_int("parent (a run id, none or all)", parent));
    }
    for (auto [it, end] = p.equal_range("param"); it != end; ++it) {
      const std::string& f = it->second;
      const size_t eq = f.find('=');
      const std::string key = f.substr(0, eq);
      if (key.empty()) http_fail(400, "param '{}': expected KEY=VALUE or KEY", f);
      if (eq == std::string::npos) {
        where += " AND EXISTS (SELECT 1 FROM params f WHERE f.run_id = r.id AND f.key = ?)";
        binds.emplace_back(key);
      } else {
        where += " AND EXISTS (SELECT 1 FROM params f WHERE f.run_id = r.id AND f.key = ? AND f.value = ?)";
        binds.emplace_back(key);
        binds.emplace_back(f.substr(eq + 1));
      }
    }
  }

  // A text as an SQL string literal (names of metrics and params inside ORDER BY and the
  // column subqueries, where one name appears several times); NUL cannot be in one.
  static std::string literal(const std::string& what, const std::string& s) {
    if (s.find('\0') != std::string::npos) {
      std::string shown;
      for (char c : s) shown += c ? std::string(1, c) : std::string("\\0");
      http_fail(400, "{} '{}': a name cannot hold a NUL character", what, shown);
    }
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
    return out + "'";
  }

  // the SQL of one cell of the results table for run `r`: a param's value, or a metric's last
  // (by step, then the later row), min or max. min and max are one seek each in
  // metrics_run_name_value (db/migrations/0007), last one seek in metrics_run_name.
  static std::string cell_sql(const std::string& kind, const std::string& name) {
    const std::string n = literal(kind == "param" ? "param" : "metric", name);
    if (kind == "param") return "(SELECT value FROM params WHERE run_id = r.id AND key = " + n + ")";
    if (kind == "last")
      return "(SELECT value FROM metrics WHERE run_id = r.id AND name = " + n + " ORDER BY step DESC, rowid DESC LIMIT 1)";
    if (kind == "last_step") return "(SELECT max(step) FROM metrics WHERE run_id = r.id AND name = " + n + ")";
    if (kind == "min" || kind == "max") return "(SELECT " + kind + "(value) FROM metrics WHERE run_id = r.id AND name = " + n + ")";
    http_fail(400, "internal: no cell kind {}", kind);
  }

  // GET /api/table: the results table (api.h). Runs as rows, chosen params and the last / min /
  // max of chosen metrics as columns; sorted and paged in SQL: the page's ids first (ORDER BY
  // over the filtered runs, LIMIT/OFFSET), then the cells of those rows only.
  json table(const Params& p) {
    constexpr size_t kMaxColumns = 20;
    std::string where;
    std::vector<Value> binds;
    run_filter(p, "none", where, binds);
    const int64_t limit = int_param(p, "limit", 50, 1000), offset = int_param(p, "offset", 0, INT64_MAX);
    const int64_t total = std::get<int64_t>(q("SELECT count(*) FROM runs r WHERE " + where, binds).rows[0][0]);

    // the columns one may pick: param keys and metric names of the runs in scope (metric names by
    // an index skip-scan, one seek per run and name; over the page's runs past 5,000 runs)
    const std::string scope = "SELECT r.id FROM runs r WHERE " + where;
    // with, per key, what picks the default columns: how many runs have it, whether its values
    // differ, how many look like paths (no space, a '/')
    json avail_params = json::array(), avail_metrics = json::array();
    std::vector<std::string> default_params, varying_params;
    for (const auto& row : q("SELECT key, count(*), count(DISTINCT value) > 1, sum(instr(value, '/') > 0 AND instr(value, ' ') = 0) "
                             "FROM params WHERE run_id IN (" + scope + ") GROUP BY key ORDER BY count(*) DESC, key LIMIT 500", binds).rows) {
      avail_params.push_back(to_json(row[0]));
      const int64_t n = std::get<int64_t>(row[1]), paths = std::get<int64_t>(row[3]);
      if (2 * n < total || 2 * paths >= n) continue;  // mostly empty, or paths (out, model)
      (std::get<int64_t>(row[2]) ? varying_params : default_params).push_back(std::get<std::string>(row[0]));
    }
    default_params.insert(default_params.begin(), varying_params.begin(), varying_params.end());  // a sweep's axes first

    // sort key
    const std::string sort = param(p, "sort", "id"), order = param(p, "order", sort == "id" || sort == "started" ? "desc" : "asc");
    if (order != "asc" && order != "desc") http_fail(400, "order '{}': expected asc or desc", order);
    std::string key;
    bool numeric_text = false;  // a param: numbers by value before any other text
    static const std::map<std::string, std::string> fields = {
        {"id", "r.id"}, {"name", "r.name"}, {"status", "r.status"}, {"started", "r.started_at"},
        {"children", "(SELECT count(*) FROM runs c WHERE c.parent_id = r.id)"}};
    if (auto it = fields.find(sort); it != fields.end()) {
      key = it->second;
    } else {
      const size_t colon = sort.find(':');
      const std::string kind = sort.substr(0, colon), name = colon == std::string::npos ? "" : sort.substr(colon + 1);
      if ((kind != "param" && kind != "last" && kind != "min" && kind != "max") || name.empty())
        http_fail(400, "sort '{}': expected id, name, status, started, children, param:KEY, last:METRIC, min:METRIC or max:METRIC", sort);
      key = cell_sql(kind, name);
      numeric_text = kind == "param";
    }
    const std::string dir = order == "asc" ? " ASC" : " DESC";
    std::string order_by = numeric_text
        ? "k IS NULL, ltrun_number(k) IS NULL, ltrun_number(k)" + dir + ", k" + dir
        : "k IS NULL, k" + dir;
    std::vector<Value> page_binds = binds;
    page_binds.emplace_back(limit);
    page_binds.emplace_back(offset);
    // MATERIALIZED: the key (a subquery) once per run, not once per mention in ORDER BY
    const auto page = q("WITH s AS MATERIALIZED (SELECT r.id AS id, " + key + " AS k FROM runs r WHERE " + where +
                        ") SELECT id FROM s ORDER BY " + order_by + ", id DESC LIMIT ? OFFSET ?", page_binds);
    std::vector<int64_t> ids;
    for (const auto& row : page.rows) ids.push_back(std::get<int64_t>(row[0]));

    // the runs whose metric names are offered: all in scope up to kNameRuns, else the page's
    // and the newest kNameRuns (a sweep's children log the same names: 2,000 runs cost 30 ms)
    constexpr int64_t kNameRuns = 300;
    std::vector<Value> mb = binds;
    std::string metric_scope = scope;
    if (total > kNameRuns) {
      std::vector<Value> tmp;
      std::string page_in = in_ids(ids.empty() ? std::vector<int64_t>{-1} : ids, tmp);
      page_in.replace(0, 6, "r.id");
      metric_scope = "SELECT r.id FROM runs r WHERE " + page_in + " UNION SELECT id FROM (" + scope + " ORDER BY r.id DESC LIMIT " +
                     std::to_string(kNameRuns) + ")";
      mb = tmp;
      mb.insert(mb.end(), binds.begin(), binds.end());
    }
    // (with the number of those runs that logged each: a metric most lack is no default column)
    const int64_t name_runs = std::get<int64_t>(q("SELECT count(*) FROM (" + metric_scope + ")", mb).rows[0][0]);
    std::vector<std::string> default_metrics;
    std::vector<std::pair<int64_t, std::string>> sparse;  // logged by fewer: only to fill up to three
    for (const auto& row : q("WITH RECURSIVE n(run_id, name) AS ("
                             "SELECT s.id, (SELECT min(name) FROM metrics WHERE run_id = s.id) FROM (" + metric_scope + ") s "
                             "UNION ALL SELECT n.run_id, (SELECT min(m.name) FROM metrics m WHERE m.run_id = n.run_id AND m.name > n.name) "
                             "FROM n WHERE n.name IS NOT NULL) "
                             "SELECT name, count(*) FROM n WHERE name IS NOT NULL GROUP BY name ORDER BY name LIMIT 500", mb).rows) {
      avail_metrics.push_back(to_json(row[0]));
      const int64_t n = std::get<int64_t>(row[1]);
      if (2 * n >= name_runs) default_metrics.push_back(std::get<std::string>(row[0]));
      else sparse.emplace_back(-n, std::get<std::string>(row[0]));
    }
    std::stable_sort(default_metrics.begin(), default_metrics.end(), [](const std::string& a, const std::string& b) {
      return (a.find("loss") != std::string::npos) > (b.find("loss") != std::string::npos);
    });
    std::sort(sparse.begin(), sparse.end());  // the commonest first; a metric most runs lack never
    for (size_t i = 0; i < sparse.size() && default_metrics.size() < 3 && -4 * sparse[i].first >= name_runs; i++)
      default_metrics.push_back(sparse[i].second);

    // the columns: ?params= and ?metrics= (comma-separated; given empty: none); not given: four
    // param keys (of those at least half the runs have, not paths; those whose values differ
    // first, then the commonest) and three metrics (of those at least half the runs logged, those
    // named like a loss first; then the commonest others that a quarter of them logged)
    auto chosen = [&](const char* what, const std::vector<std::string>& dflt_cols, size_t dflt) {
      std::vector<std::string> out;
      if (p.count(what)) {
        out = split(param(p, what), ',');
      } else {
        out = dflt_cols;
        if (out.size() > dflt) out.resize(dflt);
      }
      if (out.size() > kMaxColumns) http_fail(400, "{}: at most {} columns, got {}", what, kMaxColumns, out.size());
      return out;
    };
    const auto param_cols = chosen("params", default_params, 4);
    const auto metric_cols = chosen("metrics", default_metrics, 3);

    json rows = json::array();
    if (!ids.empty()) {
      std::vector<Value> b;
      std::string in = in_ids(ids, b);
      in.replace(0, 6, "r.id");
      std::string cols =
          "r.id, r.parent_id, r.name, r.status, r.started_at, r.finished_at, "
          "round((julianday(coalesce(r.finished_at, strftime('%Y-%m-%d %H:%M:%f','now'))) - julianday(r.started_at)) * 86400, 1) AS secs, "
          "(SELECT count(*) FROM runs c WHERE c.parent_id = r.id) AS children";
      for (size_t i = 0; i < param_cols.size(); i++) cols += fmt::format(", {} AS p{}", cell_sql("param", param_cols[i]), i);
      for (size_t i = 0; i < metric_cols.size(); i++)
        for (const char* k : {"last", "min", "max", "last_step"}) cols += fmt::format(", {} AS {}{}", cell_sql(k, metric_cols[i]), k, i);
      // whether any child logged the metric (a "best M" link only where one did)
      for (size_t i = 0; i < metric_cols.size(); i++)
        cols += fmt::format(", EXISTS (SELECT 1 FROM runs c WHERE c.parent_id = r.id AND EXISTS (SELECT 1 FROM metrics "
                            "WHERE run_id = c.id AND name = {})) AS cm{}", literal("metric", metric_cols[i]), i);
      const auto t = q("SELECT " + cols + " FROM runs r WHERE " + in, b);
      std::map<int64_t, json> by_id;
      for (const auto& row : t.rows) {
        json o = json::object();
        size_t c = 0;
        for (; c < 8; c++) o[t.columns[c]] = to_json(row[c]);
        json ps = json::object(), ms = json::object();
        for (size_t i = 0; i < param_cols.size(); i++) ps[param_cols[i]] = to_json(row[c++]);
        for (size_t i = 0; i < metric_cols.size(); i++) {
          json m = json::object();
          for (const char* k : {"last", "min", "max", "last_step"}) m[k] = to_json(row[c++]);
          ms[metric_cols[i]] = std::move(m);
        }
        json cm = json::array();
        for (size_t i = 0; i < metric_cols.size(); i++)
          if (std::get<int64_t>(row[c++])) cm.push_back(metric_cols[i]);
        o["child_metrics"] = std::move(cm);
        o["params"] = std::move(ps);
        o["metrics"] = std::move(ms);
        by_id[std::get<int64_t>(row[0])] = std::move(o);
      }
      for (int64_t id : ids) rows.push_back(std::move(by_id[id]));
      add_alive(rows);
    }
    return {{"total", total}, {"limit", limit}, {"offset", offset}, {"sort", sort}, {"order", order},
            {"params", param_cols}, {"metrics", metric_cols},
            {"available", {{"params", avail_params}, {"metrics", avail_metrics}}}, {"rows", rows}};
  }

  // the comparison `ltrun compare A B` prints (runtime/store/compare.h), and its counts
  json compare(const Params& p) {
    const int64_t a = parse_int("a", param(p, "a")), b = parse_int("b", param(p, "b"));
    require_run(a);
    require_run(b);
    check_tree(a);
    check_tree(b);
    const std::string t = param(p, "tolerance", "0");
    char* end = nullptr;
    const double tol = std::strtod(t.c_str(), &end);
    if (t.empty() || *end != '\0' || !(tol >= 0 && tol < 1)) http_fail(400, "tolerance: expected a number in [0, 1), got '{}'", t);
    // The points of both trees counted first (index ranges, no value read): a comparison that
    // would pass the budget is refused before it reads them. Each point costs its row as read,
    // kPointBytes and its name thrice (the three strings of a point hold it).
    size_t need = 0;
    int64_t points = 0;
    for (const int64_t run : {a, b}) {
      const auto c = q("WITH RECURSIVE t(id) AS (SELECT ? UNION ALL SELECT r.id FROM runs r JOIN t ON r.parent_id = t.id) "
                       "SELECT (SELECT count(*) FROM metrics WHERE run_id IN t), "
                       "(SELECT coalesce(sum(length(CAST(name AS BLOB))), 0) FROM metrics WHERE run_id IN t), "
                       "(SELECT count(*) FROM layer_metrics WHERE run_id IN t), "
                       "(SELECT coalesce(sum(length(CAST(name AS BLOB)) + length(CAST(grp AS BLOB))), 0) FROM layer_metrics WHERE run_id IN t)",
                       {Value(run)});
      const auto& r = c.rows[0];
      const int64_t m = std::get<int64_t>(r[0]), l = std::get<int64_t>(r[2]);
      points += m + l;
      need += size_t(m) * (row_estimate(3) + kPointBytes) + size_t(l) * (row_estimate(5) + kPointBytes) +
              3 * size_t(std::get<int64_t>(r[1]) + std::get<int64_t>(r[3]));
    }
    expect(need, fmt::format("runs {} and {} have {} metric and layer metric points", a, b, points));
    const store::Query query = [this](const std::string& sql, const std::vector<Value>& bs) { return q(sql, bs, kPointBytes); };
    const store::Comparison c = store::compare_runs(query, db_.schema_version(), a, b, tol, true);
    return {{"a", a}, {"b", b}, {"tolerance", tol}, {"report", c.report}, {"total_a", c.total_a}, {"eval", eval_diff(a, b)},
            {"equal", c.equal}, {"within", c.within}, {"different", c.different}, {"only_a", c.only_a},
            {"only_b", c.only_b}, {"first_divergence", c.first_divergence}, {"params_changed", c.params_changed},
            {"sources_changed", c.sources_changed}, {"inputs_changed", c.inputs_changed},
            {"reproduced", store::reproduced_line(c, tol)}};
  }

  // Before compare_runs walks the runs under `id` (store/compare.h): in one bounded query, that
  // they form a tree (an edited or imported store may hold a cycle of parents: the walk then
  // never ended, 12.8 GB), at most kTreeDepth levels deep and at most kTreeRuns runs.
  void check_tree(int64_t id) {
    constexpr int64_t kTreeDepth = 64, kTreeRuns = 100000;
    const auto t = q("WITH RECURSIVE t(id, depth) AS (SELECT ?, 0 UNION ALL SELECT r.id, t.depth + 1 FROM runs r "
                     "JOIN t ON r.parent_id = t.id WHERE t.depth < ? LIMIT ?) "
                     "SELECT count(*), count(DISTINCT id), max(depth) FROM t",
                     {Value(id), Value(kTreeDepth), Value(kTreeRuns + 1)});
    const int64_t rows = std::get<int64_t>(t.rows[0][0]), runs = std::get<int64_t>(t.rows[0][1]);
    if (rows != runs)
      http_fail(409, "run {}: the runs under it form a cycle of parents (a run is its own ancestor): the store was "
                "edited; not compared", id);
    if (rows > kTreeRuns) http_fail(413, "run {}: more than {} runs under it; compare them with ltrun compare", id, kTreeRuns);
    if (std::get<int64_t>(t.rows[0][2]) >= kTreeDepth)
      http_fail(409, "run {}: its runs nest {} levels deep or more; not compared", id, kTreeDepth);
  }

  // The evaluated items of runs a and b side by side, per bench and protocol both have: how many
  // both solved, only one, neither (items with a known answer, matched by item id), and the first
  // kEvalDiffItems items solved by exactly one of them, with both predictions and outputs and
  // the prompts (db/migrations/0008; NULL before).
  json eval_diff(int64_t a, int64_t b) {
    constexpr int64_t kEvalDiffItems = 200;
    const std::string join = " FROM eval_items x JOIN eval_items y ON y.run_id = ? AND y.bench = x.bench AND y.protocol = x.protocol "
                             "AND y.item_id = x.item_id WHERE x.run_id = ? AND x.correct IS NOT NULL AND y.correct IS NOT NULL";
    json out = json::array();
    for (const auto& row : q("SELECT x.bench, x.protocol, count(*), sum(x.correct AND y.correct), sum(x.correct AND NOT y.correct), "
                             "sum(NOT x.correct AND y.correct), sum(NOT x.correct AND NOT y.correct)" + join +
                             " GROUP BY x.bench, x.protocol ORDER BY x.bench, x.protocol", {Value(b), Value(a)}).rows) {
      json e = {{"bench", to_json(row[0])}, {"protocol", to_json(row[1])}, {"items", to_json(row[2])}, {"both", to_json(row[3])},
                {"only_a", to_json(row[4])}, {"only_b", to_json(row[5])}, {"neither", to_json(row[6])}};
      const std::string text = db_.schema_version() >= 8 ? "x.prompt, x.output, y.prompt, y.output" : "NULL, NULL, NULL, NULL";
      json items = json::array();
      for (const auto& r : q("SELECT x.item_id, x.category, x.answer, x.prediction, x.correct, y.prediction, " + text + join +
                             " AND x.bench = ? AND x.protocol = ? AND x.correct != y.correct ORDER BY x.rowid LIMIT ?",
                             {Value(b), Value(a), row[0], row[1], Value(kEvalDiffItems)}).rows)
        items.push_back({{"item_id", to_json(r[0])}, {"category", to_json(r[1])}, {"answer", to_json(r[2])},
                         {"solved_by", std::get<int64_t>(r[4]) ? "a" : "b"},
                         {"a", {{"prediction", to_json(r[3])}, {"prompt", to_json(r[6])}, {"output", to_json(r[7])}}},
                         {"b", {{"prediction", to_json(r[5])}, {"prompt", to_json(r[8])}, {"output", to_json(r[9])}}}});
      e["differing"] = std::move(items);
      out.push_back(std::move(e));
    }
    return out;
  }

  // ?ids=1,2,5-9: distinct run ids (A-B: A to B), all in the store, at most kMaxCompare (a
  // request line holds at most 8 KB: a sweep's children go as a range)
  std::vector<int64_t> id_list(const Params& p) {
    std::vector<int64_t> ids;
    std::set<int64_t> seen;
    for (const auto& t : split(param(p, "ids"), ',')) {
      const std::string what = "ids: '" + t + "' (run ids or ranges A-B, separated by commas)";
      const size_t dash = t.find('-');
      const int64_t a = parse_int(what, t.substr(0, dash)), b = dash == std::string::npos ? a : parse_int(what, t.substr(dash + 1));
      if (b < a) http_fail(400, "ids: range '{}' runs backwards", t);
      if (b - a >= int64_t(kMaxCompare)) http_fail(400, "compare: range '{}' holds more than {} runs", t, kMaxCompare);
      for (int64_t id = a; id <= b; id++) {
        if (seen.insert(id).second) ids.push_back(id);
        if (ids.size() > kMaxCompare) http_fail(400, "compare: more than {} runs asked for", kMaxCompare);
      }
    }
    if (ids.empty()) http_fail(400, "compare: give ?ids=ID,ID,...");
    std::vector<int64_t> missing;
    for (int64_t id : ids)
      if (q("SELECT 1 FROM runs WHERE id = ?", {Value(id)}).rows.empty()) missing.push_back(id);
    if (!missing.empty()) {
      std::string shown;
      for (size_t i = 0; i < missing.size() && i < 10; i++) shown += (i ? ", " : "") + std::to_string(missing[i]);
      if (missing.size() > 10) shown += fmt::format(" and {} more", missing.size() - 10);
      http_fail(404, "no run with id {} in {}", shown, db_.path());
    }
    return ids;
  }

  // "run_id IN (?, ?, ...)" with its binds, for at most kMaxCompare ids (< SQLite's 32766 variables)
  static std::string in_ids(const std::vector<int64_t>& ids, std::vector<Value>& binds) {
    std::string s = "run_id IN (";
    for (size_t i = 0; i < ids.size(); i++) {
      s += i ? ", ?" : "?";
      binds.emplace_back(ids[i]);
    }
    return s + ")";
  }

  // the runs of a compare page in one answer: fields, params, metric names with their point
  // counts, layer metric names; in the order asked
  json compare(const std::vector<int64_t>& ids) {
    std::vector<Value> b;
    const std::string in = in_ids(ids, b);
    std::map<int64_t, json> by_id;
    std::string in_runs = in;
    in_runs.replace(0, 6, "r.id");
    json list = objects(q(
        "SELECT r.id, r.parent_id, r.name, r.status, r.started_at, r.finished_at, "
        "round((julianday(coalesce(r.finished_at, strftime('%Y-%m-%d %H:%M:%f','now'))) - julianday(r.started_at)) * 86400, 1) AS secs, "
        "r.device, r.seed FROM runs r WHERE " + in_runs, b));
    add_alive(list);
    for (auto& r : list)
      by_id[r["id"].get<int64_t>()] = {{"run", r}, {"params", json::object()}, {"metrics", json::array()}, {"layer_metrics", json::array()}};
    for (const auto& row : q("SELECT run_id, key, value FROM params WHERE " + in + " ORDER BY run_id, key", b).rows)
      by_id[std::get<int64_t>(row[0])]["params"][store::to_text(row[1])] = to_json(row[2]);
    for (const auto& row : q("SELECT run_id, name, count(*) FROM metrics WHERE " + in + " GROUP BY run_id, name ORDER BY run_id, name", b).rows)
      by_id[std::get<int64_t>(row[0])]["metrics"].push_back({{"name", to_json(row[1])}, {"points", to_json(row[2])}});
    for (const auto& row : q("SELECT DISTINCT run_id, name FROM layer_metrics WHERE " + in + " ORDER BY run_id, name", b).rows)
      by_id[std::get<int64_t>(row[0])]["layer_metrics"].push_back(to_json(row[1]));
    json out = json::array();
    for (int64_t id : ids) out.push_back(std::move(by_id[id]));
    return {{"runs", out}};
  }

  // the series of these metrics for every run that has them, as /api/runs/ID/metrics
  json compare_metrics(const std::vector<int64_t>& ids, const Params& p) {
    const std::vector<std::string> names = split(param(p, "name"), ',');
    if (names.empty()) http_fail(400, "compare/metrics: give ?name=A,B");
    // all the series counted first: past the budget, refused before any is read
    std::vector<Value> b;
    std::string in = in_ids(ids, b), in_names = " AND name IN (";
    for (size_t i = 0; i < names.size(); i++) in_names += i ? ", ?" : "?", b.emplace_back(names[i]);
    const int64_t n = std::get<int64_t>(q("SELECT count(*) FROM metrics WHERE " + in + in_names + ")", b).rows[0][0]);
    expect(size_t(n) * 2 * sizeof(double), fmt::format("the {} metric(s) of the {} run(s) have {} points", names.size(), ids.size(), n));
    json series = json::array();
    for (int64_t id : ids)
      for (auto& s : metric_series(id, names, p, false)) {
        s["run"] = id;
        series.push_back(std::move(s));
      }
    return {{"x", param(p, "x", "step")}, {"series", series}};
  }

  // a layer metric of every run that has it, each as /api/runs/ID/layer_metrics (last step)
  json compare_layer_metrics(const std::vector<int64_t>& ids, const Params& p) {
    if (param(p, "name").empty()) http_fail(400, "compare/layer_metrics: give ?name=NAME");
    json out = json::array();
    for (int64_t id : ids)
      if (!q("SELECT 1 FROM layer_metrics WHERE run_id = ? AND name = ? LIMIT 1", {Value(id), Value(param(p, "name"))}).rows.empty())
        out.push_back(layer_metrics(id, p));
    return {{"runs", out}};
  }

  json run(int64_t id) {
    const store::Query query = [this](const std::string& sql, const std::vector<Value>& b) { return q(sql, b); };
    store::RunSummary sum;
    try {
      sum = store::run_summary(query, id);  // the same view as `ltrun show`
    } catch (const Error&) {
      http_fail(404, "no run with id {} in {}", id, db_.path());
    }
    json runs = objects(sum.run);
    add_alive(runs);
    json r = runs[0];
    json args = json::array();
    try {
      args = json::parse(r["args_json"].get<std::string>());
    } catch (const std::exception&) {
    }
    r["args"] = args;
    r.erase("args_json");
    // the command that made the run, and the one that replays it (a child replays with its root)
    const std::string text = store::to_text(q("SELECT script_text FROM runs WHERE id = ?", {Value(id)}).rows[0][0]);
    std::string cmd = "ltrun";
    if (r["script_path"].is_string() && !r["script_path"].get<std::string>().empty())
      cmd += " " + shell_quote(r["script_path"].get<std::string>());
    else if (!text.empty())
      cmd += " -e " + shell_quote(text);
    for (const auto& a : args)
      if (a.is_string()) cmd += " " + shell_quote(a.get<std::string>());
    const int64_t root = store::root_run(query, id);
    if (r["seed"].is_number() && root == id) cmd = "ltrun --seed " + std::to_string(r["seed"].get<int64_t>()) + cmd.substr(5);
    r["command"] = root == id ? cmd : "";
    r["rerun"] = "ltrun --db " + shell_quote(db_.path()) + " rerun " + std::to_string(root);
    r["root"] = root;
    r["script_text"] = text;

    json params = json::object();
    for (const auto& row : sum.params.rows) params[store::to_text(row[0])] = to_json(row[1]);
    json metrics = objects(sum.metrics);
    json layers = objects(sum.layer_metrics);
    // evaluation: per bench and protocol, with its categories
    json evals = json::array();
    for (const auto& row : sum.eval.rows) {
      const std::string bench = store::to_text(row[0]), protocol = store::to_text(row[1]);
      if (evals.empty() || evals.back()["bench"] != bench || evals.back()["protocol"] != protocol)
        evals.push_back({{"bench", bench}, {"protocol", protocol}, {"items", 0}, {"correct", 0},
                         {"scored", 0}, {"categories", json::array()}});
      json& e = evals.back();
      const int64_t items = std::get<int64_t>(row[3]);
      const bool scored = !std::holds_alternative<std::monostate>(row[4]);
      e["items"] = e["items"].get<int64_t>() + items;
      if (scored) {
        e["correct"] = e["correct"].get<int64_t>() + std::get<int64_t>(row[4]);
        e["scored"] = e["scored"].get<int64_t>() + items;
      }
      e["categories"].push_back({{"category", to_json(row[2])}, {"items", items}, {"correct", to_json(row[4])},
                                 {"accuracy", to_json(row[5])}});
    }
    for (auto& e : evals)
      e["accuracy"] = e["scored"].get<int64_t>() > 0
                          ? json(double(e["correct"].get<int64_t>()) / double(e["scored"].get<int64_t>()))
                          : json(nullptr);

    json artifacts = objects(sum.artifacts);
    for (size_t k = 0; k < artifacts.size(); k++) {
      auto& a = artifacts[k];
      a["index"] = k;
      a["url"] = fmt::format("/api/runs/{}/artifacts/{}", id, k);
      // where it lies, not its sha256: that is checked when the file is asked for
      const auto row = artifact_row(id, a["path"].is_string() ? a["path"].get<std::string>() : "",
                                    a["sha256"].is_string() ? a["sha256"].get<std::string>() : "");
      const auto f = store::artifact_file(db_.path(), row, fmt::format("artifact {}", k));
      a["exists"] = f.problem != store::ArtifactFile::Problem::missing;
      if (f.problem == store::ArtifactFile::Problem::none) {
        a["bytes"] = f.size;
      } else if (a["exists"]) {
        a["refused"] = f.error;
      } else if (const auto carried = carried_size(id, row.sha256)) {
        a["exists"] = true;
        a["bytes"] = *carried;
      }
    }
    json children = objects(sum.children);
    return {{"run", r}, {"params", params}, {"metrics", metrics}, {"layer_metrics", layers},
            {"eval", evals}, {"artifacts", artifacts}, {"children", children}};
  }

  json metrics(int64_t id, const Params& p) {
    std::vector<std::string> names = split(param(p, "name"), ',');
    if (names.empty()) {
      for (const auto& row : q("SELECT DISTINCT name FROM metrics WHERE run_id = ? ORDER BY name", {Value(id)}).rows)
        names.push_back(store::to_text(row[0]));
    }
    return {{"run", id}, {"x", param(p, "x", "step")}, {"series", metric_series(id, names, p, true)}};
  }

  // the series `names` of run `id` on ?x=step|time, downsampled to ?points=; a name the run
  // lacks is a 404 when `required`, else left out
  json metric_series(int64_t id, const std::vector<std::string>& names, const Params& p, bool required) {
    const std::string x = param(p, "x", "step");
    if (x != "step" && x != "time") http_fail(400, "x '{}': expected step or time", x);
    const size_t points = size_t(int_param(p, "points", int64_t(kDefaultPoints), int64_t(kMaxPoints)));
    json series = json::array();
    for (const auto& name : names) {
      if (db_.cancelled()) http_fail(503, "the server is stopping");
      // counted first (an index range): a series past the budget is refused unread
      const int64_t n = std::get<int64_t>(
          q("SELECT count(*) FROM metrics WHERE run_id = ? AND name = ?", {Value(id), Value(name)}).rows[0][0]);
      expect(size_t(n) * 2 * sizeof(double), fmt::format("metric '{}' of run {} has {} points", name, id, n));
      std::vector<std::vector<double>> cols;
      const Meter m = meter();
      try {
        cols = db_.numeric_columns(
            x == "step" ? "SELECT step, value FROM metrics WHERE run_id = ? AND name = ? ORDER BY step, rowid"
                        : "SELECT t, value FROM metrics WHERE run_id = ? AND name = ? ORDER BY t, rowid",
            {Value(id), Value(name)}, 10000, SIZE_MAX, size_t(n), &m);
      } catch (const HttpError&) {
        throw;
      } catch (const Error&) {
        if (db_.cancelled()) http_fail(503, "the server is stopping");
        throw;
      }
      charge(kStatementBytes);
      if (cols.empty() || cols[0].empty()) {
        if (required) http_fail(404, "run {} has no metric '{}'", id, name);
        continue;
      }
      const auto keep = lttb(cols[0], cols[1], points);
      charge(keep.size() * 2 * sizeof(json));  // the points of the answer
      json xs = json::array(), ys = json::array();
      for (size_t i : keep) {
        xs.push_back(cols[0][i]);
        ys.push_back(std::isfinite(cols[1][i]) ? json(cols[1][i]) : json(nullptr));
      }
      series.push_back({{"name", name}, {"points", cols[0].size()}, {"downsampled", keep.size() < cols[0].size()},
                        {"x", std::move(xs)}, {"y", std::move(ys)}});
    }
    return series;
  }

  json layer_metrics(int64_t id, const Params& p) {
    const std::string name = param(p, "name");
    if (name.empty()) http_fail(400, "layer_metrics: give ?name=NAME");
    auto steps = q("SELECT DISTINCT step FROM layer_metrics WHERE run_id = ? AND name = ? ORDER BY step", {Value(id), Value(name)});
    if (steps.rows.empty()) http_fail(404, "run {} has no layer metric '{}'", id, name);
    Value step = steps.rows.back()[0];
    const std::string s = param(p, "step");
    if (!s.empty()) step = Value(parse_int("step", s));
    const int64_t n = std::get<int64_t>(q("SELECT count(*) FROM layer_metrics WHERE run_id = ? AND name = ? AND step IS ?",
                                          {Value(id), Value(name), step}).rows[0][0]);
    expect(size_t(n) * (row_estimate(3) + sizeof(json)),
           fmt::format("layer metric '{}' of run {} has {} values at step {}", name, id, n, store::to_text(step)));
    auto t = q("SELECT grp, layer, value FROM layer_metrics WHERE run_id = ? AND name = ? AND step IS ? ORDER BY rowid",
               {Value(id), Value(name), step});
    if (t.rows.empty()) http_fail(404, "run {}: layer metric '{}' has no rows at step {}", id, name, store::to_text(step));
    std::vector<std::string> groups;
    std::vector<int64_t> layers;
    for (const auto& row : t.rows) {
      const std::string g = store::to_text(row[0]);
      if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
      const int64_t l = std::get<int64_t>(row[1]);
      if (std::find(layers.begin(), layers.end(), l) == layers.end()) layers.push_back(l);
    }
    std::sort(layers.begin(), layers.end());
    json values = json::array();
    for (size_t g = 0; g < groups.size(); g++) values.push_back(json(std::vector<json>(layers.size(), nullptr)));
    for (const auto& row : t.rows) {  // a later row for the same cell wins
      const size_t g = size_t(std::find(groups.begin(), groups.end(), store::to_text(row[0])) - groups.begin());
      const size_t l = size_t(std::lower_bound(layers.begin(), layers.end(), std::get<int64_t>(row[1])) - layers.begin());
      values[g][l] = to_json(row[2]);
    }
    json st = json::array();
    for (const auto& row : steps.rows) st.push_back(to_json(row[0]));
    return {{"run", id}, {"name", name}, {"step", to_json(step)}, {"steps", st}, {"groups", groups},
            {"layers", layers}, {"values", values}};
  }

  json eval_items(int64_t id, const Params& p) {
    std::string where = "run_id = ?";
    std::vector<Value> binds{Value(id)};
    for (const char* k : {"bench", "protocol"}) {
      const std::string v = param(p, k);
      if (!v.empty()) where += fmt::format(" AND {} = ?", k), binds.emplace_back(v);
    }
    if (p.count("category")) where += " AND coalesce(category, '') = ?", binds.emplace_back(param(p, "category"));
    const std::string correct = param(p, "correct");
    if (!correct.empty()) {
      if (correct != "0" && correct != "1") http_fail(400, "correct '{}': expected 0 or 1", correct);
      where += " AND correct = ?", binds.emplace_back(int64_t(correct == "1"));
    }
    const auto total = q("SELECT count(*) FROM eval_items WHERE " + where, binds);
    const int64_t limit = int_param(p, "limit", 200, 5000), offset = int_param(p, "offset", 0, INT64_MAX);
    // The page: `limit` items, fewer when their texts pass kEvalPageBytes (the sizes come from
    // SQLite without reading the texts into this process); each prompt and output cut at
    // kEvalTextChars, said so per item.
    const bool text = db_.schema_version() >= 8;
    const std::string len = text ? "coalesce(length(CAST(prediction AS BLOB)), 0) + coalesce(length(CAST(answer AS BLOB)), 0) + "
                                   "min(coalesce(length(CAST(prompt AS BLOB)), 0), ?) + min(coalesce(length(CAST(output AS BLOB)), 0), ?)"
                                 : "coalesce(length(CAST(prediction AS BLOB)), 0) + coalesce(length(CAST(answer AS BLOB)), 0) + ? * 0 + ? * 0";
    std::vector<Value> size_binds{Value(kEvalTextChars * 4), Value(kEvalTextChars * 4)};
    size_binds.insert(size_binds.end(), binds.begin(), binds.end());
    size_binds.emplace_back(limit);
    size_binds.emplace_back(offset);
    int64_t take = 0;
    size_t bytes = 0;
    for (const auto& row : q("SELECT " + len + " FROM eval_items WHERE " + where + " ORDER BY rowid LIMIT ? OFFSET ?", size_binds).rows) {
      bytes += size_t(std::get<int64_t>(row[0]));
      if (take > 0 && bytes > kEvalPageBytes) break;
      take++;
    }
    const bool cut = take < limit && offset + take < std::get<int64_t>(total.rows[0][0]);
    binds.emplace_back(take);
    binds.emplace_back(offset);
    const std::string cols = text ? fmt::format("substr(prompt, 1, {0}) AS prompt, substr(output, 1, {0}) AS output, "
                                                "length(prompt) > {0} AS prompt_cut, length(output) > {0} AS output_cut",
                                                kEvalTextChars)
                                  : "NULL AS prompt, NULL AS output, 0 AS prompt_cut, 0 AS output_cut";
    json items = objects(q("SELECT bench, protocol, item_id, category, prediction, answer, correct, " + cols +
                           " FROM eval_items WHERE " + where + " ORDER BY rowid LIMIT ? OFFSET ?", binds));
    for (auto& i : items) {
      for (const char* k : {"prompt_cut", "output_cut"}) {
        if (i[k] == 1) i[std::string(k) == "prompt_cut" ? "prompt_truncated" : "output_truncated"] = true;
        i.erase(k);
      }
    }
    json out = {{"total", to_json(total.rows[0][0])}, {"offset", offset}, {"items", std::move(items)}};
    if (cut) {  // fewer than asked: the size cap, not the end
      out["truncated"] = true;
      out["next_offset"] = offset + take;
      out["note"] = fmt::format("{} of the {} items asked for: an answer holds at most {} MB of item texts; ask for the "
                                "rest from offset={}", take, limit, kEvalPageBytes >> 20, offset + take);
    }
    return out;
  }

  // only a file registered in `artifacts` is ever read: the path comes from the store, never
  // from the request; and only while it lies under the run's folders and still has the sha256
  // recorded when it was registered (runtime/store/artifact.h)
  // the folder the run started in; "" before db/migrations/0004
  std::string run_workdir(int64_t id) {
    if (db_.schema_version() < 4) return "";
    const auto t = q("SELECT workdir FROM runs WHERE id = ?", {Value(id)});
    return t.rows.empty() ? "" : store::to_text(t.rows[0][0]);
  }

  // the artifacts row of run `id` as artifact_file() takes it: only a run made on this machine
  // may name files on it (runs.machine_id, db/migrations/0002; a store without it: none)
  store::ArtifactRow artifact_row(int64_t id, const std::string& path, const std::string& sha) {
    store::ArtifactRow row{path, sha, run_workdir(id), false};
    if (db_.schema_version() >= 2) {
      const auto t = q("SELECT machine_id, host FROM runs WHERE id = ?", {Value(id)});
      row.local = !t.rows.empty() && store::made_here(store::to_text(t.rows[0][0]), store::to_text(t.rows[0][1]));
    }
    return row;
  }

  // the size of a file carried into the store by an import (artifact_files, db/migrations/0006)
  std::optional<int64_t> carried_size(int64_t id, const std::string& sha) {
    if (db_.schema_version() < 6) return std::nullopt;
    const auto t = q("SELECT size FROM artifact_files WHERE run_id = ? AND sha256 = ? LIMIT 1", {Value(id), Value(sha)});
    if (t.rows.empty() || !std::holds_alternative<int64_t>(t.rows[0][0])) return std::nullopt;
    return std::get<int64_t>(t.rows[0][0]);
  }

  Response artifact(int64_t id, int64_t k) {
    auto t = q("SELECT path, sha256 FROM artifacts WHERE run_id = ? ORDER BY rowid LIMIT 1 OFFSET ?", {Value(id), Value(k)});
    if (t.rows.empty()) http_fail(404, "run {} has no artifact {}", id, k);
    const std::string path = store::to_text(t.rows[0][0]), sha = store::to_text(t.rows[0][1]);
    const std::string what = fmt::format("artifact {} of run {}", k, id);
    if (sha.empty()) http_fail(409, "{}: no sha256 was recorded for {}; not served", what, path);
    const auto f = store::artifact_file(db_.path(), artifact_row(id, path, sha), what);
    using P = store::ArtifactFile::Problem;
    std::string bytes;
    if (f.problem == P::missing) {
      // a file carried in by an import, kept in the store itself
      const auto size = carried_size(id, sha);
      if (!size) http_fail(404, "{}: {} is not there any more", what, path);
      if (uint64_t(*size) > kMaxArtifactBytes) http_fail(413, "{}: {} is too large to serve", what, path);
      const auto data = q("SELECT data FROM artifact_files WHERE run_id = ? AND sha256 = ? LIMIT 1", {Value(id), Value(sha)});
      if (!data.rows.empty()) bytes = store::to_text(data.rows[0][0]);
    } else {
      if (f.problem != P::none) http_fail(403, "{}; not served", f.error);
      if (f.size > kMaxArtifactBytes) http_fail(413, "{}: {} is too large to serve", what, path);
      bytes = f.read_all();
    }
    // (the hash the bytes have now is not shown: for a file that is not what was registered it
    // would tell something of a file that is not served)
    if (sha256_hex(bytes) != sha)
      http_fail(409, "{}: {} has changed since the run registered it (sha256 {} then, other bytes now); not served",
                what, path, sha);
    Response r;
    r.body = std::move(bytes);
    const std::string ext = std::filesystem::path(path).extension().string();
    static const std::map<std::string, std::string> types = {
        {".svg", "image/svg+xml"}, {".png", "image/png"}, {".jpg", "image/jpeg"}, {".json", "application/json"},
        {".csv", "text/csv; charset=utf-8"}, {".txt", "text/plain; charset=utf-8"}, {".md", "text/plain; charset=utf-8"},
        {".lua", "text/plain; charset=utf-8"}, {".log", "text/plain; charset=utf-8"}, {".tsv", "text/plain; charset=utf-8"}};
    auto it = types.find(ext);
    r.content_type = it == types.end() ? "application/octet-stream" : it->second;
    // an SVG could carry script: artifacts never run any, and are never sniffed as HTML
    r.headers = {{"Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox"},
                 {"X-Content-Type-Options", "nosniff"},
                 {"Content-Disposition", "inline; filename=\"" + header_safe(std::filesystem::path(path).filename().string()) + "\""}};
    return r;
  }
};

}  // namespace

bool heavy_route(const std::string& path) {
  const auto parts = split(path, '/');  // "api", ...
  if (parts.size() < 2 || parts[0] != "api") return false;
  const std::string& what = parts[1];
  return what == "sql" || what == "table" || what == "compare" || (what == "runs" && parts.size() >= 4);
}

bool MemoryBudget::take(size_t n) {
  size_t used = used_.load();
  do {
    if (n > cap_ - used) return false;
  } while (!used_.compare_exchange_weak(used, used + n));
  for (size_t peak = peak_.load(); used + n > peak && !peak_.compare_exchange_weak(peak, used + n);) {}
  return true;
}

void MemoryBudget::give(size_t n) { used_ -= n; }

Api::Api(std::shared_ptr<Reader> reader, int sql_timeout_ms, size_t request_bytes, std::shared_ptr<MemoryBudget> server)
    : reader_(std::move(reader)), sql_timeout_ms_(sql_timeout_ms), request_bytes_(request_bytes),
      server_(server ? std::move(server) : std::make_shared<MemoryBudget>(kServerBytes)) {}

Response Api::get(const std::string& path, const Params& params) const {
  try {
    Handler h(*reader_, sql_timeout_ms_, request_bytes_, server_);
    return h.finish(h.route(path, params));
  } catch (const HttpError& e) {
    Response r = json_response({{"error", e.what()}}, e.status);
    if (e.status == 503) r.headers = {{"Retry-After", "2"}};
    return r;
  } catch (const Refused& e) {
    return json_response({{"error", e.what()}}, 403);
  } catch (const std::exception& e) {
    return json_response({{"error", e.what()}}, 500);
  }
}

}  // namespace ltrun::serve
