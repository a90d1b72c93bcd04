// runtime/store/share.cpp: see share.h.
#include "runtime/store/share.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "runtime/core/env.h"
#include "runtime/core/error.h"
#include "runtime/core/fs.h"
#include "runtime/core/sha256.h"
#include "runtime/store/artifact.h"
#include "runtime/store/capture.h"
#include "runtime/store/embedded.h"
#include "runtime/store/store.h"

namespace ltrun::store {
namespace {

namespace fs = std::filesystem;

int latest_schema() {
  int latest = 0;
  for (const auto& f : embedded_sql()) {
    const std::string p = f.path;
    if (p.rfind("db/migrations/", 0) == 0) latest = std::max(latest, std::stoi(p.substr(14, 4)));
  }
  return latest;
}

// A raw connection that closes itself; errors name the file.
struct Conn {
  sqlite3* db = nullptr;
  std::string file;
  Conn(const std::string& f, bool write) : file(f) {
    if (write) {
      if (sqlite3_open_v2(f.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK)
        fail("{}: cannot open: {}", f, db ? sqlite3_errmsg(db) : "out of memory");
      sqlite3_busy_timeout(db, 10000);
    } else {
      db = open_readonly_connection(f);
    }
  }
  ~Conn() { sqlite3_close_v2(db); }
  // rows of text columns (NULL → nullopt); every value bound, never spliced into the SQL
  std::vector<std::vector<std::optional<std::string>>> rows(const std::string& sql,
                                                            const std::vector<Value>& binds = {}) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
      fail("{}: cannot read it as an ltrun export ({}): {}", file, sql, sqlite3_errmsg(db));
    for (size_t i = 0; i < binds.size(); i++) {
      const int k = int(i + 1);
      if (const auto* n = std::get_if<int64_t>(&binds[i])) sqlite3_bind_int64(st, k, *n);
      else if (const auto* d = std::get_if<double>(&binds[i])) sqlite3_bind_double(st, k, *d);
      else if (const auto* t = std::get_if<std::string>(&binds[i]))
        sqlite3_bind_text(st, k, t->data(), int(t->size()), SQLITE_TRANSIENT);
      else sqlite3_bind_null(st, k);
    }
    std::vector<std::vector<std::optional<std::string>>> out;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      std::vector<std::optional<std::string>> row;
      for (int c = 0; c < sqlite3_column_count(st); c++) {
        const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st, c));
        row.push_back(p ? std::optional<std::string>(std::string(p, size_t(sqlite3_column_bytes(st, c))))
                        : std::nullopt);
      }
      out.push_back(std::move(row));
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) fail("{}: damaged, cannot be read ({}): {}", file, sql, sqlite3_errmsg(db));
    return out;
  }
  void exec(const std::string& sql) {
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK)
      fail("{}: `{}` failed: {}", file, sql, sqlite3_errmsg(db));
  }
  bool has_table(const std::string& t) {
    return !rows("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", {Value(t)}).empty();
  }
};

// A stored value for a message: quoted, at most 80 bytes, or NULL (the CLI escapes control
// characters before it reaches a terminal).
std::string excerpt(const std::optional<std::string>& v) {
  if (!v) return "NULL";
  return "'" + (v->size() > 80 ? v->substr(0, 80) + "..." : *v) + "'";
}

bool is_sha256(const std::optional<std::string>& s) {
  return s && s->size() == 64 && s->find_first_not_of("0123456789abcdef") == std::string::npos;
}

// The fields import and rerun read, each of the type ltrun writes, so that a malformed one is
// named here (file, run, field, what was expected) and not by a JSON or SQL library later.
void check_fields(Conn& c, const std::string& file) {
  std::map<int64_t, std::optional<int64_t>> parents;
  for (const auto& row : c.rows("SELECT typeof(id), id, typeof(parent_id), parent_id, typeof(seed), seed, "
                                "typeof(args_json), args_json, typeof(script_text), typeof(uuid), uuid FROM runs "
                                "ORDER BY id")) {
    const std::string id = row[1].value_or("?");
    auto bad = [&](const char* field, const std::optional<std::string>& v, const char* want) {
      fail("import: {}: run {}: {} is {}; expected {}: not as ltrun writes it; nothing imported", file, id, field,
           excerpt(v), want);
    };
    if (row[0] != "integer") bad("id", row[1], "an integer");
    if (row[2] != "null" && row[2] != "integer") bad("parent_id", row[3], "a run id (an integer) or NULL");
    if (row[4] != "null" && row[4] != "integer") bad("seed", row[5], "an integer (the run's seed) or NULL");
    bool args_ok = row[6] == "text";
    if (args_ok) {
      try {
        const auto j = nlohmann::json::parse(*row[7]);
        args_ok = j.is_array();
        for (const auto& a : j) args_ok = args_ok && a.is_string();
      } catch (const std::exception&) {
        args_ok = false;
      }
    }
    if (!args_ok) bad("args_json", row[7], "a JSON array of strings (the script's arguments, e.g. [\"--lr=0.1\"])");
    if (row[8] != "null" && row[8] != "text") bad("script_text", std::nullopt, "the script's text or NULL");
    if (row[9] != "text" || row[10]->empty()) bad("uuid", row[10], "the run's uuid (text)");
    parents[std::stoll(id)] = row[2] == "integer" ? std::optional<int64_t>(std::stoll(*row[3])) : std::nullopt;
  }
  const auto cycle = find_parent_cycle(parents);
  if (!cycle.empty())
    fail("import: {}: {}: the runs of an export form a tree, and this file's do not (edited by hand?); nothing "
         "imported", file, parent_cycle_text(cycle));
  if (!c.has_table("run_sources")) return;
  for (const auto& row : c.rows("SELECT run_id, seq, typeof(name), name, kind, sha256 FROM run_sources WHERE "
                                "typeof(name) <> 'text' OR name = '' OR kind IS NOT 'script' AND kind IS NOT 'module' "
                                "OR typeof(sha256) <> 'text' OR length(sha256) <> 64 OR sha256 GLOB '*[^0-9a-f]*' "
                                "LIMIT 1"))
    fail("import: {}: run {}: source #{} is malformed (name {}, kind {}, sha256 {}); expected a name, kind "
         "'script' or 'module' and a sha256 (64 hex digits); nothing imported", file, row[0].value_or("?"),
         row[1].value_or("?"), excerpt(row[3]), excerpt(row[4]), excerpt(row[5]));
  for (const auto& row : c.rows("SELECT run_id, kind, path, root, rel, sha256 FROM run_inputs ORDER BY rowid")) {
    const std::string what = fmt::format("import: {}: run {}: input {}", file, row[0].value_or("?"), excerpt(row[2]));
    LT_CHECK(row[1] == "model" || row[1] == "data", "{}: kind is {}; expected 'model' or 'data'; nothing imported",
             what, excerpt(row[1]));
    LT_CHECK(row[2] && !row[2]->empty() && (*row[2])[0] == '/' && row[2]->find('\0') == std::string::npos,
             "{}: its path is not an absolute path (as ltrun records where an input was read); nothing imported", what);
    LT_CHECK(is_sha256(row[5]), "{}: sha256 is {}; expected 64 hex digits; nothing imported", what, excerpt(row[5]));
    LT_CHECK(!row[3] || ((row[3] == "models" || row[3] == "data" || row[3] == "workdir") && row[4] &&
                         is_clean_relative_path(*row[4])),
             "{}: root {} with rel {}; expected root 'models', 'data' or 'workdir' and a path below it (no '..', "
             "not absolute), or neither; nothing imported", what, excerpt(row[3]), excerpt(row[4]));
  }
}

void remove_db(const std::string& f) {
  for (const char* s : {"", "-wal", "-shm", "-journal"}) std::remove((f + s).c_str());
}

// mkdir -p for the few levels of the input folder; the error names the folder
void make_folder(const std::string& dir) {
  for (size_t at = 1; at != std::string::npos;) {
    at = dir.find('/', at + 1);
    const std::string part = dir.substr(0, at);
    if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST)
      fail("import: cannot make the store's input folder {}: {}", part, std::strerror(errno));
  }
}

// `data` (whose sha256 was checked) as the read-only file `dest`: written under a temporary
// name beside it and renamed, so the name always matches the bytes
void write_copy(const std::string& dest, const std::string& data) {
  make_folder(dir_name(dest));
  std::string tmp = dir_name(dest) + "/.incoming-XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) fail("import: cannot write into {}: {}", dir_name(dest), std::strerror(errno));
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t w = ::write(fd, data.data() + done, data.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      const int e = errno;
      ::close(fd);
      std::remove(tmp.c_str());
      fail("import: cannot write {}: {}", dest, std::strerror(e));
    }
    done += size_t(w);
  }
  ::fchmod(fd, 0444);  // restored inputs are data to read, never to change
  ::close(fd);
  if (std::rename(tmp.c_str(), dest.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    fail("import: cannot rename {} to {}: {}", tmp, dest, std::strerror(e));
  }
}

// One file of a model folder as its manifest names it (folder_manifest, runtime/store/capture.h).
struct ManifestEntry {
  std::string name, sha;
  int64_t size = 0;
};
// A carried model folder's manifest: each name a plain file name (no '/', not hidden, no
// control character), each sha256 64 hex digits; an error names `what` and the line.
std::vector<ManifestEntry> parse_manifest(const std::string& text, const std::string& what) {
  std::vector<ManifestEntry> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    const std::string line = text.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    at = nl == std::string::npos ? text.size() : nl + 1;
    const size_t t1 = line.find('\t'), t2 = t1 == std::string::npos ? t1 : line.find('\t', t1 + 1);
    ManifestEntry e;
    if (t2 != std::string::npos) {
      e.name = line.substr(0, t1);
      e.sha = line.substr(t2 + 1);
      const std::string size = line.substr(t1 + 1, t2 - t1 - 1);
      if (!size.empty() && size.size() < 16 && size.find_first_not_of("0123456789") == std::string::npos)
        e.size = std::stoll(size);
      else e.sha.clear();
    }
    const bool name_ok = !e.name.empty() && e.name.size() < 256 && e.name[0] != '.' &&
                         std::none_of(e.name.begin(), e.name.end(), [](char ch) { return ch == '/' || (unsigned char)ch < 32; });
    LT_CHECK(name_ok && is_sha256(e.sha), "{}: the manifest line '{}' is not NAME<tab>SIZE<tab>SHA256 of a plain file "
             "name; nothing imported", what, line.size() > 80 ? line.substr(0, 80) + "..." : line);
    out.push_back(e);
  }
  LT_CHECK(!out.empty(), "{}: an empty manifest; nothing imported", what);
  return out;
}

// Puts the bytes of the data files and model folders the runs in `c` read into its input_files
// table (a folder as its manifest and each file), within o.max_input_bytes; an input that
// cannot be carried stops the export (a bundle that claims to carry its inputs and lacks one
// would not replay on its own).
void carry_inputs(Conn& c, const std::string& db, int64_t run, const ExportOptions& o, ExportResult& r) {
  c.exec("CREATE TABLE input_files (sha256 TEXT PRIMARY KEY, size INTEGER NOT NULL, data BLOB NOT NULL)");
  struct In {
    std::string kind, path, sha, machine, host;
    int64_t size = 0;
  };
  std::vector<In> todo;
  std::set<std::string> seen;
  for (const auto& row : c.rows("SELECT i.kind, i.path, i.sha256, coalesce(i.size, 0), coalesce(r.machine_id, ''), "
                                "coalesce(r.host, '') FROM run_inputs i JOIN runs r ON r.id = i.run_id WHERE "
                                "i.made = 0 ORDER BY i.rowid")) {
    if (!seen.insert(row[2].value_or("")).second) continue;
    todo.push_back({row[0].value_or(""), row[1].value_or(""), row[2].value_or(""), row[4].value_or(""),
                    row[5].value_or(""), std::stoll(row[3].value_or("0"))});
  }
  int64_t total = 0;
  for (const auto& in : todo) total += in.size;
  if (total > o.max_input_bytes) {
    auto big = todo;
    std::sort(big.begin(), big.end(), [](const In& a, const In& b) { return a.size > b.size; });
    std::string names;
    for (size_t i = 0; i < big.size() && i < 3; i++)
      names += fmt::format("{}{} {} ({})", i ? ", " : "", big[i].kind, big[i].path, human_bytes(double(big[i].size)));
    fail("export --with-inputs: the {} inputs of run {} hold {} ({} bytes), past the cap of {} (--max-input-mb {}); "
         "the biggest: {}; raise --max-input-mb or export without --with-inputs",
         todo.size(), run, human_bytes(double(total)), total, human_bytes(double(o.max_input_bytes)),
         o.max_input_bytes >> 20, names);
  }
  sqlite3_stmt* ins = nullptr;
  sqlite3_prepare_v2(c.db, "INSERT OR IGNORE INTO input_files(sha256, size, data) VALUES (?,?,?)", -1, &ins, nullptr);
  struct Finalize {
    sqlite3_stmt* s;
    ~Finalize() { sqlite3_finalize(s); }
  } finalize{ins};
  auto put = [&](const std::string& sha, const std::string& data, const std::string& path) {
    sqlite3_bind_text(ins, 1, sha.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(ins, 2, int64_t(data.size()));
    sqlite3_bind_blob64(ins, 3, data.data(), data.size(), SQLITE_TRANSIENT);
    const int rc = sqlite3_step(ins);
    sqlite3_reset(ins);
    if (rc != SQLITE_DONE) fail("export: storing input {}: {}", path, sqlite3_errmsg(c.db));
  };
  // a file's bytes, checked against its recorded hash, within the cap
  auto bytes = [&](const std::string& from, const std::string& sha, const std::string& what) {
    std::string data;
    try {
      data = read_file(from, uint64_t(o.max_input_bytes));
    } catch (const Error& e) {
      fail("export --with-inputs: {} of run {} cannot be carried: {}; export without --with-inputs", what, run,
           e.what());
    }
    const std::string h = sha256_hex(data);
    if (h != sha)
      fail("export --with-inputs: {} of run {} changed since the run read it (recorded sha256 {}, {} hashes to {}); "
           "export without --with-inputs", what, run, sha, from, h);
    r.input_bytes += int64_t(data.size());
    if (r.input_bytes > o.max_input_bytes)
      fail("export --with-inputs: {} grew past the cap of {} bytes (--max-input-mb)", what, o.max_input_bytes);
    return data;
  };
  for (const auto& in : todo) {
    // the store's restored copy by content; else the recorded path, only for a run made on this
    // machine: a run imported from elsewhere names paths of another machine (or whatever its
    // bundle said: /etc/shadow), and no file of this one goes into the bundle for it
    const std::string copy = input_copy_path(db, in.kind, in.sha);
    const std::string from = !copy.empty() && fs::exists(copy) ? copy
                             : made_here(in.machine, in.host) ? in.path
                                                              : "";
    const std::string what = fmt::format("{} {}", in.kind, in.path);
    if (from.empty())
      fail("export --with-inputs: {} of run {} is not in {} and the run was made on another machine; export "
           "without --with-inputs", what, run, input_store_dir(db));
    if (in.kind == "data") {
      put(in.sha, bytes(from, in.sha, what), in.path);
      r.input_files++;
      continue;
    }
    LT_CHECK(fs::is_directory(from), "export --with-inputs: {} of run {} is not a folder here ({})", what, run, from);
    const std::string manifest = folder_manifest(from, nullptr);
    if (sha256_hex(manifest) != in.sha)
      fail("export --with-inputs: {} of run {} changed since the run read it (its files hash to {}, recorded {}); "
           "export without --with-inputs", what, run, sha256_hex(manifest), in.sha);
    for (const auto& e : parse_manifest(manifest, what)) {
      put(e.sha, bytes(from + "/" + e.name, e.sha, what + "/" + e.name), from + "/" + e.name);
      r.input_files++;
    }
    put(in.sha, manifest, in.path);
  }
}

// A carried model folder into `dest` (absent or damaged): written into a fresh folder beside it,
// every file checked, then renamed into place, so `dest` is complete or absent.
void restore_folder(Conn& c, const std::string& file, const std::string& dest, const std::string& manifest) {
  const auto entries = parse_manifest(manifest, "import: " + file + ": model " + sha256_hex(manifest));
  make_folder(dir_name(dest));
  std::string tmp = dir_name(dest) + "/.incoming-XXXXXX";
  LT_CHECK(::mkdtemp(tmp.data()), "import: cannot make a folder in {}: {}", dir_name(dest), std::strerror(errno));
  try {
    for (const auto& e : entries) {
      const auto rows = c.rows("SELECT data FROM input_files WHERE sha256 = ?", {Value(e.sha)});
      LT_CHECK(!rows.empty(), "import: {}: file {} of a carried model folder is missing", file, e.name);
      const std::string data = rows[0][0].value_or("");
      LT_CHECK(sha256_hex(data) == e.sha && int64_t(data.size()) == e.size,
               "import: {}: file {} of a carried model folder does not match its manifest", file, e.name);
      write_copy(tmp + "/" + e.name, data);
    }
    ltrun::fs::remove_tree(dest);  // a damaged copy (checked by the caller)
    if (std::rename(tmp.c_str(), dest.c_str()) != 0)
      fail("import: cannot rename {} to {}: {}", tmp, dest, std::strerror(errno));
  } catch (...) {
    ltrun::fs::remove_tree(tmp);
    throw;
  }
}

}  // namespace

std::string input_store_dir(const std::string& db) { return absolute_path(db) + ".inputs"; }

std::string input_copy_path(const std::string& db, const std::string& kind, const std::string& sha256) {
  if (!is_sha256(sha256)) return "";
  if (kind == "model") return input_store_dir(db) + "/models/" + sha256;
  return input_store_dir(db) + "/sha256/" + sha256.substr(0, 2) + "/" + sha256;
}

ExportResult export_run(const std::string& db, int64_t run, const std::string& out, const ExportOptions& o) {
  LT_CHECK(!out.empty(), "export: no output file (-o FILE.ltrun)");
  LT_CHECK(!file_exists(out), "export: {} exists; an export never overwrites a file", out);
  std::set<int64_t> ids{run};
  {
    auto st = Store::open_readonly(db);
    const Table t = st->query("SELECT status FROM runs WHERE id = ?", {Value(run)});
    LT_CHECK(!t.rows.empty(), "export: {}: no run with id {}", db, run);
    LT_CHECK(to_text(t.rows[0][0]) != "running",
             "export: run {} is still running (or its process died and no ltrun has opened {} since): export it when "
             "it has ended", run, db);
    std::vector<int64_t> todo{run};
    while (o.children && !todo.empty()) {
      const int64_t id = todo.back();
      todo.pop_back();
      for (const auto& row : st->query("SELECT id FROM runs WHERE parent_id = ?", {Value(id)}).rows)
        if (ids.insert(std::get<int64_t>(row[0])).second) todo.push_back(std::get<int64_t>(row[0]));
    }
  }
  const std::string tmp = out + ".partial";
  LT_CHECK(!file_exists(tmp), "export: {} exists (left by an export that stopped?): remove it first", tmp);
  ExportResult r;
  try {
    MergeOptions mo;
    mo.only_runs = ids;
    mo.include_running = true;  // a child left running by a crash is exported as it is
    const auto rep = merge_stores(tmp, {db}, mo);
    r.runs = rep.at(0).added;
    r.notes = rep.at(0).notes;
    Conn c(tmp, true);
    if (o.artifacts) {
      sqlite3_stmt* ins = nullptr;
      sqlite3_prepare_v2(c.db, "INSERT INTO artifact_files(run_id, path, sha256, size, data) VALUES (?,?,?,?,?)", -1,
                         &ins, nullptr);
      // each file through artifact_file (runtime/store/artifact.h): the store's own copy by
      // content, else the recorded path only for a run made here and only under its folders, so
      // a run imported from elsewhere (an artifact row naming /etc/shadow, workdir '/') never
      // carries a file of this machine into the bundle
      for (const auto& row : c.rows("SELECT a.run_id, a.path, coalesce(a.sha256, ''), coalesce(r.workdir, ''), "
                                    "coalesce(r.machine_id, ''), coalesce(r.host, '') FROM artifacts a "
                                    "JOIN runs r ON r.id = a.run_id ORDER BY a.rowid")) {
        const std::string path = row[1].value_or(""), want = row[2].value_or("");
        const ArtifactFile f = artifact_file(
            db, ArtifactRow{path, want, row[3].value_or(""), made_here(row[4].value_or(""), row[5].value_or(""))},
            "export: artifact " + path);
        if (f.problem != ArtifactFile::Problem::none) {
          r.notes.push_back(fmt::format("artifact {} is not readable here ({}): not included", path, f.error));
          continue;
        }
        if (r.artifact_bytes + int64_t(f.size) > o.max_artifact_bytes) {
          r.notes.push_back(fmt::format("artifact {} ({} bytes) is past the limit of {} bytes: not included", path,
                                        f.size, o.max_artifact_bytes));
          continue;
        }
        const std::string data = f.read_all();
        if (sha256_hex(data) != want) {
          r.notes.push_back(fmt::format("artifact {} changed since the run registered it: not included", path));
          continue;
        }
        sqlite3_bind_int64(ins, 1, std::stoll(row[0].value_or("0")));
        sqlite3_bind_text(ins, 2, path.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(ins, 3, want.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(ins, 4, int64_t(data.size()));
        sqlite3_bind_blob64(ins, 5, data.data(), data.size(), SQLITE_TRANSIENT);
        const int rc = sqlite3_step(ins);
        sqlite3_reset(ins);
        if (rc != SQLITE_DONE) {
          sqlite3_finalize(ins);
          fail("export: storing artifact {} in {}: {}", path, tmp, sqlite3_errmsg(c.db));
        }
        r.artifact_files++;
        r.artifact_bytes += int64_t(data.size());
      }
      sqlite3_finalize(ins);
    }
    if (o.with_inputs) carry_inputs(c, db, run, o, r);
    r.sources = std::stoll(c.rows("SELECT count(*) FROM sources")[0][0].value_or("0"));
    r.inputs = std::stoll(c.rows("SELECT count(*) FROM run_inputs")[0][0].value_or("0"));
    c.exec("PRAGMA journal_mode=DELETE");  // one file, nothing beside it
  } catch (...) {
    remove_db(tmp);
    throw;
  }
  LT_CHECK(std::rename(tmp.c_str(), out.c_str()) == 0, "export: cannot rename {} to {}: {}", tmp, out,
           std::strerror(errno));
  struct stat s;
  if (::stat(out.c_str(), &s) == 0) r.bytes = int64_t(s.st_size);
  return r;
}

void check_export(const std::string& file, int64_t max_input_bytes) {
  LT_CHECK(file_exists(file), "import: {} does not exist", file);
  check_regular_file(file, ~0ull);
  unsigned char h[100] = {};
  size_t got = 0;
  {
    std::ifstream f(file, std::ios::binary);
    f.read(reinterpret_cast<char*>(h), sizeof h);
    got = size_t(f.gcount());
  }
  struct stat s;
  LT_CHECK(::stat(file.c_str(), &s) == 0, "import: {}: cannot stat: {}", file, std::strerror(errno));
  LT_CHECK(got > 0, "import: {}: an empty file, not an ltrun export", file);
  LT_CHECK(got == sizeof h && std::memcmp(h, "SQLite format 3", 16) == 0,
           "import: {}: not an ltrun export (not a SQLite database{})", file,
           got < sizeof h ? ", and shorter than its header: truncated?" : "");
  const int64_t page = h[16] == 0 && h[17] == 1 ? 65536 : (int64_t(h[16]) << 8) | h[17];
  const auto be32 = [&](int o) { return (int64_t(h[o]) << 24) | (int64_t(h[o + 1]) << 16) | (int64_t(h[o + 2]) << 8) | h[o + 3]; };
  const int64_t pages = be32(28);
  LT_CHECK(page >= 512 && (page & (page - 1)) == 0, "import: {}: damaged header (page size {})", file, page);
  if (pages > 0 && be32(24) == be32(92))  // the header's page count is valid (SQLite 3.7.0 on)
    LT_CHECK(int64_t(s.st_size) >= page * pages,
             "import: {}: truncated: its header says {} bytes ({} pages of {}), the file has {}", file, page * pages,
             pages, page, int64_t(s.st_size));
  LT_CHECK(int64_t(s.st_size) % page == 0, "import: {}: truncated: {} bytes is not a whole number of {}-byte pages",
           file, int64_t(s.st_size), page);
  Conn c(file, false);
  const auto check = c.rows("PRAGMA quick_check");
  LT_CHECK(!check.empty() && check[0][0].value_or("") == "ok", "import: {}: damaged: {}", file,
           check.empty() ? std::string("no answer from SQLite's quick_check") : check[0][0].value_or("?"));
  const int64_t v = std::stoll(c.rows("PRAGMA user_version")[0][0].value_or("0"));
  LT_CHECK(v > 0, "import: {}: a SQLite database but not an ltrun export (user_version 0)", file);
  LT_CHECK(v <= latest_schema(), "import: {}: schema version {} is newer than this ltrun knows ({}); update ltrun",
           file, v, latest_schema());
  LT_CHECK(c.has_table("runs"), "import: {}: has no runs table: not an ltrun export; nothing imported", file);
  LT_CHECK(v >= 3, "import: {}: schema version {} has no run uuids (db/migrations/0003): not an export (an export "
           "is always written with the schema of the ltrun that wrote it)", file, v);
  check_fields(c, file);
  if (c.has_table("input_files")) {
    int64_t total = 0;
    for (const auto& row : c.rows("SELECT sha256, size, length(data), typeof(data) FROM input_files")) {
      LT_CHECK(is_sha256(row[0]) && row[1] == row[2] && (row[3] == "blob" || row[3] == "text"),
               "import: {}: a carried input file is malformed (sha256 {}, size {}, {} bytes); nothing imported",
               file, excerpt(row[0]), excerpt(row[1]), row[2].value_or("?"));
      total += std::stoll(*row[2]);
    }
    LT_CHECK(total <= max_input_bytes,
             "import: {}: carries {} of input files ({} bytes), past the cap of {} bytes; nothing imported", file,
             human_bytes(double(total)), total, max_input_bytes);
    // a carried model folder: its manifest names plain files, each carried with its size
    for (const auto& row : c.rows("SELECT DISTINCT f.sha256 FROM input_files f JOIN run_inputs i ON i.sha256 = "
                                  "f.sha256 AND i.kind = 'model'")) {
      const std::string what = fmt::format("import: {}: carried model {}", file, *row[0]);
      for (const auto& e : parse_manifest(c.rows("SELECT data FROM input_files WHERE sha256 = ?",
                                                 {Value(*row[0])})[0][0].value_or(""), what))
        LT_CHECK(!c.rows("SELECT 1 FROM input_files WHERE sha256 = ? AND size = ?", {Value(e.sha), Value(e.size)})
                      .empty(), "{}: its file {} is not carried; nothing imported", what, e.name);
    }
    for (const auto& row : c.rows("SELECT sha256 FROM input_files")) {  // one file in memory at a time
      const std::string hash = sha256_hex(c.rows("SELECT data FROM input_files WHERE sha256 = ?",
                                                 {Value(*row[0])})[0][0].value_or(""));
      LT_CHECK(hash == *row[0], "import: {}: a carried input file does not match its hash (stored sha256 {}, its "
               "bytes hash to {}); nothing imported", file, *row[0], hash);
    }
  }
  for (const auto& row : c.rows("SELECT id, script_sha256, script_text FROM runs WHERE script_text IS NOT NULL")) {
    const std::string hash = sha256_hex(row[2].value_or(""));
    LT_CHECK(hash == row[1].value_or(""),
             "import: {}: run {}'s script does not match its script_sha256 (stored {}, the text hashes to {}): the "
             "file was changed after it was written; nothing imported", file, row[0].value_or("?"),
             excerpt(row[1]), hash);
  }
  if (c.has_table("sources")) {
    for (const auto& row : c.rows("SELECT sha256, text FROM sources")) {
      const std::string hash = sha256_hex(row[1].value_or(""));
      if (hash == row[0].value_or("")) continue;
      const auto names = c.rows("SELECT DISTINCT name FROM run_sources WHERE sha256 = ? ORDER BY name LIMIT 1",
                                {Value(row[0].value_or(""))});
      fail("import: {}: source {} does not match its hash (stored sha256 {}, its text hashes to {}): the file was "
           "changed after it was written; nothing imported", file,
           names.empty() ? std::string("(named by no run)") : names[0][0].value_or("?"), excerpt(row[0]), hash);
    }
    for (const auto& row : c.rows("SELECT path, sha256, data FROM artifact_files")) {
      const std::string hash = sha256_hex(row[2].value_or(""));
      LT_CHECK(hash == row[1].value_or(""), "import: {}: the artifact file {} carried in it does not match its hash "
               "(stored sha256 {}, its bytes hash to {}); nothing imported", file, row[0].value_or("?"),
               excerpt(row[1]), hash);
    }
    for (const auto& row : c.rows("SELECT r.name, r.sha256 FROM run_sources r LEFT JOIN sources s ON s.sha256 = "
                                  "r.sha256 WHERE s.sha256 IS NULL LIMIT 1"))
      fail("import: {}: source {} (sha256 {}) is named by a run but its text is missing; nothing imported", file,
           row[0].value_or("?"), excerpt(row[1]));
  }
}

bool is_clean_relative_path(const std::string& rel) {
  if (rel.empty() || rel[0] == '/' || rel.find('\0') != std::string::npos) return false;
  for (size_t i = 0; i <= rel.size();) {
    const size_t e = std::min(rel.find('/', i), rel.size());
    const std::string part = rel.substr(i, e - i);
    if (part.empty() || part == "." || part == "..") return false;
    i = e + 1;
  }
  return true;
}

MergeInput import_file(const std::string& db, const std::string& file, int64_t max_input_bytes) {
  check_export(file, max_input_bytes);
  MergeInput m = merge_stores(db, {file}).at(0);
  Conn c(file, false);
  if (!c.has_table("input_files")) return m;
  // only files a data input names, each checked again as it is written: the name of a copy is
  // its hash and nothing else of the file (paths in a bundle never decide where bytes go)
  int64_t n = 0;
  for (const auto& row : c.rows("SELECT DISTINCT i.kind, f.sha256 FROM input_files f JOIN run_inputs i ON "
                                "i.sha256 = f.sha256 ORDER BY f.sha256")) {
    const std::string kind = *row[0], sha = *row[1], dest = input_copy_path(db, kind, sha);
    if (dest.empty()) continue;
    if (kind == "model" ? fs::is_directory(dest) && hash_input("model", dest, nullptr).sha256 == sha
                        : file_exists(dest) && sha256_file(dest) == sha)
      continue;
    const std::string data = c.rows("SELECT data FROM input_files WHERE sha256 = ?", {Value(sha)})[0][0].value_or("");
    LT_CHECK(sha256_hex(data) == sha, "import: {}: the carried input file {} changed while it was read", file, sha);
    if (kind == "model") restore_folder(c, file, dest, data);
    else write_copy(dest, data);
    n++;
  }
  if (n) m.notes.push_back(fmt::format("restored {} input(s) into {}", n, input_store_dir(db)));
  return m;
}

std::string export_run_uuid(const std::string& file, int64_t run_in_file) {
  Conn c(file, false);
  const auto rows = c.rows("SELECT uuid FROM runs WHERE id = ?", {Value(run_in_file)});
  LT_CHECK(!rows.empty(), "{}: no run with id {} in it", file, run_in_file);
  return rows[0][0].value_or("");
}

int64_t imported_id(const std::string& db, const std::string& file, int64_t run_in_file) {
  const std::string uuid = export_run_uuid(file, run_in_file);
  auto st = Store::open_readonly(db);
  const Table t = st->query("SELECT id FROM runs WHERE uuid = ?", {Value(uuid)});
  LT_CHECK(!t.rows.empty(), "{}: run {} of {} (uuid {}) is not in it (not imported: still running?)", db,
           run_in_file, file, uuid);
  return std::get<int64_t>(t.rows[0][0]);
}

int64_t export_top_run(const std::string& file) {
  Conn c(file, false);
  const auto rows = c.rows("SELECT id FROM runs WHERE parent_id IS NULL OR parent_id NOT IN (SELECT id FROM runs) "
                           "ORDER BY id");
  LT_CHECK(rows.size() == 1, "{}: holds {} top-level runs: name one (FILE:RUN)", file, rows.size());
  return std::stoll(rows[0][0].value_or("0"));
}

}  // namespace ltrun::store
