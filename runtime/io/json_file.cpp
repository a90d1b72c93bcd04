// runtime/io/json_file.cpp: reading JSON files with errors that name the file and key.
#include "runtime/io/json_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ltrun::io {

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  LT_CHECK(in, "cannot read JSON file {}: {}", path, std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  LT_CHECK(!in.bad(), "cannot read JSON file {}: {}", path, std::strerror(errno));
  try {
    return nlohmann::json::parse(text.str());
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
