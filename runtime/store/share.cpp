// runtime/store/share.cpp: see share.h.
#include "runtime/store/share.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include "runtime/core/env.h"
#include "runtime/core/error.h"
#include "runtime/core/fs.h"
#include "runtime/core/sha256.h"
#include "runtime/store/artifact.h"
#include "runtime/store/capture.h"
#include "runtime/store/embedded.h"
#include "runtime/store/sqlite.h"
#include "runtime/store/store.h"

namespace ltrun::store {
namespace {

namespace fs = std::filesystem;

constexpr int kBusyMs = 10000;
constexpr int64_t kMaxValueBytes = int64_t(64) << 20;     // any one text read from a bundle
constexpr int64_t kMaxManifestBytes = int64_t(16) << 20;  // a carried model folder's manifest
constexpr size_t kChunk = size_t(1) << 20;                // blobs are read and written in pieces
// the table an export --with-inputs adds (share.h): one row per file, by content
constexpr const char* kInputFilesTable =
    "CREATE TABLE input_files (sha256 TEXT PRIMARY KEY, size INTEGER NOT NULL, data BLOB NOT NULL)";

// A bundle, opened as data (sqlite.h: open_as_data): its schema exactly a store's (and
// input_files), trusted_schema off, each value read at most kMaxValueBytes.
Db open_bundle(const std::string& file) {
  return open_as_data(file, "import: " + file, kMaxValueBytes, {kInputFilesTable}, "; nothing imported");
}

// The bytes of blob `column` of row `rowid` of `table`, in pieces of kChunk, to `sink`; never
// the whole blob in memory. Errors name `what`.
void read_blob(Db& c, const char* table, const char* column, int64_t rowid, const std::string& what,
               const std::function<void(const char*, size_t)>& sink) {
  sqlite3_blob* b = nullptr;
  if (const int rc = sqlite3_blob_open(c.get(), "main", table, column, rowid, 0, &b); rc != SQLITE_OK) {
    sqlite3_blob_close(b);
    c.fail_sql(rc, "reading " + what);
  }
  struct Close {
    sqlite3_blob* b;
    ~Close() { sqlite3_blob_close(b); }
  } close{b};
  const int n = sqlite3_blob_bytes(b);
  std::vector<char> buf(kChunk);
  for (int off = 0; off < n;) {
    const int k = int(std::min<int64_t>(int64_t(buf.size()), n - off));
    if (const int rc = sqlite3_blob_read(b, buf.data(), k, off); rc != SQLITE_OK) c.fail_sql(rc, "reading " + what);
    sink(buf.data(), size_t(k));
    off += k;
  }
}
std::string blob_sha256(Db& c, const char* table, int64_t rowid, const std::string& what) {
  Sha256 h;
  read_blob(c, table, "data", rowid, what, [&](const char* p, size_t n) { h.update(p, n); });
  return h.hex();
}

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
void check_fields(Db& c, const std::string& file) {
  std::map<int64_t, std::optional<int64_t>> parents;
  // row by row: only the parent links are kept
  c.each("SELECT typeof(id), id, typeof(parent_id), parent_id, typeof(seed), seed, typeof(args_json), args_json, "
         "typeof(script_text), typeof(uuid), uuid FROM runs ORDER BY id", {}, [&](const Db::Row& row) {
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
  });
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
  c.each("SELECT run_id, kind, path, root, rel, sha256 FROM run_inputs ORDER BY rowid", {}, [&](const Db::Row& row) {
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
  });
}

void remove_db(const std::string& f) {
  for (const char* s : {"", "-wal", "-shm", "-journal"}) std::remove((f + s).c_str());
}

// The OUT.partial-<pid> files (and their -wal, -shm, -journal) of exports of OUT whose
// process is gone (killed midway): removed. One still running keeps its own.
void remove_stale_partials(const std::string& out) {
  const std::string dir = dir_name(absolute_path(out)), prefix = fs::path(out).filename().string() + ".partial-";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    std::string pid = name.substr(prefix.size());
    pid = pid.substr(0, pid.find('-'));
    if (!pid.empty() && pid.size() <= 9 && pid.find_first_not_of("0123456789") == std::string::npos &&
        std::stol(pid) != ::getpid() && !process_alive(std::stol(pid)))
      std::remove(e.path().c_str());
  }
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

// The name a restore writes under before its rename: `.incoming-<pid>-XXXXXX`, so that what a
// process killed mid-restore left is known as such (remove_stale_incoming).
std::string incoming_template(const std::string& dir) {
  return fmt::format("{}/.incoming-{}-XXXXXX", dir, ::getpid());
}

// What restores that were killed (kill -9, a power cut) left in `dir`: `.incoming-<pid>-*`
// files and folders whose process is gone. Another import's, still running, stay.
void remove_stale_incoming(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(".incoming-", 0) != 0) continue;
    const std::string pid = name.substr(10, name.find('-', 10) - 10);
    if (pid.empty() || pid.size() > 9 || pid.find_first_not_of("0123456789") != std::string::npos ||
        !process_alive(std::stol(pid)))
      ltrun::fs::remove_tree(e.path().string());
  }
}

// The carried input file `sha` of the bundle `c` as the read-only file `dest`: streamed from
// its blob in pieces under a temporary name beside it, its hash checked, then renamed, so the
// name always matches the bytes
void restore_file(Db& c, const std::string& file, const std::string& sha, const std::string& dest) {
  const auto ids = c.rows("SELECT rowid FROM input_files WHERE sha256 = ?", {Value(sha)});
  LT_CHECK(!ids.empty(), "import: {}: the carried input file {} is missing; nothing imported", file, sha);
  make_folder(dir_name(dest));
  std::string tmp = incoming_template(dir_name(dest));
  int fd = ::mkstemp(tmp.data());
  if (fd < 0) fail("import: cannot write into {}: {}", dir_name(dest), std::strerror(errno));
  try {
    Sha256 h;
    read_blob(c, "input_files", "data", std::stoll(ids[0][0].value_or("0")), "carried input " + sha,
              [&](const char* p, size_t n) {
                h.update(p, n);
                for (size_t done = 0; done < n;) {
                  const ssize_t w = ::write(fd, p + done, n - done);
                  if (w < 0 && errno == EINTR) continue;
                  if (w < 0) fail("import: cannot write {}: {}", tmp, std::strerror(errno));
                  done += size_t(w);
                }
              });
    const std::string got = h.hex();
    LT_CHECK(got == sha, "import: {}: the carried input file {} changed while it was read (its bytes hash to {}); "
             "nothing imported", file, sha, got);
    LT_CHECK(::fchmod(fd, 0444) == 0 && ::fsync(fd) == 0,  // data to read, never to change; on disk before named
             "import: cannot write {}: {}", tmp, std::strerror(errno));
    ::close(fd);
    fd = -1;
    if (std::rename(tmp.c_str(), dest.c_str()) != 0)
      fail("import: cannot rename {} to {}: {}", tmp, dest, std::strerror(errno));
  } catch (...) {
    if (fd >= 0) ::close(fd);
    std::remove(tmp.c_str());
    throw;
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
void carry_inputs(Db& c, const std::string& db, int64_t run, const ExportOptions& o, ExportResult& r) {
  c.exec(kInputFilesTable);
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
  // one blob holds one file: SQLite's largest value (SQLITE_LIMIT_LENGTH, 1,000,000,000 bytes
  // in Debian's build); a file past it cannot travel in a bundle
  const int64_t max_blob = sqlite3_limit(c.get(), SQLITE_LIMIT_LENGTH, -1);
  sqlite3_stmt* ins = c.prepare("INSERT INTO input_files(sha256, size, data) VALUES (?, ?, zeroblob(?))");
  struct Finalize {
    sqlite3_stmt* s;
    ~Finalize() { sqlite3_finalize(s); }
  } finalize{ins};
  auto carried = [&](const std::string& sha) {
    return c.int_query("SELECT count(*) FROM input_files WHERE sha256 = ?", {Value(sha)}) > 0;
  };
  // a row of `size` bytes for `sha`, its blob then written in pieces; its rowid
  auto add_row = [&](const std::string& sha, int64_t size, const std::string& what) {
    if (sqlite3_bind_text(ins, 1, sha.c_str(), -1, SQLITE_TRANSIENT) != SQLITE_OK ||
        sqlite3_bind_int64(ins, 2, size) != SQLITE_OK || sqlite3_bind_int64(ins, 3, size) != SQLITE_OK)
      c.fail_sql(sqlite3_errcode(c.get()), "export --with-inputs: storing " + what);
    c.step_done(ins, "export --with-inputs: storing " + what);
    return int64_t(sqlite3_last_insert_rowid(c.get()));
  };
  auto write_blob = [&](int64_t rowid, const std::string& what, const std::function<void(sqlite3_blob*)>& fill) {
    sqlite3_blob* b = nullptr;
    if (const int rc = sqlite3_blob_open(c.get(), "main", "input_files", "data", rowid, 1, &b); rc != SQLITE_OK) {
      sqlite3_blob_close(b);
      c.fail_sql(rc, "export --with-inputs: storing " + what);
    }
    try {
      fill(b);
    } catch (...) {
      sqlite3_blob_close(b);
      throw;
    }
    if (const int rc = sqlite3_blob_close(b); rc != SQLITE_OK) c.fail_sql(rc, "export --with-inputs: storing " + what);
  };
  // a text (a folder's manifest) as the row `sha`
  auto put_text = [&](const std::string& sha, const std::string& data, const std::string& what) {
    if (carried(sha)) return;
    write_blob(add_row(sha, int64_t(data.size()), what), what, [&](sqlite3_blob* b) {
      if (const int rc = sqlite3_blob_write(b, data.data(), int(data.size()), 0); rc != SQLITE_OK)
        c.fail_sql(rc, "export --with-inputs: storing " + what);
    });
  };
  // a file's bytes, streamed from `from` into the row `sha` and checked against that recorded
  // hash, within the caps: never the whole file in memory
  auto put_file = [&](const std::string& sha, const std::string& from, const std::string& what) {
    if (carried(sha)) return;
    const int fd = ::open(from.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
      fail("export --with-inputs: {} of run {} cannot be carried: cannot read {}: {}; export without --with-inputs",
           what, run, from, std::strerror(errno));
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    LT_CHECK(::fstat(fd, &st) == 0 && S_ISREG(st.st_mode),
             "export --with-inputs: {} of run {} cannot be carried: {} is not a regular file; export without "
             "--with-inputs", what, run, from);
    const int64_t size = int64_t(st.st_size);
    LT_CHECK(size <= max_blob,
             "export --with-inputs: {} of run {} is {} ({} bytes), more than one bundle can hold of one file ({} bytes, "
             "SQLite's largest value); nothing exported; export without --with-inputs", what, run,
             human_bytes(double(size)), size, max_blob);
    LT_CHECK(r.input_bytes + size <= o.max_input_bytes,
             "export --with-inputs: with {} of run {} ({} bytes) the inputs come to {} bytes, past the cap of {} bytes "
             "(--max-input-mb); nothing exported", what, run, size, r.input_bytes + size, o.max_input_bytes);
    std::string h;
    int64_t at = 0;
    write_blob(add_row(sha, size, what), what, [&](sqlite3_blob* b) {
      try {
        // sha256_fd refuses a file that grows past the size it had when opened
        h = sha256_fd(fd, from, [&](const char* p, size_t n) {
          if (const int rc = sqlite3_blob_write(b, p, int(n), int(at)); rc != SQLITE_OK)
            c.fail_sql(rc, "export --with-inputs: storing " + what);
          at += int64_t(n);
        });
      } catch (const Interrupted&) {
        throw;
      } catch (const Error& e) {
        fail("export --with-inputs: {} of run {} cannot be carried: {}; export without --with-inputs", what, run,
             e.what());
      }
    });
    if (at != size || h != sha)
      fail("export --with-inputs: {} of run {} changed since the run read it (recorded sha256 {}, {} now has {} bytes "
           "hashing to {}); export without --with-inputs", what, run, sha, from, at, h);
    r.input_bytes += size;
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
      put_file(in.sha, from, what);
      r.input_files++;
      continue;
    }
    LT_CHECK(fs::is_directory(from), "export --with-inputs: {} of run {} is not a folder here ({})", what, run, from);
    const std::string manifest = folder_manifest(from, nullptr);
    if (sha256_hex(manifest) != in.sha)
      fail("export --with-inputs: {} of run {} changed since the run read it (its files hash to {}, recorded {}); "
           "export without --with-inputs", what, run, sha256_hex(manifest), in.sha);
    for (const auto& e : parse_manifest(manifest, what)) {
      put_file(e.sha, from + "/" + e.name, what + "/" + e.name);
      r.input_files++;
    }
    put_text(in.sha, manifest, what);
  }
  // every file the runs read is in the bundle, with the bytes that hash as recorded
  for (const auto& in : todo)
    LT_CHECK(carried(in.sha), "export --with-inputs: {} {} of run {} is not in the bundle after it was written; "
             "nothing exported", in.kind, in.path, run);
}

// A carried model folder into `dest` (absent or damaged): written into a fresh folder beside it,
// every file checked, then renamed into place, so `dest` is complete or absent.
void restore_folder(Db& c, const std::string& file, const std::string& dest, const std::string& manifest) {
  const auto entries = parse_manifest(manifest, "import: " + file + ": model " + sha256_hex(manifest));
  make_folder(dir_name(dest));
  std::string tmp = incoming_template(dir_name(dest));
  LT_CHECK(::mkdtemp(tmp.data()), "import: cannot make a folder in {}: {}", dir_name(dest), std::strerror(errno));
  try {
    for (const auto& e : entries) restore_file(c, file, e.sha, tmp + "/" + e.name);
    LT_CHECK(::chmod(tmp.c_str(), 0755) == 0, "import: chmod {}: {}", tmp, std::strerror(errno));  // data to read
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
  // written as OUT.partial-<pid> beside OUT, then linked to OUT in one step: OUT is complete or
  // absent, and what an export killed midway left (its pid gone) is removed by the next one
  remove_stale_partials(out);
  const std::string tmp = fmt::format("{}.partial-{}", out, ::getpid());
  remove_db(tmp);
  ExportResult r;
  try {
    MergeOptions mo;
    mo.only_runs = ids;
    mo.include_running = true;  // a child left running by a crash is exported as it is
    const auto rep = merge_stores(tmp, {db}, mo);
    r.runs = rep.at(0).added;
    r.notes = rep.at(0).notes;
    Db c = Db::writer(tmp, false, kBusyMs);
    if (o.artifacts) {
      sqlite3_stmt* ins = c.prepare("INSERT INTO artifact_files(run_id, path, sha256, size, data) VALUES (?,?,?,?,?)");
      const int64_t max_blob = sqlite3_limit(c.get(), SQLITE_LIMIT_LENGTH, -1);
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
        if (int64_t(f.size) > max_blob) {
          r.notes.push_back(fmt::format("artifact {} ({} bytes) is larger than one bundle can hold of one file ({} "
                                        "bytes): not included", path, f.size, max_blob));
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
        const bool bound = sqlite3_bind_int64(ins, 1, std::stoll(row[0].value_or("0"))) == SQLITE_OK &&
                           sqlite3_bind_text(ins, 2, path.c_str(), -1, SQLITE_TRANSIENT) == SQLITE_OK &&
                           sqlite3_bind_text(ins, 3, want.c_str(), -1, SQLITE_TRANSIENT) == SQLITE_OK &&
                           sqlite3_bind_int64(ins, 4, int64_t(data.size())) == SQLITE_OK &&
                           sqlite3_bind_blob64(ins, 5, data.data(), data.size(), SQLITE_TRANSIENT) == SQLITE_OK;
        const int rc = bound ? sqlite3_step(ins) : sqlite3_errcode(c.get());
        sqlite3_reset(ins);
        if (rc != SQLITE_DONE) {
          const std::string msg = sqlite3_errmsg(c.get());
          sqlite3_finalize(ins);
          fail("export: storing artifact {} in {}: {}", path, tmp, msg);
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
    const int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);  // on disk before it is named
    LT_CHECK(fd >= 0 && ::fsync(fd) == 0, "export: cannot write {}: {}", tmp, std::strerror(errno));
    ::close(fd);
  } catch (...) {
    remove_db(tmp);
    throw;
  }
  // link, not rename: an OUT made meanwhile is never replaced
  if (::link(tmp.c_str(), out.c_str()) != 0) {
    const int e = errno;
    remove_db(tmp);
    fail("export: cannot name the export {}: {}{}", out, std::strerror(e),
         e == EEXIST ? " (made meanwhile by someone else; an export never overwrites a file)" : "");
  }
  remove_db(tmp);
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
  // its schema first: nothing of the file is read before it is known to hold only tables
  Db c = open_bundle(file);
  const auto check = c.rows("PRAGMA quick_check");
  LT_CHECK(!check.empty() && check[0][0].value_or("") == "ok", "import: {}: damaged: {}", file,
           check.empty() ? std::string("no answer from SQLite's quick_check") : check[0][0].value_or("?"));
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
    for (const auto& row : c.rows("SELECT DISTINCT f.sha256, length(f.data) FROM input_files f JOIN run_inputs i ON "
                                  "i.sha256 = f.sha256 AND i.kind = 'model'")) {
      const std::string what = fmt::format("import: {}: carried model {}", file, *row[0]);
      LT_CHECK(std::stoll(row[1].value_or("0")) <= kMaxManifestBytes,
               "{}: its manifest is {} bytes, more than a manifest of plain files can be ({}); nothing imported", what,
               row[1].value_or("?"), kMaxManifestBytes);
      for (const auto& e : parse_manifest(c.rows("SELECT data FROM input_files WHERE sha256 = ?",
                                                 {Value(*row[0])})[0][0].value_or(""), what))
        LT_CHECK(!c.rows("SELECT 1 FROM input_files WHERE sha256 = ? AND size = ?", {Value(e.sha), Value(e.size)})
                      .empty(), "{}: its file {} is not carried; nothing imported", what, e.name);
    }
    // each file hashed as it is read, a piece at a time
    for (const auto& row : c.rows("SELECT rowid, sha256 FROM input_files")) {
      const std::string hash = blob_sha256(c, "input_files", std::stoll(*row[0]), "carried input " + *row[1]);
      LT_CHECK(hash == *row[1], "import: {}: a carried input file does not match its hash (stored sha256 {}, its "
               "bytes hash to {}); nothing imported", file, *row[1], hash);
    }
  }
  // row by row (each text at most kMaxValueBytes), never the whole table in memory
  c.each("SELECT id, script_sha256, script_text FROM runs WHERE script_text IS NOT NULL", {}, [&](const Db::Row& row) {
    const std::string hash = sha256_hex(row[2].value_or(""));
    LT_CHECK(hash == row[1].value_or(""),
             "import: {}: run {}'s script does not match its script_sha256 (stored {}, the text hashes to {}): the "
             "file was changed after it was written; nothing imported", file, row[0].value_or("?"),
             excerpt(row[1]), hash);
  });
  if (c.has_table("sources")) {
    c.each("SELECT sha256, text FROM sources", {}, [&](const Db::Row& row) {
      const std::string hash = sha256_hex(row[1].value_or(""));
      if (hash == row[0].value_or("")) return;
      const auto names = c.rows("SELECT DISTINCT name FROM run_sources WHERE sha256 = ? ORDER BY name LIMIT 1",
                                {Value(row[0].value_or(""))});
      fail("import: {}: source {} does not match its hash (stored sha256 {}, its text hashes to {}): the file was "
           "changed after it was written; nothing imported", file,
           names.empty() ? std::string("(named by no run)") : names[0][0].value_or("?"), excerpt(row[0]), hash);
    });
    for (const auto& row : c.rows("SELECT rowid, path, sha256 FROM artifact_files")) {
      const std::string hash = blob_sha256(c, "artifact_files", std::stoll(*row[0]), "artifact " + row[1].value_or(""));
      LT_CHECK(hash == row[2].value_or(""), "import: {}: the artifact file {} carried in it does not match its hash "
               "(stored sha256 {}, its bytes hash to {}); nothing imported", file, row[1].value_or("?"),
               excerpt(row[2]), hash);
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
  // The carried inputs first, then the runs: a run is in the store only once its inputs are
  // (an import killed between the two leaves copies named by content, which the next import
  // finds in place, and no run without its input). Each copy is written under a temporary name
  // and renamed; those of a killed import are removed here.
  int64_t n = 0;
  {
    Db c = open_bundle(file);
    if (c.has_table("input_files")) {
      for (const char* sub : {"/models", "/sha256"}) {
        const std::string dir = input_store_dir(db) + sub;
        remove_stale_incoming(dir);
        std::error_code ec;
        if (std::string(sub) == "/sha256" && fs::is_directory(dir, ec))
          for (const auto& e : fs::directory_iterator(dir, ec)) remove_stale_incoming(e.path().string());
      }
      // only files an input names, each checked again as it is written: the name of a copy is
      // its hash and nothing else of the file (paths in a bundle never decide where bytes go)
      for (const auto& row : c.rows("SELECT DISTINCT i.kind, f.sha256 FROM input_files f JOIN run_inputs i ON "
                                    "i.sha256 = f.sha256 ORDER BY f.sha256")) {
        const std::string kind = *row[0], sha = *row[1], dest = input_copy_path(db, kind, sha);
        if (dest.empty()) continue;
        if (kind == "model" ? fs::is_directory(dest) && hash_input("model", dest, nullptr).sha256 == sha
                            : file_exists(dest) && sha256_file(dest) == sha)
          continue;
        if (kind == "model") {
          const std::string manifest =
              c.rows("SELECT data FROM input_files WHERE sha256 = ?", {Value(sha)})[0][0].value_or("");
          LT_CHECK(sha256_hex(manifest) == sha, "import: {}: the carried input file {} changed while it was read",
                   file, sha);
          restore_folder(c, file, dest, manifest);
        } else {
          restore_file(c, file, sha, dest);
        }
        n++;
      }
    }
  }
  MergeOptions mo;
  mo.as_data = true;
  mo.extra_tables = {kInputFilesTable};
  MergeInput m = merge_stores(db, {file}, mo).at(0);
  if (n) m.notes.push_back(fmt::format("restored {} input(s) into {}", n, input_store_dir(db)));
  return m;
}

std::string export_run_uuid(const std::string& file, int64_t run_in_file) {
  Db c = open_bundle(file);
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
  Db c = open_bundle(file);
  const auto rows = c.rows("SELECT id FROM runs WHERE parent_id IS NULL OR parent_id NOT IN (SELECT id FROM runs) "
                           "ORDER BY id");
  LT_CHECK(rows.size() == 1, "{}: holds {} top-level runs: name one (FILE:RUN)", file, rows.size());
  return std::stoll(rows[0][0].value_or("0"));
}

}  // namespace ltrun::store
