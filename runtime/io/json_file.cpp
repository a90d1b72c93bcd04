// runtime/io/json_file.cpp: reading JSON files with errors that name the file and key.
#include "runtime/io/json_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "runtime/core/env.h"
#include "runtime/core/json_depth.h"

namespace ltrun::io {

nlohmann::json read_json_file(const std::string& path) {
  const std::string text = read_file(path);  // regular files only, bounded (runtime/core/env.h)
  try {
    return nlohmann::json::parse(text, json_depth_limit(path));
  } catch (const nlohmann::json::exception& e) {
    fail("{}: invalid JSON: {}", path, e.what());
  }
}

const nlohmann::json& json_require(const nlohmann::json& obj, const std::string& key,
                                   const std::string& path) {
  LT_CHECK(obj.is_object(), "{}: expected a JSON object holding \"{}\", found {}", path, key,
           obj.type_name());
  auto it = obj.find(key);
  LT_CHECK(it != obj.end(), "{}: missing required key \"{}\"", path, key);
  return *it;
}

}  // namespace ltrun::io
