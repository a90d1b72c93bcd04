// runtime/store/capture.cpp: see capture.h.
#include "runtime/store/capture.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "runtime/core/env.h"
#include "runtime/core/error.h"
#include "runtime/core/inputs.h"
#include "runtime/core/sha256.h"

namespace ltrun::store {
namespace {

namespace fs = std::filesystem;

Capture* g_capture = nullptr;

// adds the time from construction to destruction to a counter
struct Timed {
  int64_t& ns;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  ~Timed() { ns += (std::chrono::steady_clock::now() - t0).count(); }
};

std::string canonical_or(const std::string& p) {
  std::error_code ec;
  const fs::path c = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? p : c.string();
}

// `path` below `dir` (both canonical): the part after it, else nullopt
std::optional<std::string> below(const std::string& path, const std::string& dir) {
  if (dir.empty() || path.size() <= dir.size() + 1 || path.compare(0, dir.size(), dir) != 0 ||
      path[dir.size()] != '/')
    return std::nullopt;
  return path.substr(dir.size() + 1);
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

struct FileStat {
  int64_t size = 0, mtime_ns = 0;
  bool regular = false, dir = false;
};
std::optional<FileStat> file_stat(const std::string& p) {
  struct stat st;
  if (::stat(p.c_str(), &st) != 0) return std::nullopt;
  return FileStat{int64_t(st.st_size), int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                  S_ISREG(st.st_mode), S_ISDIR(st.st_mode)};
}

// one file's sha256, from the cache when path, size and mtime are what was hashed before
std::string file_hash(const std::string& path, const FileStat& s, Store* cache, int64_t& hashed) {
  if (cache) {
    const Table t = cache->query("SELECT sha256 FROM input_hashes WHERE path = ? AND size = ? AND mtime_ns = ?",
                                 {Value(path), Value(s.size), Value(s.mtime_ns)});
    if (!t.rows.empty()) return to_text(t.rows[0][0]);
  }
  const std::string h = sha256_file(path);
  hashed++;
  if (cache && !cache->read_only())
    cache->query("INSERT OR REPLACE INTO input_hashes(path, size, mtime_ns, sha256) VALUES (?, ?, ?, ?)",
                 {Value(path), Value(s.size), Value(s.mtime_ns), Value(h)});
  return h;
}

std::string module_file(const std::string& name) {
  std::string f = name;
  std::replace(f.begin(), f.end(), '.', '/');
  return f;
}

}  // namespace

InputHash hash_input(const std::string& kind, const std::string& path_in, Store* cache) {
  const std::string path = canonical_or(path_in);
  // /proc/self/pagemap says 0 bytes and reads without end; devices block: never inputs
  LT_CHECK(!pseudo_file_path(path), "{}{} lies under /proc, /sys or /dev: not a file on disk; an input is a regular "
           "file or a folder of them", path_in, path == path_in ? "" : " (" + path + ")");
  const auto s = file_stat(path);
  LT_CHECK(s, "{}: not found", path_in);
  InputHash h;
  if (s->regular) {
    h.sha256 = file_hash(path, *s, cache, h.files_hashed);
    h.size = s->size;
    h.newest_mtime_ns = s->mtime_ns;
    return h;
  }
  LT_CHECK(s->dir, "{}: neither a regular file nor a folder", path_in);
  const std::string manifest = folder_manifest(path, cache, &h);
  LT_CHECK(!manifest.empty(), "{}: a {} folder without files", path_in, kind);
  h.sha256 = sha256_hex(manifest);
  return h;
}

std::string folder_manifest(const std::string& path, Store* cache, InputHash* h) {
  InputHash local;
  if (!h) h = &local;
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(path)) {
    const std::string n = e.path().filename().string();
    if (n.empty() || n[0] == '.' || (n.size() > 5 && n.compare(n.size() - 5, 5, ".lock") == 0)) continue;
    names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  std::string manifest;
  for (const auto& n : names) {
    const std::string f = path + "/" + n;
    const auto fst = file_stat(f);
    if (!fst || !fst->regular) continue;  // sub-folders (checkpoints) are not the model
    manifest += n + "\t" + std::to_string(fst->size) + "\t" + file_hash(f, *fst, cache, h->files_hashed) + "\n";
    h->size += fst->size;
    h->newest_mtime_ns = std::max(h->newest_mtime_ns, fst->mtime_ns);
  }
  return manifest;
}

RootedPath rooted(const std::string& abs) {
  const std::string path = canonical_or(abs);
  const std::pair<const char*, std::string> roots[] = {
      {"models", canonical_or(env_or("LTRUN_MODELS", "models"))},
      {"data", std::getenv("LTRUN_DATA") && *std::getenv("LTRUN_DATA") ? canonical_or(std::getenv("LTRUN_DATA")) : ""},
      {"workdir", canonical_or(".")}};
  for (const auto& [name, dir] : roots)
    if (auto rel = below(path, dir)) return {name, *rel};
  return {};
}

Capture::Capture(std::shared_ptr<Store> store, int64_t run, const std::string& script_path,
                 const std::string& lib_dir)
    : store_(std::move(store)), run_(run),
      script_dir_(script_path.empty() ? "" : canonical_or(dir_name(absolute_path(script_path)))),
      lib_dir_(canonical_or(lib_dir)),
      started_ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::system_clock::now().time_since_epoch()).count()) {}

Capture::~Capture() {
  if (g_capture == this) g_capture = nullptr;
}

void Capture::record(const SourceFile& f) {
  std::lock_guard<std::mutex> lock(mu_);
  store_->query("INSERT OR IGNORE INTO sources(sha256, text) VALUES (?, ?)", {Value(f.sha256), Value(f.text)});
  store_->query("INSERT INTO run_sources(run_id, name, kind, origin, rel, path, sha256, seq) VALUES (?,?,?,?,?,?,?,?)",
                {Value(run_), Value(f.name), Value(f.kind), Value(f.origin),
                 f.rel.empty() ? Value() : Value(f.rel), f.path.empty() ? Value() : Value(f.path), Value(f.sha256),
                 Value(seq_++)});
}

void Capture::script(const std::string& name, const std::string& text) {
  Timed timed{ns_};
  SourceFile f;
  f.name = name;
  f.kind = "script";
  f.origin = "script";
  f.text = text;
  f.sha256 = sha256_hex(text);
  record(f);
}

void Capture::serve(std::map<std::string, SourceFile> stored, int64_t from_run) {
  stored_ = std::move(stored);
  stored_from_ = from_run;
}

std::optional<SourceFile> Capture::module(const std::string& name, const std::string& package_path,
                                          std::string& tried) {
  Timed timed{ns_};
  if (auto it = stored_.find(name); it != stored_.end()) {
    SourceFile f = it->second;
    f.stored = true;
    // the chunk name: where it would be here (lt.study finds the project's folder by it)
    f.path = f.origin == "lib" && !f.rel.empty()          ? lib_dir_ + "/" + f.rel
             : f.origin == "script_dir" && !f.rel.empty() ? script_dir_ + "/" + f.rel
                                                          : f.path;
    record(f);
    return f;
  }
  struct Plain {  // the plain search, unrecorded; this capture again after it, however it ends
    Capture* self;
    Plain(Capture* c) : self(c) { g_capture = nullptr; }
    ~Plain() { g_capture = self; }
  };
  std::optional<SourceFile> f;
  {
    Plain plain(this);
    f = find_source(name, package_path, tried);
  }
  if (!f) return f;
  const std::string path = canonical_or(f->path);
  if (auto rel = below(path, lib_dir_)) f->origin = "lib", f->rel = *rel;
  else if (auto rel2 = below(path, script_dir_)) f->origin = "script_dir", f->rel = *rel2;
  else f->origin = "path";
  if (stored_from_)
    std::fprintf(stderr, "ltrun: warning: module %s is not among run %lld's stored sources: loaded from %s\n",
                 name.c_str(), (long long)stored_from_, path.c_str());
  record(*f);
  return f;
}

void Capture::input(const std::string& kind, const std::string& path_in) {
  Timed timed{ns_};
  // a replay reads a restored input from its copy: recorded under the path it stands for
  const std::string origin = input_origin(path_in);
  const std::string path = canonical_or(origin.empty() ? path_in : origin);
  // the run's store and what lies beside it (its journal, artifact and input copies) are the
  // run's record, not its inputs
  const std::string db = canonical_or(store_->path());
  for (const char* side : {"", "-wal", "-shm", "-journal"})
    if (path == db + side) return;
  for (const char* folder : {".artifacts/", ".inputs/"})
    if (path.rfind(db + folder, 0) == 0) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!inputs_seen_.insert(kind + "\t" + path).second) return;
  }
  // in a replay, an input restored from a bundle is read from its copy (inputs.h)
  const InputHash h = hash_input(kind, input_source(path), store_.get());
  const RootedPath r = rooted(path);
  std::lock_guard<std::mutex> lock(mu_);
  files_hashed_ += h.files_hashed;
  store_->query("INSERT INTO run_inputs(run_id, kind, path, root, rel, size, sha256, made) VALUES (?,?,?,?,?,?,?,?)",
                {Value(run_), Value(kind), Value(path), r.root.empty() ? Value() : Value(r.root),
                 r.rel.empty() ? Value() : Value(r.rel), Value(h.size), Value(h.sha256),
                 Value(int64_t(h.newest_mtime_ns >= started_ns_ ? 1 : 0))});
}

std::optional<SourceFile> find_source(const std::string& name, const std::string& package_path, std::string& tried) {
  if (g_capture) return g_capture->module(name, package_path, tried);
  const std::string file = module_file(name);
  size_t start = 0;
  while (start <= package_path.size()) {
    size_t end = package_path.find(';', start);
    if (end == std::string::npos) end = package_path.size();
    std::string tmpl = package_path.substr(start, end - start);
    start = end + 1;
    if (tmpl.empty()) continue;
    for (size_t q = tmpl.find('?'); q != std::string::npos; q = tmpl.find('?', q + file.size()))
      tmpl.replace(q, 1, file);
    const auto s = file_stat(tmpl);
    if (!s || !s->regular) {
      tried += "\n\tno file '" + tmpl + "'";
      continue;
    }
    SourceFile f;
    f.name = name;
    f.path = tmpl;
    f.text = read_file(tmpl);
    f.sha256 = sha256_hex(f.text);
    f.origin = "path";
    return f;
  }
  return std::nullopt;
}

void set_current_capture(Capture* c) { g_capture = c; }

std::vector<SourceFile> stored_sources(Store& st, int64_t run) {
  int64_t root = run;
  for (int hops = 0; hops < 100000; hops++) {
    const Table t = st.query("SELECT parent_id FROM runs WHERE id = ?", {Value(root)});
    LT_CHECK(!t.rows.empty(), "no run with id {}", root);
    if (!std::holds_alternative<int64_t>(t.rows[0][0])) break;
    root = std::get<int64_t>(t.rows[0][0]);
  }
  const Table t = st.query(
      "SELECT r.name, r.kind, r.origin, coalesce(r.rel, ''), coalesce(r.path, ''), r.sha256, s.text "
      "FROM run_sources r LEFT JOIN sources s ON s.sha256 = r.sha256 WHERE r.run_id = ? ORDER BY r.seq",
      {Value(root)});
  std::vector<SourceFile> out;
  for (const auto& row : t.rows) {
    SourceFile f{to_text(row[0]), to_text(row[1]), to_text(row[2]), to_text(row[3]), to_text(row[4]),
                 to_text(row[5]), to_text(row[6])};
    LT_CHECK(std::holds_alternative<std::string>(row[6]), "run {}: the text of source {} (sha256 {}) is missing "
             "from the store", root, f.name, f.sha256);
    const std::string h = sha256_hex(f.text);
    LT_CHECK(h == f.sha256, "run {}: the stored text of source {} does not match its sha256 (stored {}, the text "
             "hashes to {}): changed after the run; refusing it", root, f.name, f.sha256, h);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace ltrun::store
