// runtime/cli/doc.cpp: `ltrun doc api [--out FILE]`: the reference of the Lua API
// (docs/reference/lua-api.md) written from the registry the runtime checks option tables
// against (runtime/core/api.h), set against every function the interpreter actually offers
// (lib/lt/repl.lua listing()), so that a declaration without a function, or a function with
// options and no declaration, cannot hide. tests/cli/doc_api.sh regenerates the page and fails
// when it differs from the committed one.
#include <algorithm>
#include <cctype>
#include <deque>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "runtime/cli/cli.h"
#include "runtime/core/api.h"
#include "runtime/core/error.h"
#include "runtime/io/atomic_file.h"

namespace ltrun::cli {
namespace {

struct Listed {
  std::string name, kind, cls;  // kind: C, Lua or class; cls: a method's class
  std::string signature, summary;  // a Lua function's, from lib/lt/init.lua's docs ("" when none)
};

std::vector<Listed> read_listing(const std::string& text) {
  std::vector<Listed> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    Listed l;
    std::istringstream f(line);
    std::getline(f, l.name, '\t');
    std::getline(f, l.kind, '\t');
    std::getline(f, l.cls, '\t');
    std::getline(f, l.signature, '\t');
    std::getline(f, l.summary, '\t');
    if (!l.name.empty()) out.push_back(l);
  }
  return out;
}

// "lt.model.load" → "lt.model"; "lt.tensor" → "lt"
std::string module_of(const std::string& name) {
  const auto dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(0, dot);
}

std::string cell(const std::string& s) {  // a table cell: | would end it
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

// an option's default as a study's --help shows it (a string quoted), then its range
std::string default_cell(const OptionDoc& o) {
  std::string out;
  if (o.def) out = "`" + (std::string(o.kind) == "string" ? "\"" + *o.def + "\"" : *o.def) + "`";
  if (o.min) out += (out.empty() ? "" : " ") + std::string("≥ ") + std::to_string(*o.min);
  if (o.max) out += (out.empty() ? "" : " ") + std::string("≤ ") + std::to_string(*o.max);
  for (size_t i = 0; i < o.choices.size(); ++i) out += (i ? ", " : out.empty() ? "one of " : " (one of ") + o.choices[i];
  if (o.def && !o.choices.empty()) out += ")";
  return out;
}

void entry(std::ostringstream& md, const ApiDoc& d, const std::string& level) {
  md << level << " " << d.name << "\n\n`" << d.signature << "`\n\n" << d.summary << "\n\n";
  if (d.options.empty()) return;
  const bool fields = d.name.rfind("lt.", 0) == 0 && d.name.size() > 3 && std::isupper(d.name[d.name.rfind('.') + 1]);
  const bool defaults = std::any_of(d.options.begin(), d.options.end(), [](const OptionDoc& o) { return o.def || o.min || o.max || !o.choices.empty(); });
  md << "| " << (fields ? "field" : "option") << " | kind | " << (defaults ? "default | " : "") << "meaning |\n|---|---|"
     << (defaults ? "---|" : "") << "---|\n";
  for (const OptionDoc& o : d.options)
    md << "| `" << o.key << "` | " << cell(o.kind) << " | " << (defaults ? cell(default_cell(o)) + " | " : "") << cell(o.doc) << " |\n";
  md << "\n";
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "`" : ", `") + s + "`";
  return out;
}

std::string api_markdown(const std::vector<Listed>& listing) {
  std::map<std::string, const ApiDoc*> docs;
  std::map<std::string, std::vector<const ApiDoc*>> nested;  // "lt.model.hybrid layers[i]" under its function
  for (const ApiDoc* d : all_apis()) {
    const auto space = d->name.find(' ');
    if (space == std::string::npos) docs[d->name] = d;
    else nested[d->name.substr(0, space)].push_back(d);
  }
  // module (or class) → its documented entries, its C++ functions without options, its Lua ones
  struct Section {
    std::vector<const ApiDoc*> entries;
    std::vector<std::string> plain, lua;
  };
  std::map<std::string, Section> sections;
  std::set<std::string> found;
  std::deque<ApiDoc> lua_docs;  // the Lua functions' entries (no option table in the registry)
  for (const Listed& l : listing) {
    const std::string sec = l.kind == "class" ? l.name : !l.cls.empty() ? l.cls : module_of(l.name);
    Section& s = sections[sec];
    found.insert(l.name);
    auto d = docs.find(l.name);
    if (d != docs.end()) s.entries.insert(l.kind == "class" ? s.entries.begin() : s.entries.end(), d->second);
    else if (l.kind == "Lua" && !l.signature.empty())
      s.entries.push_back(&lua_docs.emplace_back(ApiDoc{l.name, l.signature, l.summary + " (Lua)", {}}));
    else if (l.kind == "Lua") s.lua.push_back(l.name);
    else if (l.kind == "C") s.plain.push_back(l.name);
  }
  for (const auto& [name, d] : docs)
    if (!found.count(name)) fail("doc api: {} is declared (runtime/core/api.h) but the interpreter has no such function", name);
  for (const auto& [name, ds] : nested) {  // of a declared function, or of a module ("lt.layers spec")
    if (docs.count(name)) continue;
    if (!sections.count(name)) fail("doc api: {} is declared for {}, which is neither declared nor a module", ds.front()->name, name);
    sections[name].entries.insert(sections[name].entries.end(), ds.begin(), ds.end());
  }

  std::ostringstream md;
  md << "# Lua API reference\n\n"
     << "Generated by `ltrun doc api --out docs/reference/lua-api.md` from the declarations the runtime\n"
     << "checks option tables against (runtime/core/api.h): an option a function accepts is an option\n"
     << "listed here. Do not edit by hand; the test cli.doc_api fails when this page and the\n"
     << "declarations differ. In the REPL, `?NAME` shows one entry.\n\n"
     << "The functions of `lt` written in Lua (the Lua halves of lt.run, lt.eval and lt.layers, lt.models,\n"
     << "lt.envs: lib/lt) have their signature and one line from lib/lt/init.lua, where `lt` is assembled,\n"
     << "and check their options in Lua; those without one are listed by name under \"In Lua\". Modules\n"
     << "loaded with `require` (lt.study, lt.report, lt.tasks, lt.scan, ...) are not on this page: their\n"
     << "files open with what they offer. A default is the value an absent option takes; a study takes\n"
     << "a function's options, with these defaults, as its args (`study.args_of`, docs/study_args.md).\n\n"
     << "## Contents\n\n";
  for (const auto& [name, s] : sections) {  // GitHub's anchors: lower case, '.' dropped, ' ' → '-'
    const bool cls = std::isupper(name[name.rfind('.') + 1]);
    std::string anchor = cls ? "class-" : "";
    for (char c : name) if (c != '.') anchor += char(std::tolower(c));
    md << "- [" << (cls ? "class " : "") << name << "](#" << anchor << ")\n";
  }
  md << "\n";
  for (const auto& [name, s] : sections) {
    md << "## " << (std::isupper(name[name.rfind('.') + 1]) ? "class " : "") << name << "\n\n";
    for (const ApiDoc* d : s.entries) {
      entry(md, *d, "###");
      if (nested.count(d->name))
        for (const ApiDoc* n : nested[d->name]) entry(md, *n, "####");
    }
    if (!s.plain.empty()) md << "Other functions (C++, no option table of their own): " << join(s.plain) << ".\n\n";
    if (!s.lua.empty()) md << "In Lua (options not in the registry yet): " << join(s.lua) << ".\n\n";
  }
  std::string out = md.str();
  while (out.size() > 1 && out[out.size() - 1] == '\n' && out[out.size() - 2] == '\n') out.pop_back();
  return out;
}

}  // namespace

int cmd_doc(const Globals& g, const std::vector<std::string>& args) {
  std::string what, out;
  ArgReader a(args, 0, "doc");
  while (a.next()) {
    if (a.key() == "--out") out = a.value();
    else if (!a.is_option() && what.empty()) what = a.key();
    else fail("doc: unexpected argument {} (usage: ltrun doc api [--out FILE])", a.key());
  }
  LT_CHECK(what == "api", "doc: expected `ltrun doc api [--out FILE]`, got `{}`", what);
  const std::unique_ptr<ScriptHost> host = g.make_host();
  RunContext ctx;
  host->set_run(ctx);
  const Outcome o = host->eval("=require('lt.repl').listing()");
  LT_CHECK(o.kind == Outcome::ok && o.values.size() == 1, "doc api: listing the interpreter's functions failed: {}",
           o.message);
  const std::string md = api_markdown(read_listing(o.values[0]));
  if (out.empty()) std::fputs(md.c_str(), stdout);
  else io::write_file_atomic(out, md);
  return kExitOk;
}

}  // namespace ltrun::cli
