// runtime/core/json_value.h: script values (runtime/core/value.h) <-> JSON, for lt.json, model
// configs and tables stored as params. A table whose keys are exactly 1..n is an array; other
// tables are objects with string keys (numbers as text); an empty table is {} unless marked
// json_array. JSON null is the Opaque value of type "lt.json.null" (lt.json.null in Lua).
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "runtime/core/value.h"

namespace ltrun {

constexpr const char* kJsonNull = "lt.json.null";

// Errors name fn: "fn: a function is not representable in JSON".
nlohmann::json to_json(const Value& v, const std::string& fn);
Value from_json(const nlohmann::json& j);

}  // namespace ltrun
