// runtime/core/inputs.h: the files a run reads, announced where they are read (a model
// folder by Model::load, a corpus file by lt.data.pack, a benchmark file by its reader), for
// whoever listens: runtime/store/capture.h records them with the run (path, size, hash).
// Without a listener nothing happens. A listener's error is a warning, never the reader's.
#pragma once
#include <functional>
#include <string>

namespace ltrun {

using InputListener = std::function<void(const std::string& kind, const std::string& path)>;
void set_input_listener(InputListener listener);  // an empty one stops listening
// kind: "model" (a folder) or "data" (a file)
void note_input(const std::string& kind, const std::string& path);

}  // namespace ltrun
