// runtime/core/value.cpp: tables of runtime/core/value.h.
#include "runtime/core/value.h"

#include <cmath>

#include "runtime/core/error.h"

namespace ltrun {

namespace {
const Value kNil;
}

Value::Value(const std::vector<bool>& xs) : v(std::make_shared<Table>()) {
  for (bool x : xs) push(Value(x));
}

const Value& Value::operator[](const std::string& key) const {
  if (!is_table()) return kNil;
  auto it = tab().fields.find(key);
  return it == tab().fields.end() ? kNil : it->second;
}

const Value& Value::operator[](double key) const {
  if (!is_table()) return kNil;
  const Table& t = tab();
  if (key >= 1 && key <= double(t.array.size()) && key == std::floor(key)) return t.array[size_t(key) - 1];
  auto it = t.numbers.find(key);
  return it == t.numbers.end() ? kNil : it->second;
}

std::string Value::type_name() const {
  switch (v.index()) {
    case 0: return "nil";
    case 1: return "boolean";
    case 2: return "number";
    case 3: return "string";
    case 4: return "lt.Tensor";
    case 5: return "table";
    case 6: return "function";
    default: return std::get<Opaque>(v).type;
  }
}

Value& Value::set(const std::string& key, Value x) {
  if (x.is_nil()) tab().fields.erase(key);
  else tab().fields[key] = std::move(x);
  return *this;
}

Value& Value::set(double key, Value x) {
  Table& t = tab();
  if (key == std::floor(key) && key >= 1 && key <= double(t.array.size())) t.array[size_t(key) - 1] = std::move(x);
  else if (key == double(t.array.size() + 1) && !x.is_nil()) t.array.push_back(std::move(x));
  else t.numbers[key] = std::move(x);
  return *this;
}

Value& Value::push(Value x) {
  tab().array.push_back(std::move(x));
  return *this;
}

Value call(const Value& f, const std::string& context, const List& args) {
  try {
    return f.fn()(args);
  } catch (const std::exception& e) {
    fail("{}: {}", context, e.what());
  }
}

}  // namespace ltrun
