// runtime/core/fs.h: folders for studies without a shell (lt.fs): make, list, test, remove.
// Paths are used as given, never through a shell, so no argument can run a command. Folders
// this code creates carry an ownership marker file, and remove_dir deletes a non-empty folder
// only when it carries one, so a study never deletes a folder that ltrun did not create.
#pragma once
#include <string>
#include <vector>

namespace ltrun::fs {

constexpr const char* kOwnedMarker = ".ltrun-owned";  // an empty file in each folder ltrun made

// mkdir -p: creates `path` and its missing parents, putting the marker in each folder it
// creates (not in folders that existed). Returns whether `path` itself was created. Error
// when a part of the path is not a folder, or the folder cannot be made (naming it and why).
bool make_dirs(const std::string& path);
// Whether anything (a file, folder or link) exists at path.
bool exists(const std::string& path);
bool is_dir(const std::string& path);
// The names in folder `path` (not "." or ".."), sorted; error when it is not a folder.
std::vector<std::string> list(const std::string& path);
// Removes folder `path` with everything in it when it is empty (the marker aside) or carries
// the marker; a missing path is not an error (returns false). Refused, with an error naming
// the folder and the marker: a non-empty folder without the marker, and anything that is not
// a folder. A symbolic link is removed as a link; its target is never touched.
bool remove_dir(const std::string& path);

// Deletes `path` and everything under it, like `rm -rf`: links are removed as links, never
// followed; no ownership check (remove_dir is the checked one for studies); a missing path is no
// error. Returns "" or the first failure ("PATH: reason"). POSIX calls, not
// std::filesystem::remove_all or its recursive_directory_iterator: PyTorch 2.x wheels export
// copies of those (pytorch/pytorch#133437), and on a GPU node the loader bound ours to
// libtorch's remove_all, which jumped to address 0. tests/cli/torch_wheel_std.sh keeps them out.
std::string remove_tree(const std::string& path);

// What is under folder `dir`, depth first, each folder's names sorted: paths joined to `dir`;
// depth 0 for dir's own entries; folders deeper than max_depth are not entered (-1: all). A
// link to a folder is listed (is_dir true) but not entered. Error naming a folder that cannot
// be read.
struct TreeEntry {
  std::string path;
  bool is_dir = false;   // a folder, or a link to one
  bool is_file = false;  // a regular file, or a link to one
  int depth = 0;
};
std::vector<TreeEntry> walk(const std::string& dir, int max_depth = -1);

// Debian's data packages (fortunes, wordnet-base) live under /usr/share; where they are unpacked
// elsewhere (a GPU node without them: scripts/gpu-check), LTRUN_SHARE_DIR stands for /usr/share.
// share_path("/usr/share/X") is LTRUN_SHARE_DIR/X when that variable is set and /usr/share/X is
// absent; any other path, or without the variable, the path as given.
std::string share_path(const std::string& path);

}  // namespace ltrun::fs
