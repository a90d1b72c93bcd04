// runtime/core/api.h: the registry of the script API. Each script-facing function that takes
// an option table declares, next to its body, its signature, one line of what it does and its
// options (key, kind, one line each); its check of the option table reads that declaration
// (Options::check(const ApiDoc&)), so the keys it accepts and the keys documented are one list.
// `ltrun doc api` writes docs/reference/lua-api.md from this registry (runtime/cli/doc.cpp) and
// the REPL's `?x` shows the entry of x (lt.api(name) in Lua).
#pragma once
#include <string>
#include <vector>

namespace ltrun {

struct OptionDoc {
  const char* key;
  const char* kind;  // "integer", "number", "string", "boolean", "table", "tensor", "function", "strings", ...
  const char* doc;   // one line
};

struct ApiDoc {
  std::string name;       // as its errors name it: "lt.model.load", "model:generate"
  std::string signature;  // "lt.model.load(path[, opts]) → model"
  std::string summary;    // one line
  std::vector<OptionDoc> options;
  std::vector<const char*> keys() const;
  bool has(const std::string& key) const;
};

// own's options, then a shared group's (the loop options of lt.train.run and lt.rl.grpo)
std::vector<OptionDoc> with(std::vector<OptionDoc> own, const std::vector<OptionDoc>& shared);

// Adds d to the registry (at static initialisation, next to the function) and returns the
// stored entry; a name declared twice, or a key twice in one entry, fails at once.
const ApiDoc& declare_api(ApiDoc d);
// The entry named `name`, or nullptr.
const ApiDoc* find_api(const std::string& name);
// Every entry, sorted by name.
std::vector<const ApiDoc*> all_apis();

}  // namespace ltrun
