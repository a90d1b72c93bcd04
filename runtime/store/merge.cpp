// runtime/store/merge.cpp: `ltrun db merge` (see merge.h): each input is attached read-only
// to OUT's connection and copied in one transaction, through a map of input run id → OUT id.
#include "runtime/store/merge.h"

#include <fcntl.h>
#include <fmt/ranges.h>
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
#include <optional>
#include <set>

#include "runtime/core/fs.h"
#include "runtime/core/env.h"
#include "runtime/core/error.h"
#include "runtime/core/sha256.h"
#include "runtime/store/sqlite.h"
#include "runtime/store/store.h"

namespace ltrun::store {
namespace {

namespace fs = std::filesystem;

constexpr int kBusyTimeoutMs = 120000;
constexpr int kAttempts = 3;      // an input that changed while read immutable is read again
constexpr int kUuidSchema = 3;    // db/migrations/0003_run_uuid.sql
constexpr off_t kShmDmsByte = 128;  // SQLite's "dead man switch" lock byte in -shm (os_unix.c)

// `path` as an SQLite URI with `query` (the name ATTACH gets)
std::string file_uri(const std::string& path, const std::string& query) {
  std::string uri = "file:";
  for (unsigned char c : path) {
    if (c == '?' || c == '#' || c == '%' || c < 0x20 || c >= 0x7f) uri += fmt::format("%{:02X}", c);
    else uri += char(c);
  }
  return uri + "?" + query;
}

// an SQL identifier, quoted (table and column names come from the input)
std::string quoted(const std::string& name) {
  std::string q = "\"";
  for (char c : name) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

struct Stamp {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  long long mtime_s = 0, mtime_ns = 0;
  bool operator==(const Stamp& o) const {
    return dev == o.dev && ino == o.ino && size == o.size && mtime_s == o.mtime_s && mtime_ns == o.mtime_ns;
  }
  bool operator!=(const Stamp& o) const { return !(*this == o); }
};
std::optional<Stamp> stamp(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return Stamp{st.st_dev, st.st_ino, st.st_size, (long long)st.st_mtim.tv_sec, (long long)st.st_mtim.tv_nsec};
}

// Whether another process holds SQLite's connection lock on a -shm file: some connection has
// the WAL store open (a live writer, or a reader). F_GETLK only tests; it takes nothing.
bool shm_in_use(const std::string& shm) {
  const int fd = ::open(shm.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct flock l {};
  l.l_type = F_WRLCK;
  l.l_whence = SEEK_SET;
  l.l_start = kShmDmsByte;
  l.l_len = 1;
  const bool used = ::fcntl(fd, F_GETLK, &l) == 0 && l.l_type != F_UNLCK;
  ::close(fd);  // this process holds no lock on it (nothing of ours has the input open yet)
  return used;
}

// The input changed while it was read as an immutable file or copied: read it again.
struct Changed : Error {
  using Error::Error;
};
// SQLite could not open or start reading the input where it is: read a private copy.
struct CannotReadInPlace : Error {
  using Error::Error;
};

// How one input is read without being changed (merge.h).
struct Source {
  std::string path;        // as given
  std::string file;        // absolute, symbolic links resolved (where SQLite looks for -wal)
  std::string attach;      // the name given to ATTACH
  std::string how;         // for the report
  std::vector<std::pair<std::string, std::optional<Stamp>>> fixed;  // read immutable or copied:
                                                                    // these must not change meanwhile
  bool in_use = false;     // another process has the store open
  fs::path tmp;            // the private copy's folder, removed with the Source

  Source() = default;
  Source(const Source&) = delete;
  Source& operator=(const Source&) = delete;
  ~Source() {
    if (!tmp.empty()) ltrun::fs::remove_tree(tmp.string());
  }

  bool unchanged() const {
    for (const auto& [f, st] : fixed)
      if (stamp(f) != st) return false;
    return true;
  }

  void open(const std::string& in, bool copy) {
    path = in;
    file = absolute_path(in);
    check_regular_file(file, ~0ull);
    char head[100] = {};
    size_t got = 0;
    {
      std::ifstream f(file, std::ios::binary);
      if (!f) fail("{}: cannot read the input: {}", in, std::strerror(errno));
      f.read(head, sizeof head);
      got = size_t(f.gcount());
    }
    if (got == 0) fail("{}: an empty file, not an ltrun run store (no run has been stored in it)", in);
    if (got < sizeof head || std::memcmp(head, "SQLite format 3", 16) != 0)
      fail("{}: not an ltrun run store (not a SQLite database)", in);
    const bool wal = head[18] == 2 || head[19] == 2;
    const std::string wal_file = file + "-wal", shm = file + "-shm";
    const auto wal_stamp = stamp(wal_file);
    const bool has_shm = file_exists(shm);
    if (!copy && !wal) {
      attach = file_uri(file, "mode=ro");
      how = "read-only (rollback journal)";
    } else if (!copy && (!wal_stamp || (wal_stamp->size == 0 && !has_shm))) {
      // No -wal: no connection has it open (SQLite keeps the -wal while one has). A plain
      // read-only open would create -wal and -shm beside it; an immutable one does not. A
      // writer that starts meanwhile writes its -wal, not this file, until a checkpoint:
      // the file's stamp is compared after the read.
      attach = file_uri(file, "mode=ro&immutable=1");
      fixed = {{file, stamp(file)}};
      how = "read-only, immutable (WAL, no -wal file: not open anywhere)";
    } else if (!copy && has_shm) {
      // A live connection: read beside it (SQLite's WAL protocol gives one snapshot; the
      // shared index, which the writer changes anyway, gets this reader's read mark). None
      // (a writer that died): the -wal's frames are read with the -shm opened read-only, so
      // SQLite rebuilds its index in memory and leaves every file as it was.
      in_use = shm_in_use(shm);
      attach = file_uri(file, in_use ? "mode=ro" : "mode=ro&readonly_shm=1");
      how = in_use ? "read-only beside its writer (WAL, open in another process)"
                   : "read-only with its -wal and -shm untouched (WAL, left by a writer that did not close it)";
    } else {
      copy_privately(in, wal_stamp.has_value());
    }
  }

  // db (+ -wal, + -journal) into a fresh temporary folder; no -shm there: nobody is writing it
  void copy_privately(const std::string& in, bool with_wal) {
    char tmpl[] = "ltrun-merge-XXXXXX";
    const std::string base = (fs::temp_directory_path() / tmpl).string();
    std::vector<char> buf(base.begin(), base.end());
    buf.push_back('\0');
    LT_CHECK(::mkdtemp(buf.data()), "{}: cannot make a temporary folder for a private copy: {}", in,
             std::strerror(errno));
    tmp = buf.data();
    for (const char* suffix : {"", "-wal", "-journal"}) fixed.emplace_back(file + suffix, stamp(file + suffix));
    const fs::path copy = tmp / "input.db";
    for (const char* suffix : {"", "-wal", "-journal"}) {
      if (!file_exists(file + suffix)) continue;
      std::error_code ec;
      fs::copy_file(file + suffix, copy.string() + suffix, ec);
      LT_CHECK(!ec, "{}: cannot copy {}{} to {} (to read it without changing it): {}", in, file, suffix,
               tmp.string(), ec.message());
    }
    if (!unchanged()) throw Changed(fmt::format("{}: changed while it was copied", in));
    attach = copy.string();
    how = fmt::format("from a private copy in {}, removed after ({})", tmp.string(),
                      with_wal ? "WAL with a -wal file but no -shm" : "it could not be read in place");
  }
};

// OUT, opened for the merge (foreign keys on); errors name OUT and the input (Db::context)
Db open_out(const std::string& path) {
  Db d = Db::writer(path, false, kBusyTimeoutMs, true);
  d.context = path;
  d.distrust_schema();  // it attaches inputs from elsewhere
  d.exec("PRAGMA foreign_keys=ON");
  return d;
}

// columns both schemas have, without `skip`, as a quoted list
std::vector<std::string> common(Db& out, const std::string& table, const std::vector<std::string>& skip) {
  const auto dst = out.columns("main", table);
  std::vector<std::string> cols;
  for (const auto& c : out.columns("src", table))
    if (std::find(dst.begin(), dst.end(), c) != dst.end() && std::find(skip.begin(), skip.end(), c) == skip.end())
      cols.push_back(quoted(c));
  return cols;
}

std::optional<int64_t> opt_int(sqlite3_stmt* st, int col) {
  if (sqlite3_column_type(st, col) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_int64(st, col);
}
std::optional<std::string> opt_text(sqlite3_stmt* st, int col) {
  const auto* p = sqlite3_column_text(st, col);
  return p ? std::optional<std::string>(reinterpret_cast<const char*>(p)) : std::nullopt;
}
std::string text(sqlite3_stmt* st, int col) { return opt_text(st, col).value_or(""); }

// The input is attached as `src` and readable: its schema is one this merge can read.
void check_schema(Db& out, const std::string& in, const MergeOptions& opt) {
  const int64_t v = out.int_query("PRAGMA src.user_version");
  const int latest = latest_schema();
  if (v == 0) {
    std::vector<std::string> tables;
    sqlite3_stmt* st = out.prepare("SELECT name FROM src.sqlite_master WHERE type='table' ORDER BY name");
    while (sqlite3_step(st) == SQLITE_ROW) tables.push_back(text(st, 0));
    sqlite3_finalize(st);
    if (tables.empty()) fail("{}: an empty SQLite file, not yet an ltrun run store", in);
    fail("{}: a SQLite database but not an ltrun run store (user_version 0, tables: {})", in, fmt::join(tables, ", "));
  }
  if (v > latest)
    fail("{}: run store schema version {} is newer than this ltrun knows ({}); update ltrun", in, v, latest);
  if (v < kUuidSchema)
    fail("{}: run store schema version {} has no run uuids (db/migrations/0003), so a merge could not "
         "recognise its runs later; db merge never writes its inputs: upgrade it first with "
         "`ltrun --db {} sql --write 'SELECT 1'` (which migrates it), then merge", in, v, in);
  // a file from elsewhere (a bundle, a replay's store): nothing of it is read before its schema
  // is known to be the store's own, tables only (sqlite.h)
  if (opt.as_data) check_as_data(out, "src", in, int(v), opt.extra_tables, "; nothing of it merged");
}

// The texts of the sources the runs copied now name (db/migrations/0006), each checked
// against its hash: a tampered or missing text refuses the whole input.
void copy_sources(Db& out, const std::string& in) {
  const auto has = [&](const char* schema, const char* table) {
    return out.int_query(fmt::format("SELECT count(*) FROM {}.sqlite_master WHERE type='table' AND name='{}'",
                                     schema, table)) > 0;
  };
  if (!has("src", "run_sources")) return;
  LT_CHECK(has("src", "sources"), "{}: has run_sources but no sources table: not a complete run store", in);
  sqlite3_stmt* st = out.prepare(
      "SELECT r.name, r.sha256, s.text, s.sha256 IS NULL FROM src.run_sources r LEFT JOIN src.sources s "
      "ON s.sha256 = r.sha256 WHERE r.run_id IN (SELECT src FROM temp.merge_ids) GROUP BY r.sha256");
  sqlite3_stmt* ins = out.prepare("INSERT OR IGNORE INTO main.sources(sha256, text) VALUES (?, ?)");
  try {
    while (sqlite3_step(st) == SQLITE_ROW) {
      const std::string name = text(st, 0), hash = text(st, 1);
      const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st, 2));  // all bytes, NULs too
      const std::string body = p ? std::string(p, size_t(sqlite3_column_bytes(st, 2))) : std::string();
      LT_CHECK(sqlite3_column_int(st, 3) == 0, "{}: source {} (sha256 {}) is named by a run but its text is "
               "missing: refusing the whole file", in, name, hash);
      const std::string actual = sha256_hex(body);
      LT_CHECK(actual == hash, "{}: source {} does not match its hash (stored sha256 {}, its text hashes to {}): "
               "the file was changed after it was written; refusing the whole file", in, name, hash, actual);
      sqlite3_bind_text(ins, 1, hash.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(ins, 2, body.c_str(), int(body.size()), SQLITE_TRANSIENT);
      out.step_done(ins, "copying source " + name);
    }
  } catch (...) {
    sqlite3_finalize(st);
    sqlite3_finalize(ins);
    throw;
  }
  sqlite3_finalize(st);
  sqlite3_finalize(ins);
}

struct SrcRun {
  int64_t id;
  std::string uuid, status, name;
  std::optional<int64_t> parent, rerun;
  std::optional<Liveness> live;  // for rows left `running`
};

MergeInput merge_one(Db& out, const Source& src, const MergeOptions& opt) {
  const std::string& in = src.path;
  MergeInput r;
  r.path = in;
  r.read_as = src.how;
  out.context = fmt::format("merging {} into {}", in, out.path());
  {
    sqlite3_stmt* st = out.prepare("ATTACH DATABASE ? AS src");
    sqlite3_bind_text(st, 1, src.attach.c_str(), -1, SQLITE_TRANSIENT);
    const int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
      throw CannotReadInPlace(fmt::format("{}: cannot open it as a run store, read-only (is it complete and "
                                          "undamaged?): SQLite says: {}", in, sqlite3_errmsg(out.get())));
  }
  // BEGIN IMMEDIATE gives a read-only input a read transaction: one snapshot for the merge.
  // Reading its schema is the first read: what fails here fails on opening the input.
  if (sqlite3_exec(out.get(), "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK ||
      sqlite3_exec(out.get(), "SELECT count(*) FROM src.sqlite_master", nullptr, nullptr, nullptr) != SQLITE_OK) {
    const std::string msg = sqlite3_errmsg(out.get());
    sqlite3_exec(out.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_exec(out.get(), "DETACH DATABASE src", nullptr, nullptr, nullptr);
    throw CannotReadInPlace(fmt::format("{}: cannot read it as a run store, read-only (is it complete and "
                                        "undamaged?): SQLite says: {}", in, msg));
  }
  try {
    check_schema(out, in, opt);
    const auto run_cols = common(out, "runs", {"id", "parent_id", "rerun_of"});
    LT_CHECK(std::find(run_cols.begin(), run_cols.end(), "\"uuid\"") != run_cols.end(),
             "{}: runs have no uuid column (schema older than db/migrations/0003)", in);
    const std::string cols = fmt::format("{}", fmt::join(run_cols, ", "));

    // the input's runs, and the liveness of those left `running`
    std::vector<SrcRun> runs;
    std::map<int64_t, std::vector<int64_t>> children;
    {
      sqlite3_stmt* list = out.prepare(
          "SELECT id, uuid, status, parent_id, rerun_of, name, host, pid, boot_id, machine_id, process_start "
          "FROM src.runs ORDER BY id");
      while (sqlite3_step(list) == SQLITE_ROW) {
        SrcRun s{sqlite3_column_int64(list, 0), text(list, 1), text(list, 2), text(list, 5),
                 opt_int(list, 3), opt_int(list, 4), std::nullopt};
        if (s.status == "running") {
          RunProcess p{text(list, 6), sqlite3_column_int64(list, 7), opt_text(list, 8), opt_text(list, 9),
                       opt_int(list, 10)};
          Liveness l = judge_running(p);
          if (l.state == Liveness::unknown) {
            // not judged from here: the input's own lock says whether anyone has it open
            l = src.in_use ? Liveness{Liveness::alive, l.why + ", and another process has the store open"}
                           : Liveness{Liveness::dead, fmt::format("process {} on {} ended without closing the "
                                                                  "run (no process has the store open)", p.pid, p.host)};
          }
          s.live = l;
        }
        if (s.parent) children[*s.parent].push_back(s.id);
        runs.push_back(std::move(s));
      }
      sqlite3_finalize(list);
    }
    r.runs = int64_t(runs.size());
    {
      // a cycle of parents (a store edited by hand) would make every walk of the tree endless
      std::map<int64_t, std::optional<int64_t>> parents;
      for (const auto& s : runs)
        if (opt.only_runs.empty() || opt.only_runs.count(s.id)) parents[s.id] = s.parent;
      const auto cycle = find_parent_cycle(parents);
      if (!cycle.empty())
        fail("{}: {}: its runs do not form a tree, as ltrun writes them (a store edited by hand?); nothing of it "
             "merged", in, parent_cycle_text(cycle));
    }
    auto is_live = [](const SrcRun& s) { return s.live && s.live->state == Liveness::alive; };
    auto is_dead = [](const SrcRun& s) { return s.live && s.live->state == Liveness::dead; };
    // live runs and every run under them (a scan's root while its workers still write)
    std::set<int64_t> held;
    if (!opt.include_running) {
      std::vector<int64_t> stack;
      for (const auto& s : runs)
        if (is_live(s)) stack.push_back(s.id);
      while (!stack.empty()) {
        const int64_t id = stack.back();
        stack.pop_back();
        if (!held.insert(id).second) continue;
        for (int64_t c : children[id]) stack.push_back(c);
      }
    }

    // rows of one run in the tables with a run_id (to tell a partial copy from a complete one)
    std::vector<std::string> row_tables;
    {
      sqlite3_stmt* tl = out.prepare("SELECT name FROM src.sqlite_master WHERE type = 'table' AND name <> 'runs' "
                                     "AND name NOT LIKE 'sqlite_%' ORDER BY name");
      while (sqlite3_step(tl) == SQLITE_ROW) row_tables.push_back(text(tl, 0));
      sqlite3_finalize(tl);
      std::vector<std::string> keep;
      for (const auto& t : row_tables) {
        const auto src_cols = out.columns("src", t), dst_cols = out.columns("main", t);
        if (std::find(src_cols.begin(), src_cols.end(), "run_id") == src_cols.end()) continue;
        LT_CHECK(std::find(dst_cols.begin(), dst_cols.end(), "run_id") != dst_cols.end(),
                 "{}: table {} (with run_id) is missing from {}, or has no run_id there", in, t, out.path());
        keep.push_back(t);
      }
      row_tables = keep;
    }
    auto run_rows = [&](const char* schema, int64_t id) {
      int64_t n = 0;
      for (const auto& t : row_tables)
        n += out.int_query(fmt::format("SELECT count(*) FROM {}.{} WHERE run_id = ?", schema, quoted(t)), {Value(id)});
      return n;
    };

    sqlite3_stmt* find = out.prepare("SELECT id, status FROM main.runs WHERE uuid = ?");
    sqlite3_stmt* copy = out.prepare(fmt::format("INSERT INTO main.runs({0}) SELECT {0} FROM src.runs WHERE id = ?", cols));
    struct Links { int64_t dst; std::optional<int64_t> parent, rerun; bool replaced; };
    std::map<int64_t, int64_t> id_map;   // input id → OUT id, for every input run OUT holds
    std::map<int64_t, Links> moved;      // runs copied now (new, or replacing an unfinished copy)
    std::vector<std::pair<int64_t, std::string>> mark_crashed, mark_partial;  // OUT id, why
    for (const auto& s : runs) {
      if (!opt.only_runs.empty() && !opt.only_runs.count(s.id)) continue;
      if (held.count(s.id)) {
        r.running++;
        if (is_live(s) && !(s.parent && held.count(*s.parent))) {
          std::set<int64_t> seen{s.id};
          std::vector<int64_t> stack(children[s.id]);
          while (!stack.empty()) {
            const int64_t c = stack.back();
            stack.pop_back();
            if (!seen.insert(c).second) continue;
            for (int64_t cc : children[c]) stack.push_back(cc);
          }
          const size_t under = seen.size() - 1;
          r.still_running.push_back(fmt::format("run {} ({}): {}{}", s.id, s.name, s.live->why,
                                                under ? fmt::format("; with the {} run(s) under it", under) : ""));
        }
        continue;
      }
      if (s.uuid.empty()) {  // only a writer that dropped the trigger of 0003 leaves one so
        r.notes.push_back(fmt::format("run {} ({}) has no uuid, so a later merge could not recognise it: "
                                      "not copied", s.id, s.name));
        continue;
      }
      const std::string status = is_dead(s) ? "crashed" : s.status;
      sqlite3_bind_text(find, 1, s.uuid.c_str(), -1, SQLITE_TRANSIENT);
      std::optional<int64_t> dst;
      std::string have;
      if (sqlite3_step(find) == SQLITE_ROW) {
        dst = sqlite3_column_int64(find, 0);
        have = text(find, 1);
      }
      sqlite3_reset(find);
      bool replace = false;
      if (dst) {
        id_map[s.id] = *dst;
        // an unfinished copy (taken while the run ran) whose run has moved on since: it ended
        // (another status), or it is still running or crashed with more rows than the copy
        replace = (have == "running" || have == "crashed") &&
                  ((have != status && status != "running") || run_rows("src", s.id) > run_rows("main", *dst));
        if (!replace) {
          r.already++;
          if (have != status)
            r.notes.push_back(fmt::format("run {} ({}, uuid {}) is already in {} as run {} with status {}; "
                                          "kept that one, not this copy's status {}",
                                          s.id, s.name, s.uuid, out.path(), *dst, have, status));
          continue;
        }
        sqlite3_stmt* up = out.prepare(fmt::format(
            "UPDATE main.runs SET ({0}) = (SELECT {0} FROM src.runs WHERE id = ?) WHERE id = ?", cols));
        sqlite3_bind_int64(up, 1, s.id);
        sqlite3_bind_int64(up, 2, *dst);
        out.step_done(up, fmt::format("completing run {}", *dst));
        sqlite3_finalize(up);
        r.completed++;
      } else {
        sqlite3_bind_int64(copy, 1, s.id);
        out.step_done(copy, fmt::format("copying run {}", s.id));
        dst = sqlite3_last_insert_rowid(out.get());
        id_map[s.id] = *dst;
        if (!r.first_id) r.first_id = *dst;
        r.last_id = *dst;
        r.added++;
      }
      moved[s.id] = {*dst, s.parent, s.rerun, replace};
      if (is_dead(s)) {
        mark_crashed.emplace_back(*dst, s.live->why);
        r.crashed++;
      } else if (is_live(s)) {
        mark_partial.emplace_back(*dst, s.live->why);
        r.partial++;
      }
    }
    sqlite3_finalize(find);
    sqlite3_finalize(copy);
    if (r.running && r.still_running.empty())  // live runs only under each other (a parent cycle)
      for (const auto& s : runs)
        if (is_live(s)) r.still_running.push_back(fmt::format("run {} ({}): {}", s.id, s.name, s.live->why));

    // what Store::open would have marked in the input; a partial copy says so in its error
    const std::string now = utc_timestamp();
    sqlite3_stmt* crash = out.prepare(
        "UPDATE main.runs SET status = 'crashed', error = coalesce(error, ?), finished_at = coalesce(finished_at, ?) "
        "WHERE id = ?");
    for (const auto& [dst, why] : mark_crashed) {
      sqlite3_bind_text(crash, 1, why.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(crash, 2, now.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(crash, 3, dst);
      out.step_done(crash, fmt::format("marking run {} crashed", dst));
    }
    sqlite3_finalize(crash);
    sqlite3_stmt* partial = out.prepare("UPDATE main.runs SET error = ? WHERE id = ? AND error IS NULL");
    for (const auto& [dst, why] : mark_partial) {
      const std::string note = fmt::format(
          "partial copy: ltrun db merge copied this run from {} at {} while it was still running ({}); "
          "merging {} again after the run has ended completes it", in, now, why, in);
      sqlite3_bind_text(partial, 1, note.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(partial, 2, dst);
      out.step_done(partial, fmt::format("noting run {} as a partial copy", dst));
    }
    sqlite3_finalize(partial);

    // parent and rerun links, through the map (a parent may itself have been merged before);
    // a completed copy keeps the link it has when its input's parent is not in OUT
    sqlite3_stmt* link = out.prepare(
        "UPDATE main.runs SET parent_id = coalesce(?1, CASE WHEN ?4 THEN parent_id END), "
        "rerun_of = coalesce(?2, CASE WHEN ?4 THEN rerun_of END) WHERE id = ?3");
    for (const auto& [src_id, l] : moved) {
      auto mapped = [&](const std::optional<int64_t>& v, const char* what) -> std::optional<int64_t> {
        if (!v) return std::nullopt;
        auto it = id_map.find(*v);
        if (it != id_map.end()) return it->second;
        r.notes.push_back(fmt::format("run {}: its {} {} is not in {}{}", src_id, what, *v, out.path(),
                                      held.count(*v) ? " (still running, not copied)" : "; the link is dropped"));
        return std::nullopt;
      };
      const auto parent = mapped(l.parent, "parent"), rerun = mapped(l.rerun, "rerun_of run");
      if (parent) sqlite3_bind_int64(link, 1, *parent); else sqlite3_bind_null(link, 1);
      if (rerun) sqlite3_bind_int64(link, 2, *rerun); else sqlite3_bind_null(link, 2);
      sqlite3_bind_int64(link, 3, l.dst);
      sqlite3_bind_int(link, 4, l.replaced ? 1 : 0);
      out.step_done(link, fmt::format("linking run {}", l.dst));
    }
    sqlite3_finalize(link);

    // every other table with a run_id: rows of the runs copied now, run_id mapped; a completed
    // copy's old rows go first
    out.exec("CREATE TEMP TABLE IF NOT EXISTS merge_ids(src INTEGER PRIMARY KEY, dst INTEGER NOT NULL, "
             "replaced INTEGER NOT NULL)");
    out.exec("DELETE FROM temp.merge_ids");
    sqlite3_stmt* ins = out.prepare("INSERT INTO temp.merge_ids(src, dst, replaced) VALUES (?, ?, ?)");
    for (const auto& [src_id, l] : moved) {
      sqlite3_bind_int64(ins, 1, src_id);
      sqlite3_bind_int64(ins, 2, l.dst);
      sqlite3_bind_int(ins, 3, l.replaced ? 1 : 0);
      out.step_done(ins, "mapping run ids");
    }
    sqlite3_finalize(ins);
    for (const auto& t : row_tables) {
      out.exec(fmt::format("DELETE FROM main.{} WHERE run_id IN (SELECT dst FROM temp.merge_ids WHERE replaced)",
                           quoted(t)));
      const auto c = common(out, t, {"run_id"});
      std::vector<std::string> sel;
      for (const auto& x : c) sel.push_back("s." + x);
      out.exec(fmt::format("INSERT INTO main.{0}(run_id{1}{2}) SELECT m.dst{1}{3} FROM src.{0} s "
                           "JOIN temp.merge_ids m ON m.src = s.run_id",
                           quoted(t), c.empty() ? "" : ", ", fmt::join(c, ", "), fmt::join(sel, ", ")));
      r.rows += sqlite3_changes(out.get());
    }
    copy_sources(out, in);
    if (!src.unchanged()) throw Changed(fmt::format("{}: changed while it was read", in));
    out.exec("COMMIT");
  } catch (...) {
    sqlite3_exec(out.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_exec(out.get(), "DETACH DATABASE src", nullptr, nullptr, nullptr);
    throw;
  }
  out.exec("DETACH DATABASE src");
  return r;
}

// One input: in place (as Source decides), or from a private copy when SQLite cannot open
// or read it in place; again when it changed while read immutable or copied.
MergeInput merge_input(const std::string& out, const std::string& in, const MergeOptions& opt) {
  for (int attempt = 1;; attempt++) {
    try {
      // each attempt's Source and Db close before the next one opens
      auto merge_from = [&](bool copy) {
        Source src;
        src.open(in, copy);
        Db db = open_out(out);
        return merge_one(db, src, opt);
      };
      std::exception_ptr in_place;
      try {
        return merge_from(false);
      } catch (const CannotReadInPlace&) {
        // a read-only -shm that needs recovery, a hot journal in a read-only folder, ...
        in_place = std::current_exception();
      }
      try {
        return merge_from(true);
      } catch (const CannotReadInPlace&) {
        std::rethrow_exception(in_place);  // the copy fails too: the first error says more
      }
    } catch (const Changed& e) {
      if (attempt >= kAttempts)
        fail("{} ({} times; is a writer checkpointing it? merge it when the writer is done)", e.what(), attempt);
    }
  }
}

}  // namespace

std::vector<int64_t> find_parent_cycle(const std::map<int64_t, std::optional<int64_t>>& parents) {
  // 0: not seen, 1: on the chain being followed, 2: known to end at a top run
  std::map<int64_t, int> state;
  for (const auto& [start, unused] : parents) {
    if (state[start]) continue;
    std::vector<int64_t> chain;
    std::optional<int64_t> at = start;
    while (at && parents.count(*at) && state[*at] == 0) {
      state[*at] = 1;
      chain.push_back(*at);
      at = parents.at(*at);
    }
    if (at && parents.count(*at) && state[*at] == 1) {  // back on this chain: a cycle from *at
      std::vector<int64_t> cycle(std::find(chain.begin(), chain.end(), *at), chain.end());
      return cycle;
    }
    for (int64_t c : chain) state[c] = 2;
  }
  return {};
}

std::string parent_cycle_text(const std::vector<int64_t>& cycle) {
  if (cycle.size() == 1) return fmt::format("run {} is its own parent (its parent_id is its own id)", cycle[0]);
  std::string path;
  for (int64_t id : cycle) path += fmt::format("{} -> ", id);
  return fmt::format("runs {}{} form a cycle of parents (each one's parent_id is the next)", path, cycle[0]);
}

std::vector<MergeInput> merge_stores(const std::string& out, const std::vector<std::string>& inputs,
                                     const MergeOptions& options,
                                     const std::function<void(size_t, size_t)>& progress) {
  LT_CHECK(!inputs.empty(), "db merge: no input stores given (ltrun db merge OUT.db IN.db ...)");
  for (const auto& in : inputs) {
    LT_CHECK(file_exists(in), "db merge: input {} does not exist", in);
    std::error_code ec;
    LT_CHECK(!(file_exists(out) && std::filesystem::equivalent(in, out, ec)),
             "db merge: input {} is the output store {} itself", in, out);
  }
  const bool created = !file_exists(out);
  Store::open(out);  // create or migrate OUT (then closed: the merge writes through its own connection)
  std::vector<MergeInput> report;
  try {
    for (size_t i = 0; i < inputs.size(); i++) {
      report.push_back(merge_input(out, inputs[i], options));
      if (progress) progress(i + 1, inputs.size());
    }
  } catch (...) {
    if (created && report.empty())  // nothing merged: no empty store left behind
      for (const char* suffix : {"", "-wal", "-shm"}) std::remove((out + suffix).c_str());
    throw;
  }
  return report;
}

}  // namespace ltrun::store
