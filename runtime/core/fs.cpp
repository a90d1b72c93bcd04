// runtime/core/fs.cpp: folders for studies without a shell (see fs.h).
#include "runtime/core/fs.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fcntl.h>
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
  sfs::remove_all(path, ec);
  if (ec) fail("lt.fs.remove {}: {}", path, ec.message());
  return true;
}

std::string share_path(const std::string& path) {
  static const std::string kShare = "/usr/share/";
  const char* dir = std::getenv("LTRUN_SHARE_DIR");
  if (!dir || !*dir || path.rfind(kShare, 0) != 0 || exists(path)) return path;
  return (sfs::path(dir) / path.substr(kShare.size())).string();
}

}  // namespace ltrun::fs
