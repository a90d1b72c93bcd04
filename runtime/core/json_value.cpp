// runtime/core/json_value.cpp: script values <-> JSON (runtime/core/json_value.h).
#include "runtime/core/json_value.h"

#include <cmath>

#include "runtime/core/error.h"

namespace ltrun {

nlohmann::json to_json(const Value& v, const std::string& fn) {
  if (v.is_nil()) return nullptr;
  if (const bool* b = std::get_if<bool>(&v.v)) return *b;
  if (v.is_number()) {
    const double x = v.num();
    if (!std::isfinite(x)) fail("{}: {} is not representable in JSON", fn, x);
    if (x == std::floor(x) && std::fabs(x) < 9007199254740992.0) return int64_t(x);
    return x;
  }
  if (v.is_string()) return v.str();
  if (const auto* o = std::get_if<Opaque>(&v.v); o && o->type == kJsonNull) return nullptr;
  if (!v.is_table()) fail("{}: a {} is not representable in JSON", fn, v.type_name());
  const Table& t = v.tab();
  if (!t.odd_key.empty()) fail("{}: table key of type {} cannot be a JSON key", fn, t.odd_key);
  const bool holes = std::any_of(t.array.begin(), t.array.end(), [](const Value& x) { return x.is_nil(); });
  if ((!t.array.empty() && !holes && t.fields.empty() && t.numbers.empty()) || (t.json_array && t.array.empty())) {
    nlohmann::json a = nlohmann::json::array();
    for (const Value& x : t.array) a.push_back(to_json(x, fn));
    return a;
  }
  nlohmann::json o = nlohmann::json::object();
  for (size_t i = 0; i < t.array.size(); ++i)
    if (!t.array[i].is_nil()) o[fmt::format("{}", double(i + 1))] = to_json(t.array[i], fn);
  for (const auto& [k, x] : t.numbers) o[fmt::format("{}", k)] = to_json(x, fn);
  for (const auto& [k, x] : t.fields) o[k] = to_json(x, fn);
  return o;
}

Value from_json(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::boolean: return j.get<bool>();
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: return j.get<double>();
    case nlohmann::json::value_t::string: return j.get<std::string>();
    case nlohmann::json::value_t::array: {
      Value a = Value::table();
      for (const auto& x : j) a.push(from_json(x));
      a.tab().json_array = j.empty();
      return a;
    }
    case nlohmann::json::value_t::object: {
      Value o = Value::table();
      for (auto it = j.begin(); it != j.end(); ++it) o.tab().fields[it.key()] = from_json(it.value());
      return o;
    }
    default: return Value(Opaque{kJsonNull, nullptr});
  }
}

}  // namespace ltrun
