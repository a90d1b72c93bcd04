// runtime/core/options.h: reading a function's arguments and option table from Values
// (runtime/core/value.h) with the checks every script-facing function makes: a misspelled key is
// an error naming it, a wrong type names the option and what it got, integers are integral and
// within their range (a Lua number is a double: 2^40 as an int would wrap to a wrong layer).
// Errors read "fn: option KEY: expected a number, got string".
#pragma once
#include <cstdint>
#include <climits>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/api.h"
#include "runtime/core/error.h"
#include "runtime/core/fields.h"
#include "runtime/core/value.h"

namespace ltrun {

constexpr int64_t kMaxExactInteger = int64_t(1) << 53;

// v as an integer in [lo, hi], or an error "`what`: ..." (the comparisons are in double,
// before any conversion, so NaN, inf and 2^70 are refused too)
int64_t integer_in(double v, const std::string& what, int64_t lo = -kMaxExactInteger, int64_t hi = kMaxExactInteger);
// x as an integer; errors name `what` ("model:forward: intervene key")
int64_t to_integer(const Value& x, const std::string& what, int64_t lo = -kMaxExactInteger,
                   int64_t hi = kMaxExactInteger);
// Lists (t[1..n]): errors name fn, what and the entry ("fn: ids[3]: expected an integer, got string").
std::vector<double> numbers_of(const Value& t, const std::string& fn, const std::string& what);
std::vector<int64_t> integers_of(const Value& t, const std::string& fn, const std::string& what,
                                 int64_t lo = -kMaxExactInteger, int64_t hi = kMaxExactInteger);
std::vector<std::string> strings_of(const Value& t, const std::string& fn, const std::string& what);

// A string, or a number as Lua writes it (%.14g); nullopt for anything else.
std::optional<std::string> text_of(const Value& x);

// An option table: nil (no options) or a table, argument `arg` of fn.
class Options {
 public:
  Options(const Value& t, std::string fn, int arg = 0);
  const std::string& fn() const { return fn_; }
  const Value& table() const { return t_; }
  const Value& operator[](const std::string& key) const { return t_[key]; }
  bool has(const std::string& key) const { return !t_[key].is_nil(); }
  // every key is among the options `api` declares (runtime/core/api.h): the keys accepted are
  // the keys documented (the only public check, so that no list of keys drifts from the docs);
  // else "fn: unknown option 'KEY' (known: ...)" (sorted)
  const Options& check(const ApiDoc& api) const;
  // t[old] present: "fn: option 'old' was renamed: hint"
  void refuse_renamed(const char* old, const std::string& hint) const;
  std::optional<double> number(const std::string& key) const;
  std::optional<int64_t> integer(const std::string& key, int64_t lo = -kMaxExactInteger,
                                 int64_t hi = kMaxExactInteger) const;
  std::optional<std::string> string(const std::string& key) const;
  std::optional<bool> boolean(const std::string& key) const;
  std::vector<std::string> strings(const std::string& key) const;  // one string or a list (nil: empty)
  std::optional<at::Tensor> tensor(const std::string& key) const;  // a tensor (nil: none)
  // seed = an integer in [0, 2^53) when given, else `stream_seed`
  uint64_t seed(uint64_t stream_seed, const std::string& key = "seed") const;
  // for each field whose key is present: s.*member = t[key] (absent keys keep s's value; the
  // keys are checked by check(ApiDoc), which declares them)
  template <class S>
  void read(S& s, const Fields<S>& fs) const {
    for (const Field<S>& f : fs) std::visit([&](auto m) { read_member(f.key, s.*m, f.lo, f.hi); }, f.member);
  }

 private:
  const Options& check(const std::vector<const char*>& known) const;
  [[noreturn]] void wrong(const std::string& key, const char* expected) const;
  void read_member(const char* key, double& v, int64_t, int64_t) const;
  void read_member(const char* key, int64_t& v, int64_t lo, int64_t hi) const;
  void read_member(const char* key, int& v, int64_t lo, int64_t hi) const;
  void read_member(const char* key, uint64_t& v, int64_t lo, int64_t hi) const;
  void read_member(const char* key, bool& v, int64_t, int64_t) const;
  void read_member(const char* key, std::string& v, int64_t, int64_t) const;
  void read_member(const char* key, std::vector<std::string>& v, int64_t, int64_t) const;
  void read_member(const char* key, std::vector<double>& v, int64_t, int64_t) const;
  Value t_;
  std::string fn_;
};

struct RunContext;

// The arguments of a script function (1-based, as the script passed them) and the run it works
// for. Errors read "fn: argument N: expected a number, got string".
class Args {
 public:
  Args(List args, std::string fn, const RunContext& run) : a_(std::move(args)), fn_(std::move(fn)), run_(run) {}
  const std::string& fn() const { return fn_; }
  const RunContext& run() const { return run_; }
  const Value& operator[](int i) const;  // nil past the end
  int count() const { return int(a_.size()); }
  bool none(int i) const { return (*this)[i].is_nil(); }
  double number(int i) const;
  int64_t integer(int i, int64_t lo = -kMaxExactInteger, int64_t hi = kMaxExactInteger) const;
  int int_(int i, int lo = INT32_MIN, int hi = INT32_MAX) const { return int(integer(i, lo, hi)); }
  std::string string(int i) const;
  const Value& table(int i) const;
  at::Tensor tensor(int i) const;
  Options options(int i) const { return Options((*this)[i], fn_, i); }
  // an object a binding unboxed (Opaque with type `type`), or "fn: argument N: expected `what`"
  template <class T>
  T& object(int i, const char* type, const char* what) const {
    const Value& x = (*this)[i];
    const auto* o = std::get_if<Opaque>(&x.v);
    if (!o || o->type != type || !o->ptr) fail("{}: argument {}: expected {}, got {}", fn_, i, what, x.type_name());
    return *static_cast<T*>(o->ptr.get());
  }

 private:
  [[noreturn]] void wrong(int i, const char* expected) const;
  List a_;
  std::string fn_;
  const RunContext& run_;
};

// A function scripts call: its full name (lt.diag.splits, as its errors say) and its body, which reads its
// arguments and returns its results (bindings/luat.h: set_script_funcs registers a list).
struct ScriptFunction {
  const char* name;
  List (*fn)(const Args&);
  const char* key = nullptr;  // its key in the module when not the name's last part
};

// A type of object runtime makes and scripts hold (Opaque values of `type` whose ptr owns the
// object): its methods ("reference:logprobs"), index (self, key) → a property or nil, and
// tostring (self) → text. bindings/luat.h: new_script_class.
struct ScriptClass {
  const char* type;
  std::vector<ScriptFunction> methods;
  ScriptFunction index, tostring;
};

// lt.api(name) → the declaration of name (runtime/core/api.h) as {name=, signature=, summary=,
// options = {{key=, kind=, doc=[, default= (text), min=, max=]}, ...}}, or nil; lt.api() → every declared name, sorted.
const std::vector<ScriptFunction>& api_functions();

}  // namespace ltrun
