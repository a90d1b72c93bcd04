// runtime/core/options.cpp: argument and option checks (runtime/core/options.h).
#include "runtime/core/options.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace ltrun {

int64_t integer_in(double v, const std::string& what, int64_t lo, int64_t hi) {
  if (!(v == std::floor(v))) fail("{}: expected an integer, got {}", what, v);
  if (!(v >= double(lo) && v <= double(hi))) fail("{}: {} is out of range {}..{}", what, v, lo, hi);
  return int64_t(v);
}

int64_t to_integer(const Value& x, const std::string& what, int64_t lo, int64_t hi) {
  if (!x.is_number()) fail("{}: expected an integer, got {}", what, x.type_name());
  return integer_in(x.num(), what, lo, hi);
}

std::optional<std::string> text_of(const Value& x) {
  if (x.is_string()) return x.str();
  if (!x.is_number()) return std::nullopt;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.14g", x.num());
  return std::string(buf);
}

namespace {
const Table& list_of(const Value& t, const std::string& fn, const std::string& what) {
  if (!t.is_table()) fail("{}: {}: expected a table, got {}", fn, what, t.type_name());
  return t.tab();
}
}  // namespace

std::vector<double> numbers_of(const Value& t, const std::string& fn, const std::string& what) {
  std::vector<double> v;
  for (const Value& x : list_of(t, fn, what).array) {
    if (!x.is_number()) fail("{}: {}[{}]: expected a number, got {}", fn, what, v.size() + 1, x.type_name());
    v.push_back(x.num());
  }
  return v;
}

std::vector<int64_t> integers_of(const Value& t, const std::string& fn, const std::string& what, int64_t lo,
                                 int64_t hi) {
  std::vector<int64_t> v;
  for (const Value& x : list_of(t, fn, what).array)
    v.push_back(to_integer(x, fmt::format("{}: {}[{}]", fn, what, v.size() + 1), lo, hi));
  return v;
}

std::vector<std::string> strings_of(const Value& t, const std::string& fn, const std::string& what) {
  std::vector<std::string> v;
  for (const Value& x : list_of(t, fn, what).array) {
    if (!x.is_string()) fail("{}: {}[{}]: expected a string, got {}", fn, what, v.size() + 1, x.type_name());
    v.push_back(x.str());
  }
  return v;
}

Options::Options(const Value& t, std::string fn, int arg) : t_(t), fn_(std::move(fn)) {
  if (!t.is_nil() && !t.is_table())
    fail("{}: argument {} (options): expected a table, got {}", fn_, arg, t.type_name());
}

const Options& Options::check(const std::vector<const char*>& known) const {
  if (!t_.is_table()) return *this;
  const Table& t = t_.tab();
  if (!t.odd_key.empty()) fail("{}: options: keys must be option names, found the key {}", fn_, t.odd_key);
  if (!t.array.empty()) fail("{}: options: keys must be option names, found the key 1", fn_);
  if (!t.numbers.empty()) fail("{}: options: keys must be option names, found the key {}", fn_, t.numbers.begin()->first);
  for (const auto& [k, v] : t.fields) {  // sorted: the first unknown key in sorted order
    if (std::any_of(known.begin(), known.end(), [&](const char* x) { return k == x; })) continue;
    std::vector<std::string> names(known.begin(), known.end());
    std::sort(names.begin(), names.end());
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    fail("{}: unknown option '{}' (known: {})", fn_, k, list);
  }
  return *this;
}

const Options& Options::check(const ApiDoc& api) const {
  return check(api.keys());
}

void Options::refuse_renamed(const char* old, const std::string& hint) const {
  if (has(old)) fail("{}: option '{}' was renamed: {}", fn_, old, hint);
}

void Options::wrong(const std::string& key, const char* expected) const {
  fail("{}: option {}: expected {}, got {}", fn_, key, expected, t_[key].type_name());
}

std::optional<double> Options::number(const std::string& key) const {
  const Value& x = t_[key];
  if (x.is_nil()) return std::nullopt;
  if (!x.is_number()) wrong(key, "a number");
  return x.num();
}

std::optional<int64_t> Options::integer(const std::string& key, int64_t lo, int64_t hi) const {
  auto v = number(key);
  if (!v) return std::nullopt;
  return integer_in(*v, fmt::format("{}: option {}", fn_, key), lo, hi);
}

std::optional<std::string> Options::string(const std::string& key) const {
  const Value& x = t_[key];
  if (x.is_nil()) return std::nullopt;
  if (!x.is_string()) wrong(key, "a string");
  return x.str();
}

std::optional<bool> Options::boolean(const std::string& key) const {
  const Value& x = t_[key];
  if (x.is_nil()) return std::nullopt;
  if (!std::holds_alternative<bool>(x.v)) wrong(key, "a boolean");
  return std::get<bool>(x.v);
}

std::vector<std::string> Options::strings(const std::string& key) const {
  const Value& x = t_[key];
  if (x.is_nil()) return {};
  if (x.is_string()) return {x.str()};
  if (!x.is_table()) wrong(key, "a string or a list of strings");
  return strings_of(x, fn_, key);
}

std::optional<at::Tensor> Options::tensor(const std::string& key) const {
  const Value& x = t_[key];
  if (x.is_nil()) return std::nullopt;
  if (!x.is_tensor()) wrong(key, "a tensor");
  return x.tensor();
}

uint64_t Options::seed(uint64_t stream_seed, const std::string& key) const {
  if (auto s = integer(key, 0, kMaxExactInteger - 1)) return uint64_t(*s);
  return stream_seed;
}

void Options::read_member(const char* key, double& v, int64_t, int64_t) const { v = number(key).value_or(v); }
void Options::read_member(const char* key, int64_t& v, int64_t lo, int64_t hi) const {
  v = integer(key, lo, hi).value_or(v);
}
void Options::read_member(const char* key, int& v, int64_t lo, int64_t hi) const {
  v = int(integer(key, std::max<int64_t>(lo, INT32_MIN), std::min<int64_t>(hi, INT32_MAX)).value_or(v));
}
void Options::read_member(const char* key, uint64_t& v, int64_t lo, int64_t hi) const {
  v = uint64_t(integer(key, std::max<int64_t>(lo, 0), hi).value_or(int64_t(v)));
}
void Options::read_member(const char* key, bool& v, int64_t, int64_t) const { v = boolean(key).value_or(v); }
void Options::read_member(const char* key, std::string& v, int64_t, int64_t) const { v = string(key).value_or(v); }
void Options::read_member(const char* key, std::vector<std::string>& v, int64_t, int64_t) const {
  if (has(key)) v = strings(key);
}
void Options::read_member(const char* key, std::vector<double>& v, int64_t, int64_t) const {
  if (has(key)) v = numbers_of(t_[key], fn_, key);
}

namespace {
const Value kNone;
}

const Value& Args::operator[](int i) const { return i >= 1 && i <= count() ? a_[size_t(i - 1)] : kNone; }

void Args::wrong(int i, const char* expected) const {
  fail("{}: argument {}: expected {}, got {}", fn_, i, expected, i > count() ? "no value" : (*this)[i].type_name());
}

double Args::number(int i) const {
  if (!(*this)[i].is_number()) wrong(i, "a number");
  return (*this)[i].num();
}

int64_t Args::integer(int i, int64_t lo, int64_t hi) const {
  return integer_in(number(i), fmt::format("{}: argument {}", fn_, i), lo, hi);
}

std::string Args::string(int i) const {
  if (!(*this)[i].is_string()) wrong(i, "a string");
  return (*this)[i].str();
}

const Value& Args::table(int i) const {
  if (!(*this)[i].is_table()) wrong(i, "a table");
  return (*this)[i];
}

at::Tensor Args::tensor(int i) const {
  if (!(*this)[i].is_tensor()) wrong(i, "a tensor");
  return (*this)[i].tensor();
}

}  // namespace ltrun
