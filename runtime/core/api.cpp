// runtime/core/api.cpp: the registry of the script API (runtime/core/api.h).
#include "runtime/core/api.h"

#include "runtime/core/options.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>

namespace ltrun {
namespace {
// a deque: entries keep their address as more are declared (declare_api returns references)
std::deque<ApiDoc>& registry() {
  static std::deque<ApiDoc> r;
  return r;
}

// At static initialisation an exception could not be reported with context: say what and stop.
[[noreturn]] void bad_declaration(const std::string& what) {
  std::fprintf(stderr, "ltrun: bad API declaration: %s (runtime/core/api.h)\n", what.c_str());
  std::abort();
}
}  // namespace

std::vector<const char*> ApiDoc::keys() const {
  std::vector<const char*> k;
  for (const OptionDoc& o : options) k.push_back(o.key);
  return k;
}

bool ApiDoc::has(const std::string& key) const {
  return std::any_of(options.begin(), options.end(), [&](const OptionDoc& o) { return key == o.key; });
}

namespace {
const std::string& declared_default(const ApiDoc& d, const std::string& key) {
  for (const OptionDoc& o : d.options)
    if (key == o.key && o.def) return *o.def;
  fail("{}: option {} has no declared default (runtime/core/api.h)", d.name, key);
}
}  // namespace

double ApiDoc::number_default(const std::string& key) const { return std::stod(declared_default(*this, key)); }
bool ApiDoc::boolean_default(const std::string& key) const { return declared_default(*this, key) == "true"; }

std::optional<std::string> default_text(double v) { return fmt::format("{}", v); }  // shortest exact: 1e-06
std::optional<std::string> default_text(int64_t v) { return std::to_string(v); }
std::optional<std::string> default_text(int v) { return std::to_string(v); }
std::optional<std::string> default_text(uint64_t v) { return std::to_string(v); }
std::optional<std::string> default_text(bool v) { return std::string(v ? "true" : "false"); }
std::optional<std::string> default_text(const std::string& v) { return v; }

OptionDoc one_of(OptionDoc d, std::vector<std::string> choices) {
  d.choices = std::move(choices);
  return d;
}

std::vector<OptionDoc> with(std::vector<OptionDoc> own, const std::vector<OptionDoc>& shared) {
  own.insert(own.end(), shared.begin(), shared.end());
  return own;
}

const ApiDoc& declare_api(ApiDoc d) {
  if (find_api(d.name)) bad_declaration(d.name + " declared twice");
  for (size_t i = 0; i < d.options.size(); i++)
    for (size_t j = 0; j < i; j++)
      if (std::strcmp(d.options[i].key, d.options[j].key) == 0)
        bad_declaration(d.name + ": option " + d.options[i].key + " listed twice");
  registry().push_back(std::move(d));
  return registry().back();
}

const ApiDoc* find_api(const std::string& name) {
  for (const ApiDoc& d : registry())
    if (d.name == name) return &d;
  return nullptr;
}

std::vector<const ApiDoc*> all_apis() {
  std::vector<const ApiDoc*> out;
  for (const ApiDoc& d : registry()) out.push_back(&d);
  std::sort(out.begin(), out.end(), [](const ApiDoc* a, const ApiDoc* b) { return a->name < b->name; });
  return out;
}

namespace {
List api_fn(const Args& a) {
  if (a.none(1)) {
    std::vector<std::string> names;
    for (const ApiDoc* d : all_apis()) names.push_back(d->name);
    return {names};
  }
  const ApiDoc* d = find_api(a.string(1));
  if (!d) return {Value()};
  Value opts = Value::table();
  for (const OptionDoc& o : d->options) {
    Value e = Value::table().set("key", std::string(o.key)).set("kind", std::string(o.kind)).set("doc", std::string(o.doc));
    if (o.def) e.set("default", *o.def);  // as text: the kind says how to read it
    if (o.min) e.set("min", double(*o.min));
    if (o.max) e.set("max", double(*o.max));
    if (!o.choices.empty()) e.set("choices", o.choices);
    opts.push(e);
  }
  return {Value::table().set("name", d->name).set("signature", d->signature).set("summary", d->summary).set("options", opts)};
}
}  // namespace

const std::vector<ScriptFunction>& api_functions() {
  static const std::vector<ScriptFunction> fs = {{"lt.api", api_fn}};
  return fs;
}

}  // namespace ltrun
