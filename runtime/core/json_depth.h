// runtime/core/json_depth.h: a depth limit for nlohmann::json::parse on untrusted text
// (config.json, tokenizer.json, lt.json.decode). The parser itself keeps its own stack, but
// whatever walks or prints the value afterwards (an error message's dump(), Lua tables)
// recurses once per level, so 70,000 nested "[" would overflow the C stack there.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "runtime/core/error.h"

namespace ltrun {

constexpr int kMaxJsonDepth = 200;

// A parser callback: parse(text, json_depth_limit(source)) fails with "SOURCE: JSON nested
// deeper than N levels" at the first array/object that opens below depth N.
inline auto json_depth_limit(std::string source, int max_depth = kMaxJsonDepth) {
  return [source = std::move(source), max_depth](int depth, nlohmann::json::parse_event_t event,
                                                  nlohmann::json&) {
    const bool opens = event == nlohmann::json::parse_event_t::object_start ||
                       event == nlohmann::json::parse_event_t::array_start;
    if (opens && depth >= max_depth) fail("{}: JSON nested deeper than {} levels", source, max_depth);
    return true;
  };
}

}  // namespace ltrun
