// runtime/io/json_file.h: JSON files (config.json, index files) read with errors that say
// which file, where in it, and which key.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "runtime/core/error.h"

namespace ltrun::io {

// Parses `path`; a syntax error names the file and nlohmann's line and column.
nlohmann::json read_json_file(const std::string& path);

// obj[key], or an ltrun::Error naming the file and key when obj is not an object or lacks it.
const nlohmann::json& json_require(const nlohmann::json& obj, const std::string& key,
                                   const std::string& path);

// obj[key] converted to T; a missing key or a value of the wrong type names file and key.
template <class T>
T json_require(const nlohmann::json& obj, const std::string& key, const std::string& path) {
  const nlohmann::json& v = json_require(obj, key, path);
  try {
    return v.get<T>();
  } catch (const nlohmann::json::exception& e) {
    fail("{}: key \"{}\" has the wrong type ({}): {}", path, key, v.type_name(), e.what());
  }
}

}  // namespace ltrun::io
