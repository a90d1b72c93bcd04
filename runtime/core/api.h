// runtime/core/api.h: the registry of the script API. Each script-facing function that takes
// an option table declares, next to its body, its signature, one line of what it does and its
// options (key, kind, one line each); its check of the option table reads that declaration
// (Options::check(const ApiDoc&)), so the keys it accepts and the keys documented are one list.
// `ltrun doc api` writes docs/reference/lua-api.md from this registry (runtime/cli/doc.cpp) and
// the REPL's `?x` shows the entry of x (lt.api(name) in Lua).
#pragma once
#include <cstring>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "runtime/core/fields.h"

namespace ltrun {

struct OptionDoc {
  const char* key;
  const char* kind;  // "integer", "number", "string", "path" (a file or folder), "boolean", "table", "tensor", "function", "strings", ...
  const char* doc;   // one line
  // the value taken when the option is absent, as Lua writes it (a string as it is), when it
  // is one plain value; nullopt when it depends on something else (the run, another option)
  std::optional<std::string> def = std::nullopt;
  std::optional<int64_t> min = std::nullopt, max = std::nullopt;  // integers: the range accepted
  std::vector<std::string> choices = {};  // strings: the values accepted (one_of), when a few
};

// d accepting only `choices` (a string option's values, shown by the page and a study's --help)
OptionDoc one_of(OptionDoc d, std::vector<std::string> choices);

struct ApiDoc {
  std::string name;       // as its errors name it: "lt.model.load", "model:generate"
  std::string signature;  // "lt.model.load(path[, opts]) → model"
  std::string summary;    // one line
  std::vector<OptionDoc> options;
  std::vector<const char*> keys() const;
  bool has(const std::string& key) const;
  // the declared default of option `key` as a number (an error when it has none: a bug)
  double number_default(const std::string& key) const;
  bool boolean_default(const std::string& key) const;
};

// own's options, then a shared group's (the loop options of lt.train.run and lt.rl.grpo)
std::vector<OptionDoc> with(std::vector<OptionDoc> own, const std::vector<OptionDoc>& shared);

// A default as OptionDoc::def writes it; nullopt for lists (no one plain value)
std::optional<std::string> default_text(double v);
std::optional<std::string> default_text(int64_t v);
std::optional<std::string> default_text(int v);
std::optional<std::string> default_text(uint64_t v);
std::optional<std::string> default_text(bool v);
std::optional<std::string> default_text(const std::string& v);
template <class T>
std::optional<std::string> default_text(const std::vector<T>&) { return std::nullopt; }

// docs with the default (its value in `defaults`, the struct's initializer unless the function
// starts from other values) and the range of each option that is one of fs: a default is
// said where it is implemented, and the page, `?name`, lt.api and a study's --help read it
template <class S>
std::vector<OptionDoc> with_defaults(std::vector<OptionDoc> docs, const Fields<S>& fs, const S& defaults = S{}) {
  for (OptionDoc& d : docs)
    for (const Field<S>& f : fs) {
      if (std::strcmp(d.key, f.key) != 0) continue;
      d.def = std::visit([&](auto m) { return default_text(defaults.*m); }, f.member);
      if (f.lo != Field<S>{}.lo) d.min = f.lo;
      if (f.hi != Field<S>{}.hi) d.max = f.hi;
    }
  return docs;
}

// Adds d to the registry (at static initialisation, next to the function) and returns the
// stored entry; a name declared twice, or a key twice in one entry, fails at once.
const ApiDoc& declare_api(ApiDoc d);
// The entry named `name`, or nullptr.
const ApiDoc* find_api(const std::string& name);
// Every entry, sorted by name.
std::vector<const ApiDoc*> all_apis();

}  // namespace ltrun
