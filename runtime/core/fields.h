// runtime/core/fields.h: a struct's fields as data, for options and results that cross into a
// script: the key each is known by, its member, and for integers the range accepted. One reader
// fills any options struct from these and one writer turns any result struct into a table
// (runtime/core/options.h: Options::read; runtime/core/value.h: Value::record), so a key, its
// default (the struct's initializer) and its bounds sit beside the struct they describe.
#pragma once
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace ltrun {

template <class S>
struct Field {
  using Member = std::variant<double S::*, int64_t S::*, int S::*, uint64_t S::*, bool S::*, std::string S::*,
                              std::vector<std::string> S::*, std::vector<double> S::*>;
  const char* key;
  Member member;
  // integers: the accepted range (an int member is also bounded to int's range)
  int64_t lo = -(int64_t(1) << 53), hi = int64_t(1) << 53;
};
template <class S>
using Fields = std::vector<Field<S>>;

// The keys of fs in order, then those of `more` (an options function's known keys).
template <class S>
std::vector<const char*> field_keys(const Fields<S>& fs, const std::vector<const char*>& more = {}) {
  std::vector<const char*> out;
  for (const Field<S>& f : fs) out.push_back(f.key);
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

// The first key that occurs twice in keys, or "" (a field list naming a key twice would read
// one option into two members).
std::string duplicate_key(const std::vector<const char*>& keys);

}  // namespace ltrun
