// runtime/core/inputs.h: the files a run reads, announced where they are read (a model
// folder by Model::load, a corpus file by lt.data.pack, a benchmark file by its reader, any
// file a script reads through Lua's io: note_read), for whoever listens:
// runtime/store/capture.h records them with the run (path, size, hash). Without a listener
// nothing happens. A listener's error is a warning, never the reader's.
#pragma once
#include <functional>
#include <map>
#include <string>

namespace ltrun {

using InputListener = std::function<void(const std::string& kind, const std::string& path)>;
void set_input_listener(InputListener listener);  // an empty one stops listening (and forgets note_read's writes)
// kind: "model" (a folder) or "data" (a file)
void note_input(const std::string& kind, const std::string& path);

// A file a script opens through Lua's io (io.open with its `mode`, io.lines, io.input,
// loadfile, dofile: bindings/interp.cpp). Returns the path to open: `path`, or in a replay the restored copy of
// an input that is not here (set_input_redirects). A read (a mode without 'w', 'a' or '+') of
// a regular file is noted as a "data" input, except a file under /proc, /sys or /dev (not
// data on disk) and a file this run opened for writing before (its own output: read back, it
// is no input); the listener leaves out the run's store and its folders (capture.h).
// dofile/loadfile count: a Lua file loaded that way is data the run read, not a module.
std::string note_read(const std::string& path, const std::string& mode);

// A replay (`ltrun rerun`): absolute path as the script will name it -> the file or model
// folder to read instead (an input restored from a bundle into the store's input folder, its
// hash checked); a path below a redirected folder is redirected below its copy. Recorded
// under the path the script named, hashed from what is read.
void set_input_redirects(std::map<std::string, std::string> from_to);
std::string input_source(const std::string& path);  // the redirect of `path`, else `path`
std::string input_origin(const std::string& copy);  // the path a redirect target stands for, or ""

}  // namespace ltrun
