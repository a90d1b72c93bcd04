// runtime/cli/replay_sandbox.cpp: `ltrun rerun --sandbox` (see replay_sandbox.h): the mount
// plan, bubblewrap's command line, the private store seeded with the run, and the merge of
// the new run's rows (and nothing else the replay may have written there) into the user's.
#include "runtime/cli/replay_sandbox.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <pwd.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "runtime/cli/cli.h"
#include "runtime/core/env.h"
#include "runtime/core/error.h"
#include "runtime/core/fs.h"
#include "runtime/core/interrupt.h"
#include "runtime/core/process.h"
#include "runtime/sandbox/bounded.h"
#include "runtime/sandbox/limits.h"
#include "runtime/store/capture.h"
#include "runtime/store/compare.h"
#include "runtime/store/merge.h"
#include "runtime/store/sqlite.h"
#include "runtime/store/store.h"

extern char** environ;

namespace ltrun::cli {
namespace {

constexpr const char* kBwrap = "/usr/bin/bwrap";
constexpr int64_t kTmpBytes = int64_t(1) << 30, kShmBytes = int64_t(256) << 20;  // its private /tmp, /dev/shm
// what the replay's environment keeps of ours: numerics and threading (a replay must compute
// as the original did), the GPU's selection, ltrun's own switches; never tokens or paths of home
constexpr const char* kEnvPrefixes[] = {"OPENBLAS_", "OMP_", "MKL_", "GOMP_", "KMP_", "CUDA_", "NVIDIA_",
                                        "MALLOC_", "GLIBC_TUNABLES", "LANG", "LC_", "TZ", "LTRUN_ATTENTION",
                                        "LTRUN_CAPTURE", "LTRUN_MODELS", "LTRUN_DATA"};

std::string real_path(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) ? std::string(buf) : std::string();
}

bool inside(const std::string& p, const std::string& dir) {
  if (dir == "/") return true;
  return p == dir || (p.size() > dir.size() && p.compare(0, dir.size(), dir) == 0 && p[dir.size()] == '/');
}

// an absolute path with "." and ".." parts and repeated slashes resolved, without the file system
std::string normalized(const std::string& abs) {
  std::vector<std::string> parts;
  for (size_t i = 0; i <= abs.size();) {
    const size_t e = std::min(abs.find('/', i), abs.size());
    const std::string part = abs.substr(i, e - i);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    i = e + 1;
  }
  std::string out;
  for (const auto& p : parts) out += "/" + p;
  return out.empty() ? "/" : out;
}

struct Mount {
  enum Kind { ro, rw, dev, link } kind;
  std::string src, dst, what;
};

// /bin, /sbin, /lib... as on the host: links into /usr (merged /usr) or read-only binds
void add_system_dirs(std::vector<Mount>& m) {
  m.push_back({Mount::ro, "/usr", "/usr", "system programs and libraries"});
  for (const char* d : {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
    char target[4096];
    const ssize_t n = ::readlink(d, target, sizeof target - 1);
    struct stat st;
    if (n > 0) m.push_back({Mount::link, std::string(target, size_t(n)), d, "as on this machine"});
    else if (::stat(d, &st) == 0 && S_ISDIR(st.st_mode)) m.push_back({Mount::ro, d, d, "system libraries"});
  }
  // the dynamic loader's cache, and Debian's alternatives (libblas.so.3 and others link there)
  for (const char* f : {"/etc/ld.so.cache", "/etc/alternatives"})
    if (file_exists(f)) m.push_back({Mount::ro, f, f, "what the dynamic loader reads"});
  // the CPUs' topology: LibTorch sizes its thread pools from it, and so its sums' order
  if (file_exists("/sys/devices/system/cpu"))
    m.push_back({Mount::ro, "/sys/devices/system/cpu", "/sys/devices/system/cpu", "the CPUs' topology"});
}

bool under_system_dirs(const std::string& p) {
  for (const char* d : {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"})
    if (inside(p, d)) return true;
  return false;
}

// ltrun's executable and every shared library this process loaded from outside the system
// folders (a LibTorch unpacked elsewhere, a build tree's): one read-only bind each
void add_own_files(std::vector<Mount>& m) {
  std::set<std::string> files{real_path(self_executable())};
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    if (path.find(" (deleted)") != std::string::npos) continue;
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) files.insert(real_path(path));
  }
  for (const auto& f : files)
    if (!f.empty() && !under_system_dirs(f) && !inside(f, "/dev") && !inside(f, "/proc") && !inside(f, "/sys"))
      m.push_back({Mount::ro, f, f, f == real_path(self_executable()) ? "ltrun itself" : "a library ltrun loaded"});
}

// The user's home as the passwd entry gives it (never $HOME alone: unset or pointed elsewhere,
// it would hide the real one), and $HOME too when it names another folder.
std::vector<std::string> homes() {
  std::vector<std::string> out;
  if (const passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_dir && *pw->pw_dir) out.push_back(real_path(pw->pw_dir));
  if (const char* h = std::getenv("HOME"); h && *h) out.push_back(real_path(h));
  out.erase(std::remove_if(out.begin(), out.end(), [](const std::string& h) { return h.empty() || h == "/"; }),
            out.end());
  return out;
}

// Key material by name (ssh, gpg, cloud and TLS keys), or by a private key's PEM line in the
// first 64 KiB of a regular file; "" when none is seen.
std::string key_material(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  for (const char* k : {".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".netrc", ".pgpass", ".git-credentials"})
    if (name == k) return name;
  for (const char* k : {"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk", "authorized_keys",
                        "known_hosts", "credentials"})
    if (name == k) return name;
  for (const char* ext : {".pem", ".key", ".p12", ".pfx", ".kdbx", ".gpg", ".asc"})
    if (name.size() > std::strlen(ext) && name.compare(name.size() - std::strlen(ext), std::string::npos, ext) == 0)
      return name;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  std::ifstream f(path, std::ios::binary);
  std::string head(65536, '\0');
  f.read(head.data(), std::streamsize(head.size()));
  head.resize(size_t(f.gcount()));
  if (head.find("PRIVATE KEY-----") != std::string::npos) return name + " (a private key)";
  return "";
}

// Why an input the run declares is not mounted ("" when it is): only inputs whose content is
// what the run recorded (nothing the author did not already have), or with
// --allow-changed-inputs changed ones below the models or data folder the user named; never
// the root, a system or host-state folder, a folder that holds a home, the store or this
// working folder, or key material; nor a file in a home named by its absolute path. `files`:
// what of it is mounted (a data file itself; a model folder's files as its manifest lists them,
// the only ones its hash covers), each resolved, each checked as the folder is.
std::string not_mountable(const ReplayInput& in, const std::string& src, bool allow_changed,
                          const std::vector<std::string>& protect, const std::vector<std::string>& home,
                          std::vector<std::pair<std::string, std::string>>& files) {
  if (in.found_at.empty()) return "missing here";
  if (!in.same && !(allow_changed && (in.root == "models" || in.root == "data")))
    return allow_changed ? "changed, and not below the models or data folder" : "changed";
  if (src.empty()) return "cannot be resolved";
  struct stat st;
  if (::stat(src.c_str(), &st) != 0) return "cannot be read";
  if (in.kind == "model" ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
    return in.kind == "model" ? "not a folder" : "not a regular file";
  auto refused = [&](const std::string& p, bool named_by_path) -> std::string {
    for (const char* d : {"/proc", "/sys", "/dev", "/etc", "/run", "/boot", "/var/run"})
      if (inside(p, d)) return fmt::format("under {}", d);
    for (const auto& h : home)
      if (inside(h, p)) return fmt::format("holds the home {}", h);
    for (const auto& q : protect)
      if (!q.empty() && inside(q, p)) return fmt::format("holds {}", q);
    if (const std::string k = key_material(p); !k.empty()) return "key material: " + k;
    // a file named by its absolute path (read through Lua's io, say) in a home: the author's
    // dotfiles and keys are no data of a study; inputs below the models, data or working folder
    // are mounted wherever those lie
    if (named_by_path)
      for (const auto& h : home)
        if (inside(p, h)) return "in the home " + h;
    return "";
  };
  if (std::string why = refused(src, in.root.empty()); !why.empty()) return why;
  if (in.kind != "model") {
    files = {{src, ""}};
    return "";
  }
  // a folder holding key material (.ssh, id_rsa, ...) is refused whole, hashed or not
  for (const auto& e : ltrun::fs::list(src))
    if (const std::string k = key_material(src + "/" + e); !k.empty()) return "holds key material: " + k;
  std::string manifest;
  try {
    manifest = store::folder_manifest(src, nullptr);
  } catch (const std::exception& e) {
    return std::string("cannot be read: ") + e.what();
  }
  for (size_t at = 0; at < manifest.size();) {
    const size_t nl = std::min(manifest.find('\n', at), manifest.size());
    const std::string name = manifest.substr(at, manifest.find('\t', at) - at);
    at = nl + 1;
    const std::string file = real_path(src + "/" + name);  // a link to elsewhere: where it points
    if (file.empty()) return fmt::format("its file {} cannot be resolved", name);
    if (std::string why = refused(file, true); !why.empty()) return fmt::format("its file {}: {}", name, why);
    files.emplace_back(file, name);
  }
  return "";
}

// work: a tmpfs of disk_mb (its working folder, in memory: a quota the host disk never sees);
// store_dir: a tmpfs too (SQLite's -wal and -shm), with the one store file bound into it.
std::vector<std::string> bwrap_argv(const std::vector<Mount>& mounts, const std::string& work,
                                    const std::string& store_dir, int64_t disk_mb) {
  // no capabilities (run as root, bwrap keeps them: a remount could make a read-only bind
  // writable) and no nested user namespaces (kernel surface a replay does not need)
  std::vector<std::string> a{kBwrap, "--die-with-parent", "--new-session", "--unshare-all", "--unshare-user",
                             "--cap-drop", "ALL", "--disable-userns", "--clearenv"};
  // the fixed mounts first (the root is an empty tmpfs of bwrap's), then ours in order: a
  // bind below another one comes after it. tmpfs files are memory: each bounded
  const std::string disk = std::to_string(disk_mb << 20);
  a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev", "--size", std::to_string(kShmBytes), "--tmpfs", "/dev/shm",
                     "--size", std::to_string(kTmpBytes), "--tmpfs", "/tmp", "--size", disk, "--tmpfs", work,
                     "--size", disk, "--tmpfs", store_dir});
  for (const auto& m : mounts) {
    switch (m.kind) {
      case Mount::ro: a.insert(a.end(), {"--ro-bind", m.src, m.dst}); break;
      case Mount::rw: a.insert(a.end(), {"--bind", m.src, m.dst}); break;
      case Mount::dev: a.insert(a.end(), {"--dev-bind", m.src, m.dst}); break;
      case Mount::link: a.insert(a.end(), {"--symlink", m.src, m.dst}); break;
    }
  }
  a.insert(a.end(), {"--remount-ro", "/", "--chdir", work});
  return a;
}

void set_env(std::vector<std::string>& a, const std::string& k, const std::string& v) {
  a.insert(a.end(), {"--setenv", k, v});
}

// Whether uid 65534 can read each path (a folder: enter and list it): asked of a child that
// has become that user, so the answer is the kernel's.
std::vector<bool> readable_by_nobody(const std::vector<std::string>& paths) {
  int fds[2];
  LT_CHECK(::pipe2(fds, O_CLOEXEC) == 0, "rerun --sandbox: pipe: {}", std::strerror(errno));
  const pid_t pid = ::fork();
  LT_CHECK(pid >= 0, "rerun --sandbox: fork: {}", std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(1);
    for (const auto& p : paths) {
      const char ok = ::access(p.c_str(), R_OK) == 0 ? 1 : 0;
      if (::write(fds[1], &ok, 1) != 1) ::_exit(1);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::vector<bool> out;
  char c;
  while (out.size() < paths.size() && ::read(fds[0], &c, 1) == 1) out.push_back(c == 1);
  ::close(fds[0]);
  int ws = 0;
  ::waitpid(pid, &ws, 0);
  out.resize(paths.size(), false);
  return out;
}

// Which bound, by the words of the error it left in its run: a refused allocation (RLIMIT_AS),
// fork (RLIMIT_NPROC) or write (a full tmpfs); "" when none.
std::string bound_in_error(const std::string& err, const sandbox::CommandBounds& b) {
  auto has = [&](const char* s) { return err.find(s) != std::string::npos; };
  if (has("bad_alloc") || has("can't allocate memory") || has("not enough memory") || has("Cannot allocate memory") ||
      has("out of memory"))
    return fmt::format("its memory bound (--memory-mb {}): {}", b.memory_mb, err.substr(0, err.find('\n')));
  if (has("Resource temporarily unavailable"))
    return fmt::format("its process bound (--nproc {}): {}", b.nproc, err.substr(0, err.find('\n')));
  if (has("No space left on device") || has("File too large"))
    return fmt::format("its disk bound (--disk-mb {}): {}", b.disk_mb, err.substr(0, err.find('\n')));
  return "";
}

// The new runs in the private store: the one top run the replay made (a rerun of `seeded`,
// with an id past it) and the runs under it, by a walk that visits each run once. Anything
// else the replay wrote there (it could write that file as it liked) is left out.
std::set<int64_t> new_runs(store::Store& st, int64_t seeded) {
  const store::Table tops = st.query("SELECT id FROM runs WHERE id > ? AND parent_id IS NULL AND rerun_of = ?",
                                     {store::Value(seeded), store::Value(seeded)});
  LT_CHECK(tops.rows.size() <= 1, "rerun --sandbox: the replay's store holds {} new top runs, where a replay makes "
           "one (written there by the replayed code?): nothing of it merged", tops.rows.size());
  if (tops.rows.empty()) return {};
  std::set<int64_t> ids{std::get<int64_t>(tops.rows[0][0])};
  std::vector<int64_t> todo(ids.begin(), ids.end());
  while (!todo.empty()) {
    const int64_t id = todo.back();
    todo.pop_back();
    for (const auto& row : st.query("SELECT id FROM runs WHERE parent_id = ? AND id > ?",
                                    {store::Value(id), store::Value(seeded)}).rows)
      if (ids.insert(std::get<int64_t>(row[0])).second) todo.push_back(std::get<int64_t>(row[0]));
  }
  return ids;
}

// The private store's files as the replay left them: plain files (not links it could have
// planted to a file of ours), else the merge would read what they point to.
void check_private_store(const std::string& db) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    struct stat st;
    const std::string f = db + suffix;
    if (::lstat(f.c_str(), &st) != 0) {
      LT_CHECK(*suffix, "rerun --sandbox: the replay's store {} is gone: nothing to merge", f);
      continue;
    }
    LT_CHECK(S_ISREG(st.st_mode) && st.st_nlink == 1,
             "rerun --sandbox: the replay's store file {} is no longer a plain file (replaced by the replay?): "
             "nothing of it merged", f);
  }
}

}  // namespace

int rerun_sandboxed(const ReplayPlan& p) {
  LT_CHECK(::access(kBwrap, X_OK) == 0, "rerun --sandbox needs bubblewrap ({}), which scripts/setup installs", kBwrap);
  LT_CHECK(::access("/usr/bin/prlimit", X_OK) == 0, "rerun --sandbox needs /usr/bin/prlimit (util-linux) for its "
           "bounds");
  // Ctrl-C reaches us, not the replay (a session of its own): it is ended below, and the
  // private folder removed
  install_interrupt_handler(nullptr);
  const std::string db = absolute_path(p.db), cwd = real_path(".");
  const std::vector<std::string> devs = ltrun::fs::list("/dev");
  const bool gpu = p.device != "cpu" &&
                   std::any_of(devs.begin(), devs.end(), [](const std::string& e) { return e.rfind("nvidia", 0) == 0; });
  sandbox::CommandBounds bounds = p.bounds;
  bounds.address_space = !gpu;  // CUDA reserves far more address space than it uses
  sandbox::BoundedCommand command(bounds);

  // the private folder: the replay's store (its working folder is a tmpfs of the sandbox's)
  std::string priv = (std::filesystem::temp_directory_path() / "ltrun-replay-XXXXXX").string();
  LT_CHECK(::mkdtemp(priv.data()), "rerun --sandbox: cannot make a private folder {}: {}", priv, std::strerror(errno));
  priv = real_path(priv);
  struct Cleanup {
    std::string dir;
    ~Cleanup() { ltrun::fs::remove_tree(dir); }
  } cleanup{priv};
  const std::string work = priv + "/work", store_dir = priv + "/store", priv_db = store_dir + "/runs.db";
  LT_CHECK(::mkdir(work.c_str(), 0700) == 0 && ::mkdir(store_dir.c_str(), 0700) == 0,
           "rerun --sandbox: cannot make {} and {}: {}", work, store_dir, std::strerror(errno));

  // the run, with its rows and sources (and nothing else of the user's store), into the private one
  std::string uuid;
  {
    auto st = store::Store::open_readonly(db);
    uuid = store::to_text(st->query("SELECT uuid FROM runs WHERE id = ?", {store::Value(p.run)}).rows.at(0).at(0));
  }
  store::MergeOptions seed_opt;
  seed_opt.only_runs = {p.run};
  seed_opt.include_running = true;
  store::merge_stores(priv_db, {db}, seed_opt);
  int64_t seeded = 0;
  {
    auto st = store::Store::open(priv_db);
    const store::Table t = st->query("SELECT id FROM runs WHERE uuid = ?", {store::Value(uuid)});
    LT_CHECK(!t.rows.empty(), "rerun --sandbox: run {} was not copied into the replay's store {}", p.run, priv_db);
    seeded = std::get<int64_t>(t.rows[0][0]);
    // what a replay reads of its run is the row, its sources and its inputs: the rest (metrics,
    // params, artifact files...) is not the replay's to see
    for (const auto& row : st->query("SELECT m.name FROM sqlite_master m WHERE m.type = 'table' AND m.name NOT IN "
                                     "('run_sources', 'run_inputs') AND EXISTS (SELECT 1 FROM "
                                     "pragma_table_info(m.name) WHERE name = 'run_id')").rows) {
      std::string q = "\"";
      for (char c : store::to_text(row[0])) q += c == '"' ? std::string("\"\"") : std::string(1, c);
      st->query("DELETE FROM " + q + "\" WHERE run_id = ?", {store::Value(seeded)});
    }
    st->query("PRAGMA journal_mode=DELETE");  // one file: the replay gets that file alone
  }
  for (const char* suffix : {"-wal", "-shm"}) std::remove((priv_db + suffix).c_str());
  if (command.as_nobody())  // its one writable file is the store (its folders are tmpfs of its own)
    LT_CHECK(::chown(priv_db.c_str(), 65534, 65534) == 0 && ::chmod(priv.c_str(), 0711) == 0 &&
                 ::chmod(store_dir.c_str(), 0711) == 0,
             "rerun --sandbox: giving {} to uid 65534: {}", priv_db, std::strerror(errno));

  // what it sees
  std::vector<Mount> mounts;
  add_system_dirs(mounts);
  if (p.device != "cpu")  // the GPUs' device files, where there are any
    for (const auto& e : ltrun::fs::list("/dev"))
      if (e.rfind("nvidia", 0) == 0 && !ltrun::fs::is_dir("/dev/" + e))
        mounts.push_back({Mount::dev, "/dev/" + e, "/dev/" + e, "a GPU device"});
  add_own_files(mounts);
  const std::string lib = real_path(capture_lib_dir());
  if (!lib.empty() && !under_system_dirs(lib)) mounts.push_back({Mount::ro, lib, lib, "ltrun's Lua library"});
  const char* share = std::getenv("LTRUN_SHARE_DIR");
  const std::string share_dir = share && *share ? real_path(share) : "";
  if (!share_dir.empty()) mounts.push_back({Mount::ro, share_dir, share_dir, "ltrun's data (LTRUN_SHARE_DIR)"});
  mounts.push_back({Mount::rw, priv_db, priv_db, "its own store, holding only the run it replays"});
  std::vector<std::string> skipped;
  std::vector<Mount> inputs;
  const std::vector<std::string> home = homes();
  const std::vector<std::string> protect{real_path(dir_name(db)), cwd, priv};
  for (const auto& in : p.inputs) {
    const std::string src = in.found_at.empty() ? "" : real_path(in.read_from.empty() ? in.found_at : in.read_from);
    std::vector<std::pair<std::string, std::string>> files;  // resolved source, name below the folder
    const std::string why = not_mountable(in, src, p.allow_changed, protect, home, files);
    // where the replay looks for it: the same path, relative ones below its working folder
    const std::string dst = in.found_at.empty() ? ""
                            : normalized(in.found_at[0] == '/' ? in.found_at : work + "/" + in.found_at);
    std::string bad_dst;
    for (const char* d : {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/proc", "/sys",
                          "/dev"})
      if (!dst.empty() && inside(dst, d)) bad_dst = d;
    if (!dst.empty() && (dst == "/" || dst == "/tmp" || dst == work || inside(dst, store_dir))) bad_dst = dst;
    const std::string what = fmt::format("{} {}", in.kind, in.name);
    if (!why.empty() || !bad_dst.empty()) {
      skipped.push_back(fmt::format("{} ({})", what, !why.empty() ? why : "it would lie over " + bad_dst));
      continue;
    }
    const std::string how = in.same ? " (as recorded)" : " (changed: allowed)";
    if (in.kind != "model") {
      inputs.push_back({Mount::ro, src, dst, what + how});
      continue;
    }
    // a model folder: exactly the files its hash covers, one bind each; nothing else of the folder
    for (const auto& [file, name] : files)
      inputs.push_back({Mount::ro, file, dst + "/" + name, fmt::format("{}{}, file {}", what, how, name)});
  }
  std::sort(inputs.begin(), inputs.end(), [](const Mount& a, const Mount& b) { return a.dst < b.dst; });
  mounts.insert(mounts.end(), inputs.begin(), inputs.end());

  // as uid 65534 bwrap reaches a source only through folders anyone may enter: an input that
  // lies elsewhere is not mounted (and said so); ltrun's own files must be reachable
  if (command.as_nobody()) {
    std::vector<std::string> srcs;
    for (const auto& m : mounts) srcs.push_back(m.kind == Mount::ro || m.kind == Mount::rw ? m.src : "/");
    const std::vector<bool> ok = readable_by_nobody(srcs);
    std::vector<Mount> kept;
    for (size_t i = 0; i < mounts.size(); i++) {
      if (ok[i]) {
        kept.push_back(mounts[i]);
        continue;
      }
      LT_CHECK(std::find_if(inputs.begin(), inputs.end(), [&](const Mount& in) { return in.dst == mounts[i].dst; }) !=
                   inputs.end(),
               "rerun --sandbox: {} ({}) cannot be read by uid 65534, which the replay runs as here (root, and no "
               "cgroup v2 to bound its processes otherwise): make it readable by others", mounts[i].src, mounts[i].what);
      skipped.push_back(fmt::format("{} (uid 65534, which the replay runs as, cannot read {})", mounts[i].what,
                                    mounts[i].src));
    }
    mounts = kept;
  }

  std::string list;
  for (const auto& m : mounts) {
    const char* kind = m.kind == Mount::ro ? "read-only" : m.kind == Mount::rw ? "writable " :
                       m.kind == Mount::dev ? "device   " : "link     ";
    list += m.src == m.dst || m.kind == Mount::link
                ? fmt::format("  {}  {}{}  ({})\n", kind, m.dst, m.kind == Mount::link ? " -> " + m.src : "", m.what)
                : fmt::format("  {}  {} at {}  ({})\n", kind, m.src, m.dst, m.what);
  }
  for (const auto& s : skipped) list += "  not mounted: " + s + "\n";
  std::fprintf(stderr,
               "ltrun rerun: in a sandbox (bubblewrap): no network, no home, nothing of this machine but:\n%s"
               "  private    %s: its working folder, empty (its current folder and HOME; %lld MiB at most, in "
               "memory); /tmp (1 GiB at most), /dev/shm (256 MiB); /proc and /dev (its own)\n"
               "  bounds     %s\n"
               "then only the new run's rows are merged into %s\n",
               escape_controls(list, true).c_str(), work.c_str(), (long long)bounds.disk_mb,
               command.describe().c_str(), db.c_str());

  std::vector<std::string> argv = bwrap_argv(mounts, work, store_dir, bounds.disk_mb);
  set_env(argv, "PATH", "/usr/local/bin:/usr/bin:/bin");
  set_env(argv, "HOME", work);
  set_env(argv, "TMPDIR", "/tmp");
  set_env(argv, "LTRUN_SANDBOXED", "1");
  if (!lib.empty()) set_env(argv, "LTRUN_LIB", lib);
  if (!share_dir.empty()) set_env(argv, "LTRUN_SHARE_DIR", share_dir);
  for (char** e = environ; *e; e++) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    for (const char* pre : kEnvPrefixes)
      if (kv.compare(0, std::strlen(pre), pre) == 0) set_env(argv, kv.substr(0, eq), kv.substr(eq + 1));
  }
  // lt.sandbox's seccomp filter (runtime/sandbox/limits.h): no mounts, namespaces, ptrace, bpf,
  // key ring or io_uring inside the replay either. bwrap reads it from an inherited fd: a memfd
  // without close-on-exec, closed here once bwrap has started.
  const std::string& bpf = sandbox::detail::seccomp_bpf();
  const int seccomp_fd = ::memfd_create("ltrun-replay-seccomp", 0);
  LT_CHECK(seccomp_fd >= 0, "rerun --sandbox: memfd_create: {}", std::strerror(errno));
  struct CloseFd {
    int fd;
    ~CloseFd() { ::close(fd); }
  } close_seccomp{seccomp_fd};
  for (size_t off = 0; off < bpf.size();) {
    const ssize_t w = ::write(seccomp_fd, bpf.data() + off, bpf.size() - off);
    LT_CHECK(w > 0, "rerun --sandbox: writing the seccomp filter: {}", std::strerror(errno));
    off += size_t(w);
  }
  ::lseek(seccomp_fd, 0, SEEK_SET);
  argv.insert(argv.end(), {"--seccomp", std::to_string(seccomp_fd)});
  std::vector<std::string> inner{real_path(self_executable()), "--db", priv_db, "--device", p.device};
  if (p.seed) inner.insert(inner.end(), {"--seed", std::to_string(*p.seed)});
  inner.push_back("rerun");
  if (!p.models.empty()) inner.insert(inner.end(), {"--models", p.models});
  if (!p.data.empty()) inner.insert(inner.end(), {"--data", p.data});
  inner.insert(inner.end(), {std::to_string(seeded), "--yes"});
  if (p.allow_changed) inner.push_back("--allow-changed-inputs");
  inner.insert(inner.end(), p.rerun_args.begin(), p.rerun_args.end());
  argv.push_back("--");
  const auto wrapped = command.wrap(inner);
  argv.insert(argv.end(), wrapped.begin(), wrapped.end());

  if (interrupt_requested()) fail("rerun --sandbox: interrupted before the replay started");
  std::vector<std::string> env;
  for (char** e = environ; *e; e++) env.emplace_back(*e);
  const sandbox::CommandExit st = command.run(argv, env);
  if (st.interrupted) fail("rerun --sandbox: interrupted: the replay was ended and nothing of it merged");
  const std::string bound = sandbox::ended_by(st, bounds);
  if (st.signal && !bound.empty()) fail("rerun --sandbox: the replay was ended by {}; nothing merged", bound);
  if (st.signal) fail("rerun --sandbox: bubblewrap ended by signal {}; nothing merged", st.signal);
  if (!bound.empty()) std::fprintf(stderr, "ltrun rerun: the replay was ended by %s\n", bound.c_str());

  // only the new run's rows go into the user's store, and only once the store the replay wrote
  // is known to be data (its schema the store's own: no view or trigger of the replay's)
  check_private_store(priv_db);
  std::set<int64_t> ids;
  std::vector<std::string> uuids;
  {
    store::open_as_data(priv_db, "rerun --sandbox: the replay's store " + priv_db, int64_t(64) << 20, {},
                        "; nothing of it merged");
    auto ps = store::Store::open_readonly(priv_db);
    ids = new_runs(*ps, seeded);
    for (int64_t id : ids)
      uuids.push_back(
          store::to_text(ps->query("SELECT uuid FROM runs WHERE id = ?", {store::Value(id)}).rows.at(0).at(0)));
  }
  if (ids.empty()) {
    std::fprintf(stderr, "ltrun rerun: the replay recorded no run (bubblewrap or ltrun exited %d before it began%s)\n",
                 st.code, bound.empty() ? "" : ", or was ended before its store was written");
    return st.code ? st.code : kExitFailed;
  }
  {
    auto us = store::Store::open_readonly(db);
    for (const auto& u : uuids)
      LT_CHECK(!u.empty() && us->query("SELECT 1 FROM runs WHERE uuid = ?", {store::Value(u)}).rows.empty(),
               "rerun --sandbox: the replay's store names a run uuid '{}' that {} already holds (or none): nothing "
               "of it merged", escape_controls(u, false), db);
  }
  store::MergeOptions mo;
  mo.only_runs = ids;
  mo.as_data = true;
  const auto merged = store::merge_stores(db, {priv_db}, mo).at(0);
  int64_t new_run = 0, artifacts_here = 0;
  {
    // the merge copied the new runs alone, so their link to the original (which it did not
    // copy: its copy there was the replay's to change) is set here
    auto us = store::Store::open(db);
    const store::Table t = us->query("SELECT id FROM runs WHERE uuid = ?", {store::Value(uuids.front())});
    LT_CHECK(!t.rows.empty(), "rerun --sandbox: the replay's run was not merged into {}", db);
    new_run = std::get<int64_t>(t.rows[0][0]);
    us->query("UPDATE runs SET rerun_of = ? WHERE id = ?", {store::Value(p.run), store::Value(new_run)});
    for (const auto& u : uuids)
      artifacts_here += std::get<int64_t>(us->query(
          "SELECT count(*) FROM artifacts a JOIN runs r ON r.id = a.run_id WHERE r.uuid = ? AND "
          "(a.path = ? OR substr(a.path, 1, ?) = ?)",
          {store::Value(u), store::Value(priv), store::Value(int64_t(priv.size() + 1)), store::Value(priv + "/")})
                                                    .rows.at(0).at(0));
    std::fprintf(stderr, "ltrun rerun: merged the replay's run as run %lld (%lld run(s), %lld rows) into %s\n"
                 "ltrun rerun: %s\n", (long long)new_run, (long long)merged.added, (long long)merged.rows, db.c_str(),
                 replay_line(*us, p.run, new_run, p.tolerance).c_str());
    // an allocation, a fork or a write refused inside shows only in the run's own error
    const std::string err = store::to_text(us->query("SELECT error FROM runs WHERE id = ?",
                                                     {store::Value(new_run)}).rows.at(0).at(0));
    const std::string inner_bound = bound_in_error(err, bounds);
    if (bound.empty() && !inner_bound.empty())
      std::fprintf(stderr, "ltrun rerun: the replay failed at %s\n", inner_bound.c_str());
  }
  if (artifacts_here)  // they named files of its working folder, which ended with it
    std::fprintf(stderr, "ltrun rerun: the replay's %lld artifact(s) were written in its working folder, which ended "
                 "with it (a tmpfs of the sandbox's); their rows name files that are gone\n", (long long)artifacts_here);
  return st.code;
}

}  // namespace ltrun::cli
