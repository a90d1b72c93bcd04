// runtime/train/freeze.cpp: freeze specs: matching parameters by the part their architecture
// tags them with (model::ParamPart), freezing, counting.
#include "runtime/train/freeze.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <cmath>

#include "runtime/core/error.h"

namespace ltrun::train {

Spec Spec::blocks(std::set<int> layers, Part::Sub sub) {
  Spec s;
  Part p;
  p.kind = Part::Kind::Blocks;
  p.layers = std::move(layers);
  p.sub = sub;
  s.parts.push_back(std::move(p));
  return s;
}

Spec Spec::named(const std::string& name) {
  Part p;
  if (name == "embeddings") p.kind = Part::Kind::Embeddings;
  else if (name == "final_norm") p.kind = Part::Kind::FinalNorm;
  else if (name == "lm_head") p.kind = Part::Kind::LmHead;
  else if (name == "all") p.kind = Part::Kind::All;
  else fail("freeze spec: unknown part '{}': expected embeddings, final_norm, lm_head or all", name);
  Spec s;
  s.parts.push_back(p);
  return s;
}

Spec& Spec::add(const Spec& other) {
  parts.insert(parts.end(), other.parts.begin(), other.parts.end());
  return *this;
}

namespace {

std::string ranges(const std::set<int>& s) {
  std::string out;
  auto it = s.begin();
  while (it != s.end()) {
    int a = *it, b = a;
    while (std::next(it) != s.end() && *std::next(it) == b + 1) b = *++it;
    ++it;
    if (!out.empty()) out += ",";
    out += a == b ? fmt::format("{}", a) : fmt::format("{}-{}", a, b);
  }
  return out;
}

const char* sub_name(Part::Sub s) {
  switch (s) {
    case Part::Sub::Attention: return "attention";
    case Part::Sub::Mlp: return "mlp";
    case Part::Sub::Norms: return "norms";
    case Part::Sub::All: break;
  }
  return "";
}

// "attention" selects a block's token mixer, whatever its kind (attention, Mamba2, ...)
bool sub_matches(Part::Sub sub, model::ParamPart part) {
  switch (sub) {
    case Part::Sub::All: return true;
    case Part::Sub::Attention: return part == model::ParamPart::Mixer;
    case Part::Sub::Mlp: return part == model::ParamPart::Mlp;
    case Part::Sub::Norms: return part == model::ParamPart::Norm;
  }
  return false;
}

void check_layers(const model::Model& m, const Spec& spec) {
  for (const Part& p : spec.parts)
    for (int l : p.layers)
      LT_CHECK(l >= 0 && l < m.n_layers(), "freeze spec: block {} out of range 0..{}", l,
               m.n_layers() - 1);
}

}  // namespace

std::string Spec::describe() const {
  if (parts.empty()) return "nothing";
  std::string out;
  for (const Part& p : parts) {
    if (!out.empty()) out += " + ";
    switch (p.kind) {
      case Part::Kind::Blocks:
        out += p.layers.empty() ? "no blocks" : "blocks " + ranges(p.layers);
        if (p.sub != Part::Sub::All) out += fmt::format(" ({})", sub_name(p.sub));
        break;
      case Part::Kind::Embeddings: out += "embeddings"; break;
      case Part::Kind::FinalNorm: out += "final_norm"; break;
      case Part::Kind::LmHead: out += "lm_head"; break;
      case Part::Kind::All: out += "all"; break;
    }
  }
  return out;
}

std::set<int> shallow_layers(int n, double fraction) {
  LT_CHECK(fraction >= 0 && fraction <= 1, "shallow: fraction {} outside [0, 1]", fraction);
  const int k = int(std::lround(fraction * n));
  std::set<int> s;
  for (int l = 0; l < k; ++l) s.insert(l);
  return s;
}

std::set<int> deep_layers(int n, double fraction) {
  LT_CHECK(fraction >= 0 && fraction <= 1, "deep: fraction {} outside [0, 1]", fraction);
  const int k = int(std::lround(fraction * n));
  std::set<int> s;
  for (int l = k; l < n; ++l) s.insert(l);
  return s;
}

std::set<int> range_layers(int a, int b) {
  LT_CHECK(a >= 0 && b >= a, "range: expected 0 <= a <= b, got {}..{}", a, b);
  std::set<int> s;
  for (int l = a; l <= b; ++l) s.insert(l);
  return s;
}

std::set<int> middle_layers(int n, int k) {
  LT_CHECK(k >= 0 && k <= n, "middle: k = {} outside 0..{}", k, n);
  const int first = (n - k) / 2;
  return k == 0 ? std::set<int>{} : range_layers(first, first + k - 1);
}

bool selects(const model::Model& m, const Spec& spec, const model::Param& p) {
  const bool tied = m.config().tie_word_embeddings;
  for (const Part& part : spec.parts) {
    switch (part.kind) {
      case Part::Kind::All: return true;
      case Part::Kind::Blocks:
        if (p.layer >= 0 && part.layers.count(p.layer) && sub_matches(part.sub, p.part)) return true;
        break;
      case Part::Kind::Embeddings:
        if (p.part == model::ParamPart::Embeddings) return true;
        break;
      case Part::Kind::FinalNorm:
        if (p.layer < 0 && p.part == model::ParamPart::Norm) return true;
        break;
      case Part::Kind::LmHead:
        if (p.part == model::ParamPart::Head || (tied && p.part == model::ParamPart::Embeddings))
          return true;
        break;
    }
  }
  return false;
}

namespace {

bool mentions(const Spec& spec, Part::Kind k) {
  for (const Part& p : spec.parts)
    if (p.kind == k) return true;
  return false;
}

FreezeReport apply(model::Model& m, const Spec& spec, bool train_only_mode) {
  check_layers(m, spec);
  for (const model::Param& p : m.parameters()) {
    const bool sel = selects(m, spec, p);
    p.tensor.set_requires_grad(train_only_mode ? sel : !sel);
  }
  FreezeReport r = count_trainable(m);
  if (m.config().tie_word_embeddings &&
      mentions(spec, Part::Kind::Embeddings) != mentions(spec, Part::Kind::LmHead)) {
    const char* verb = train_only_mode ? "training" : "freezing";
    r.notes.push_back(mentions(spec, Part::Kind::Embeddings)
                          ? fmt::format("tied embeddings: {} embeddings also {} lm_head (one tensor)",
                                        verb, train_only_mode ? "trains" : "freezes")
                          : fmt::format("tied embeddings: {} lm_head also {} embeddings (one tensor)",
                                        verb, train_only_mode ? "trains" : "freezes"));
  }
  return r;
}

}  // namespace

FreezeReport freeze(model::Model& m, const Spec& spec) { return apply(m, spec, false); }
FreezeReport train_only(model::Model& m, const Spec& spec) { return apply(m, spec, true); }

FreezeReport count_trainable(const model::Model& m) {
  FreezeReport r;
  for (const model::Param& p : m.parameters()) {
    r.total += p.tensor.numel();
    if (p.tensor.requires_grad()) r.trainable += p.tensor.numel();
  }
  return r;
}

int lowest_trainable_layer(const model::Model& m) {
  int lowest = m.n_layers() + 1;
  for (const model::Param& p : m.parameters()) {
    if (!p.tensor.requires_grad()) continue;
    if (p.part == model::ParamPart::Embeddings) return -1;
    lowest = std::min(lowest, p.layer >= 0 ? p.layer : m.n_layers());
  }
  return lowest;
}

}  // namespace ltrun::train
