// runtime/core/fs.cpp: folders for studies without a shell (see fs.h).
#include "runtime/core/fs.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/core/error.h"

namespace ltrun::fs {
namespace sfs = std::filesystem;
namespace {
sfs::path normal(const std::string& path) {  // "a//b/./c/" → "a/b/c"
  sfs::path p = sfs::path(path).lexically_normal();
  if (p.filename().empty() && p.has_parent_path() && p != p.root_path()) p = p.parent_path();
  return p;
}
}  // namespace

bool exists(const std::string& path) {
  std::error_code ec;
  return sfs::symlink_status(path, ec).type() != sfs::file_type::not_found && !ec;
}

bool is_dir(const std::string& path) {
  std::error_code ec;
  return sfs::is_directory(path, ec);
}

bool make_dirs(const std::string& path) {
  LT_CHECK(!path.empty(), "lt.fs.mkdir: empty path");
  // the folders to create, outermost first
  std::vector<sfs::path> missing;
  const sfs::path target = normal(path);
  for (sfs::path p = target; !p.empty(); p = p.parent_path()) {
    std::error_code ec;
    const auto st = sfs::status(p, ec);
    if (st.type() == sfs::file_type::directory) break;
    LT_CHECK(st.type() == sfs::file_type::not_found, "lt.fs.mkdir {}: {} exists and is not a folder", path,
             p.string());
    missing.push_back(p);
    if (p == p.parent_path() || p.filename() == "..") break;
  }
  std::reverse(missing.begin(), missing.end());
  for (const auto& p : missing) {
    std::error_code ec;
    if (!sfs::create_directory(p, ec)) {
      if (ec) fail("lt.fs.mkdir {}: cannot create {}: {}", path, p.string(), ec.message());
      continue;  // made meanwhile by someone else: theirs, not marked
    }
    const std::string marker = (p / kOwnedMarker).string();
    const int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    LT_CHECK(fd >= 0, "lt.fs.mkdir {}: cannot write {}", path, marker);
    ::close(fd);
  }
  return !missing.empty() && missing.back() == target;
}

std::vector<std::string> list(const std::string& path) {
  LT_CHECK(is_dir(path), "lt.fs.list: {} is not a folder", path);
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : sfs::directory_iterator(path, ec)) names.push_back(e.path().filename().string());
  if (ec) fail("lt.fs.list {}: {}", path, ec.message());
  std::sort(names.begin(), names.end());
  return names;
}

bool remove_dir(const std::string& path) {
  LT_CHECK(!path.empty(), "lt.fs.remove: empty path");
  std::error_code ec;
  const auto st = sfs::symlink_status(path, ec);
  if (st.type() == sfs::file_type::not_found) return false;
  if (ec) fail("lt.fs.remove {}: {}", path, ec.message());
  if (st.type() == sfs::file_type::symlink) {
    if (!sfs::remove(path, ec) && ec) fail("lt.fs.remove {}: {}", path, ec.message());
    return true;
  }
  LT_CHECK(st.type() == sfs::file_type::directory,
           "lt.fs.remove {}: not a folder (lt.fs.remove deletes folders; os.remove deletes a file)", path);
  const sfs::path marker = sfs::path(path) / kOwnedMarker;
  const auto names = list(path);
  const bool owned = sfs::is_regular_file(marker, ec);
  const bool empty = names.empty() || (names.size() == 1 && names[0] == kOwnedMarker);
  LT_CHECK(owned || empty,
           "lt.fs.remove {}: refusing to delete a folder that ltrun did not create ({} entries, no {} "
           "marker in it); move it away or pick another path",
           path, names.size(), kOwnedMarker);
  // the marker goes last: a removal that fails part-way (something still writing there) leaves
  // the folder marked, so that trying again is allowed
  std::string err;
  for (const auto& n : names)
    if (n != kOwnedMarker && err.empty()) err = remove_tree((sfs::path(path) / n).string());
  if (err.empty()) err = remove_tree(path);
  if (!err.empty()) fail("lt.fs.remove {}: {}", path, err);
  return true;
}

std::string share_path(const std::string& path) {
  static const std::string kShare = "/usr/share/";
  const char* dir = std::getenv("LTRUN_SHARE_DIR");
  if (!dir || !*dir || path.rfind(kShare, 0) != 0 || exists(path)) return path;
  return (sfs::path(dir) / path.substr(kShare.size())).string();
}

namespace {
std::vector<std::string> names_in(const std::string& dir, std::string* err) {  // sorted, no . or ..
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) {
    *err = dir + ": " + std::strerror(errno);
    return out;
  }
  while (const dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

void remove_under(const std::string& path, std::string* err) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT && err->empty()) *err = path + ": " + std::strerror(errno);
    return;
  }
  if (S_ISDIR(st.st_mode)) {
    for (const auto& n : names_in(path, err)) remove_under(path + "/" + n, err);
    if (::rmdir(path.c_str()) != 0 && err->empty()) *err = path + ": " + std::strerror(errno);
  } else if (::unlink(path.c_str()) != 0 && errno != ENOENT && err->empty()) {
    *err = path + ": " + std::strerror(errno);
  }
}

void walk_into(const std::string& dir, int depth, int max_depth, std::vector<TreeEntry>& out) {
  std::string err;
  const auto names = names_in(dir, &err);
  LT_CHECK(err.empty(), "cannot read folder {}", err);
  for (const auto& n : names) {
    TreeEntry e;
    e.path = dir + "/" + n;
    e.depth = depth;
    struct stat st {};
    struct stat lst {};
    const bool have = ::stat(e.path.c_str(), &st) == 0;  // follows links
    e.is_dir = have && S_ISDIR(st.st_mode);
    e.is_file = have && S_ISREG(st.st_mode);
    const bool real_dir = ::lstat(e.path.c_str(), &lst) == 0 && S_ISDIR(lst.st_mode);
    out.push_back(e);
    if (real_dir && (max_depth < 0 || depth < max_depth)) walk_into(e.path, depth + 1, max_depth, out);
  }
}
}  // namespace

std::string remove_tree(const std::string& path) {
  std::string err;
  if (!path.empty()) remove_under(path, &err);
  return err;
}

std::vector<TreeEntry> walk(const std::string& dir, int max_depth) {
  std::vector<TreeEntry> out;
  std::string root = dir;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  walk_into(root, 0, max_depth, out);
  return out;
}

}  // namespace ltrun::fs
