// runtime/core/value.h: a script value without the script (runtime never includes Lua): nil,
// boolean, number, string, tensor, table, function, or an opaque value known only by its type
// name. Bindings turn a Lua value into a Value with one reader and a Value into a Lua value with
// one pusher (bindings/luat.h: to_value, push_value), so runtime functions read their own
// arguments and option tables (runtime/core/options.h) and build their own result tables.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "runtime/core/fields.h"

namespace ltrun {

struct Value;
using List = std::vector<Value>;

// A table: the array part t[1..n], string keys, and any other number keys (0, gaps, fractions).
struct Table {
  List array;
  std::map<std::string, Value> fields;
  std::map<double, Value> numbers;
  std::string odd_key;  // the type name of a key neither string nor number ("" when none)
  bool json_array = false;  // empty, and marked to encode as [] (lt.json.array_mt)
};

// A script function: called with arguments, returns its first result; its errors are thrown
// as they are (call() adds the caller's context).
using Function = std::function<Value(const List&)>;

// A value runtime does not read (a userdata, a coroutine): its type name, for error messages,
// and for the types a binding unboxes (lt.Model) the object, alive while the call runs.
struct Opaque {
  std::string type;
  std::shared_ptr<void> ptr;
};

struct Value {
  std::variant<std::monostate, bool, double, std::string, at::Tensor, std::shared_ptr<Table>, Function, Opaque> v;

  Value() = default;
  Value(bool b) : v(b) {}
  Value(double d) : v(d) {}
  Value(int i) : v(double(i)) {}
  Value(int64_t i) : v(double(i)) {}
  Value(size_t i) : v(double(i)) {}
  Value(std::string s) : v(std::move(s)) {}
  Value(const char* s) : v(std::string(s)) {}
  Value(at::Tensor t) : v(std::move(t)) {}
  Value(Function f) : v(std::move(f)) {}
  Value(Opaque o) : v(std::move(o)) {}
  Value(std::shared_ptr<Table> t) : v(std::move(t)) {}
  // vectors of values, numbers or strings (or vectors of these) as arrays t[1..n]
  template <class T>
  Value(const std::vector<T>& xs) : v(std::make_shared<Table>()) {
    for (const T& x : xs) push(Value(x));
  }
  Value(const std::vector<bool>& xs);

  static Value table() { return Value(std::make_shared<Table>()); }
  // xs as a table from key `first` (0: a residual series, keys 0..n-1)
  template <class T>
  static Value array(const std::vector<T>& xs, int first) {
    Value t = table();
    for (size_t i = 0; i < xs.size(); ++i) t.set(double(first) + double(i), Value(xs[i]));
    return t;
  }
  // a record: one key per field of s (runtime/core/fields.h)
  template <class S>
  static Value record(const S& s, const Fields<S>& fs) {
    Value t = table();
    t.set_fields(s, fs);
    return t;
  }
  template <class S>
  static Value records(const std::vector<S>& xs, const Fields<S>& fs) {
    Value t = table();
    for (const S& x : xs) t.push(record(x, fs));
    return t;
  }
  template <class S>
  Value& set_fields(const S& s, const Fields<S>& fs) {
    for (const Field<S>& f : fs) std::visit([&](auto m) { set(f.key, Value(s.*m)); }, f.member);
    return *this;
  }

  bool is_nil() const { return v.index() == 0; }
  bool is_table() const { return std::holds_alternative<std::shared_ptr<Table>>(v); }
  bool is_number() const { return std::holds_alternative<double>(v); }
  bool is_string() const { return std::holds_alternative<std::string>(v); }
  bool is_tensor() const { return std::holds_alternative<at::Tensor>(v); }
  bool is_function() const { return std::holds_alternative<Function>(v); }
  const std::string& str() const { return std::get<std::string>(v); }
  double num() const { return std::get<double>(v); }
  const at::Tensor& tensor() const { return std::get<at::Tensor>(v); }
  const Function& fn() const { return std::get<Function>(v); }
  const Table& tab() const { return *std::get<std::shared_ptr<Table>>(v); }
  Table& tab() { return *std::get<std::shared_ptr<Table>>(v); }
  // t[key] for a table (nil when absent or when this is not a table)
  const Value& operator[](const std::string& key) const;
  const Value& operator[](double key) const;
  size_t size() const { return is_table() ? tab().array.size() : 0; }  // #t
  // "nil", "boolean", "number", "string", "lt.Tensor", "table", "function" or the opaque type
  std::string type_name() const;

  Value& set(const std::string& key, Value x);  // this must be a table; returns *this
  Value& set(double key, Value x);
  Value& push(Value x);  // t[#t + 1] = x
};

// f(args...) with "context: message" on an error inside it
Value call(const Value& f, const std::string& context, const List& args);

}  // namespace ltrun
