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

// Debian's data packages (fortunes, wordnet-base) live under /usr/share; where they are unpacked
// elsewhere (a GPU node without them: scripts/gpu-check), LTRUN_SHARE_DIR stands for /usr/share.
// share_path("/usr/share/X") is LTRUN_SHARE_DIR/X when that variable is set and /usr/share/X is
// absent; any other path, or without the variable, the path as given.
std::string share_path(const std::string& path);

}  // namespace ltrun::fs
