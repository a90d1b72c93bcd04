// runtime/model/assemble.cpp: assemble_hybrid: donor configs and tensors read from their
// checkpoints (only the tensors asked for are read), the config written (native or
// ltrun_hybrid), fresh layers from Model::init, copied tensors over them, saved with the
// embedding donor's tokenizer files.
#include "runtime/model/assemble.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "runtime/core/device.h"
#include "runtime/core/env.h"
#include "runtime/core/error.h"
#include "runtime/core/fs.h"
#include "runtime/io/checkpoint.h"
#include "runtime/model/arch.h"
#include "runtime/model/model.h"
#include "runtime/text/tokenizer.h"

namespace ltrun::model {
namespace fs = std::filesystem;

namespace {

struct Donor {
  std::string dir;  // as the spec names it (messages, hybrid_sources)
  Config config;
  const Arch* arch;
  io::Checkpoint ck;
};

class Donors {
 public:
  const Donor& get(const std::string& dir) {
    LT_CHECK(!dir.empty(), "hybrid: a donor folder is empty");
    const std::string key = fs::weakly_canonical(fs::path(dir)).string();
    auto it = by_key_.find(key);
    if (it != by_key_.end()) return *it->second;
    Config c = read_config(dir);
    const fs::path base = fs::is_directory(dir) ? fs::path(dir) : fs::path(dir).parent_path();
    auto d = std::make_unique<Donor>(Donor{base.string(), std::move(c), nullptr, io::Checkpoint::open(base.string())});
    d->arch = &find_arch(d->config.model_type, d->config.source);
    return *by_key_.emplace(key, std::move(d)).first->second;
  }
  static bool same(const Donor& a, const Donor& b) { return &a == &b; }

 private:
  std::map<std::string, std::unique_ptr<Donor>> by_key_;
};

// The name a donor's checkpoint stores `name` under (HF may have renamed it).
std::string stored_name(const Donor& d, const std::string& name) {
  if (d.ck.has(name)) return name;
  if (d.arch->aliases)
    for (const std::string& alt : d.arch->aliases(name))
      if (d.ck.has(alt)) return alt;
  fail("hybrid: donor {}: missing tensor {} ({} describes it)", d.dir, name, d.config.source);
}

struct Named {
  std::string suffix;  // after the layer prefix
  std::vector<int64_t> shape;
};

// The tensors of layer i of a model with config c, with their full names.
std::vector<Named> layer_tensors(const Arch& arch, const Config& c, int i, std::string* prefix) {
  std::unique_ptr<Layer> layer = arch.make_layer(c, i);
  std::vector<Slot> slots;
  layer->slots(slots);
  *prefix = fmt::format(fmt::runtime(arch.layer_prefix), i);
  std::vector<Named> out;
  for (Slot& s : slots) out.push_back({s.name, s.shape});
  return out;
}

// Same vocabulary: vocab_size, and the token of every id where both have a tokenizer.json.
void check_vocab(const Donor& a, const Donor& b) {
  if (a.config.vocab_size != b.config.vocab_size)
    fail("hybrid: donors {} (vocab_size {}) and {} (vocab_size {}) have different vocabularies; the "
         "embeddings, layers and head of a hybrid must share one tokenizer",
         a.dir, a.config.vocab_size, b.dir, b.config.vocab_size);
  const std::string ta = (fs::path(a.dir) / "tokenizer.json").string(),
                    tb = (fs::path(b.dir) / "tokenizer.json").string();
  if (!fs::exists(ta) || !fs::exists(tb) || read_file(ta) == read_file(tb)) return;
  const text::Tokenizer x = text::Tokenizer::load(ta), y = text::Tokenizer::load(tb);
  LT_CHECK(x.vocab_size() == y.vocab_size(),
           "hybrid: donors {} and {} have different tokenizers ({} and {} tokens)", a.dir, b.dir,
           x.vocab_size(), y.vocab_size());
  for (int32_t id = 0; id < x.vocab_size(); ++id)
    LT_CHECK(x.id_to_token(id) == y.id_to_token(id),
             "hybrid: donors {} and {} have different vocabularies (token {} is \"{}\" in one, \"{}\" "
             "in the other)",
             a.dir, b.dir, id, x.id_to_token(id), y.id_to_token(id));
}

// A donor's config.json object for its layer i (an ltrun_hybrid donor: that layer's config).
nlohmann::json layer_config_of(const Donor& d, int64_t i) {
  nlohmann::json j = nlohmann::json::parse(d.config.json);
  if (d.config.model_type == "ltrun_hybrid") return j.at("layer_configs").at(j.at("layer_config_ids").at(size_t(i)).get<size_t>());
  j.erase("hybrid_sources");
  return j;
}

std::string kind_name(const std::string& k) { return k == "mamba2" ? "mamba" : k; }

// One layer of the stack being assembled.
struct Planned {
  const Donor* donor = nullptr;  // copied from donor's layer `layer`; null: fresh
  int64_t layer = -1;
  std::string kind;
  nlohmann::json config;  // its layer config (a complete config.json object)
  Config parsed;
  nlohmann::json source;  // for hybrid_sources
};

void set_token_ids(const Config& c, nlohmann::json& j) {
  j["bos_token_id"] = c.bos_token_id ? nlohmann::json(*c.bos_token_id) : nlohmann::json(nullptr);
  if (c.eos_token_ids.size() == 1) j["eos_token_id"] = c.eos_token_ids[0];
  else if (!c.eos_token_ids.empty()) j["eos_token_id"] = c.eos_token_ids;
  else j["eos_token_id"] = nullptr;
  if (c.pad_token_id) j["pad_token_id"] = *c.pad_token_id;
}

// The native config.json of the stack, when it is one architecture with one set of
// hyper-parameters (what that architecture's writer writes must be the same for every layer).
std::optional<std::string> native_config(const std::vector<Planned>& plan, const Config& tokens,
                                         bool tie, double final_eps, const std::string& dtype) {
  std::vector<std::string> kinds;
  for (const Planned& p : plan) kinds.push_back(p.kind);
  auto normal = [&](Config x) {
    x.n_layers = int64_t(kinds.size());
    x.layer_types = kinds;
    x.tie_word_embeddings = tie;
    x.bos_token_id = tokens.bos_token_id;
    x.pad_token_id = tokens.pad_token_id;
    x.eos_token_ids = tokens.eos_token_ids;
    x.torch_dtype = dtype;
    return new_config_json(x);
  };
  const std::string text = normal(plan[0].parsed);
  for (const Planned& p : plan)
    if (p.parsed.model_type != plan[0].parsed.model_type || normal(p.parsed) != text) return std::nullopt;
  try {  // what the architecture reads back must be this stack (a writer may not express it)
    const Config back = parse_config(text, "native hybrid config");
    if (back.layer_types != kinds || back.rms_norm_eps != final_eps || back.tie_word_embeddings != tie)
      return std::nullopt;
  } catch (const Error&) {
    return std::nullopt;
  }
  return text;
}

c10::ScalarType stored_dtype(const std::string& st) {
  if (st == "F32") return c10::kFloat;
  if (st == "BF16") return c10::kBFloat16;
  if (st == "F16") return c10::kHalf;
  if (st == "F64") return c10::kDouble;
  fail("hybrid: donor tensors stored as {} cannot be model weights", st);
}

}  // namespace

std::vector<HybridLayerSpec> parse_hybrid_layers(const std::string& text) {
  std::vector<HybridLayerSpec> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    start = end + 1;
    LT_CHECK(!item.empty(), "hybrid layers \"{}\": an empty item", text);
    const size_t colon = item.rfind(':');
    if (colon == std::string::npos) {  // KIND or KIND@DIR
      HybridLayerSpec s;
      const size_t at = item.find('@');
      s.kind = item.substr(0, at);
      if (at != std::string::npos) s.like = item.substr(at + 1);
      LT_CHECK(!s.kind.empty(), "hybrid layers: \"{}\": no layer kind before @", item);
      out.push_back(s);
      continue;
    }
    const std::string dir = item.substr(0, colon), range = item.substr(colon + 1);
    const size_t dash = range.find('-');
    auto number = [&](const std::string& s) {
      LT_CHECK(!s.empty() && s.size() < 7 && s.find_first_not_of("0123456789") == std::string::npos,
               "hybrid layers: \"{}\": expected DIR:I or DIR:I-J with layer numbers, found \"{}\"", item, range);
      return std::stoll(s);
    };
    const int64_t lo = number(range.substr(0, dash)),
                  hi = dash == std::string::npos ? lo : number(range.substr(dash + 1));
    LT_CHECK(!dir.empty(), "hybrid layers: \"{}\": no donor folder before ':'", item);
    LT_CHECK(lo <= hi, "hybrid layers: \"{}\": the range {}-{} is empty", item, lo, hi);
    for (int64_t i = lo; i <= hi; ++i) {
      HybridLayerSpec s;
      s.from = dir;
      s.layer = i;
      out.push_back(s);
    }
  }
  return out;
}

HybridResult assemble_hybrid(const HybridSpec& spec) {
  LT_CHECK(!spec.out_dir.empty(), "hybrid: an output folder is needed");
  LT_CHECK(!spec.embed.empty(), "hybrid: the embedding donor (embed) is needed");
  LT_CHECK(!spec.layers.empty(), "hybrid: no layers given");
  LT_CHECK(spec.layers.size() <= 4096, "hybrid: {} layers (at most 4096)", spec.layers.size());
  if (fs::exists(spec.out_dir)) {  // empty, or holding only lt.fs's ownership marker
    bool empty = fs::is_directory(spec.out_dir);
    if (empty)
      for (const auto& e : fs::directory_iterator(spec.out_dir)) empty &= e.path().filename() == ltrun::fs::kOwnedMarker;
    LT_CHECK(empty, "hybrid: {} exists and is not empty; choose another folder", spec.out_dir);
  }
  Donors donors;
  const Donor& E = donors.get(spec.embed);
  const Donor& H = donors.get(spec.head.empty() ? spec.embed : spec.head);
  check_vocab(E, H);
  LT_CHECK(E.config.hidden_size == H.config.hidden_size,
           "hybrid: donors {} (hidden_size {}) and {} (hidden_size {}) have different hidden sizes", E.dir,
           E.config.hidden_size, H.dir, H.config.hidden_size);
  std::vector<const Donor*> order = {&E, &H};  // where a fresh layer looks for its config
  for (const HybridLayerSpec& s : spec.layers)
    if (!s.from.empty()) order.push_back(&donors.get(s.from));
  auto check_donor = [&](const Donor& d, const std::string& what) {
    check_vocab(E, d);
    LT_CHECK(d.config.hidden_size == E.config.hidden_size,
             "hybrid: {}: donor {} has hidden_size {}, the embeddings' donor {} has {}", what, d.dir,
             d.config.hidden_size, E.dir, E.config.hidden_size);
  };

  std::vector<Planned> plan;
  for (size_t l = 0; l < spec.layers.size(); ++l) {
    const HybridLayerSpec& s = spec.layers[l];
    const std::string what = fmt::format("layer {}", l);
    Planned p;
    if (!s.from.empty()) {
      const Donor& d = donors.get(s.from);
      check_donor(d, what);
      LT_CHECK(s.layer >= 0 && s.layer < d.config.n_layers, "hybrid: {}: donor {} has layers 0..{}, asked for {}",
               what, d.dir, d.config.n_layers - 1, s.layer);
      LT_CHECK(s.kind.empty() || kind_name(s.kind) == d.config.layer_types[size_t(s.layer)],
               "hybrid: {}: layer {} of {} is a {} layer, the spec says {}", what, s.layer, d.dir,
               d.config.layer_types[size_t(s.layer)], s.kind);
      p.donor = &d;
      p.layer = s.layer;
      p.kind = d.config.layer_types[size_t(s.layer)];
      p.config = layer_config_of(d, s.layer);
      p.source = {{"from", d.dir}, {"layer", s.layer}};
    } else {
      LT_CHECK(!s.kind.empty(), "hybrid: {}: give a donor (from, layer) or the kind of a fresh layer", what);
      LT_CHECK(s.init == "hf", "hybrid: {}: init \"{}\" (the only init is \"hf\": as HF initialises the "
                               "architecture)", what, s.init);
      p.kind = kind_name(s.kind);
      const Donor* like = nullptr;
      int64_t at = -1;
      auto find_kind = [&](const Donor& d) {
        for (size_t i = 0; i < d.config.layer_types.size(); ++i)
          if (d.config.layer_types[i] == p.kind) return int64_t(i);
        return int64_t(-1);
      };
      if (!s.like.empty()) {
        like = &donors.get(s.like);
        check_donor(*like, what);
        at = find_kind(*like);
        LT_CHECK(at >= 0, "hybrid: {}: donor {} has no {} layer to take its config from (its kinds: {})", what,
                 like->dir, p.kind, fmt::join(like->config.layer_types, ", "));
      } else {
        for (const Donor* d : order)
          if ((at = find_kind(*d)) >= 0) {
            like = d;
            break;
          }
        LT_CHECK(like, "hybrid: {}: no donor has a {} layer to take its config from; name one with like "
                       "(KIND@DIR on the command line)", what, p.kind);
      }
      p.config = layer_config_of(*like, at);
      if (!s.config.is_null()) {
        LT_CHECK(s.config.is_object(), "hybrid: {}: config must be an object of config.json keys", what);
        p.config.merge_patch(s.config);
      }
      p.source = {{"kind", p.kind}, {"like", like->dir}, {"init", s.init}, {"seed", spec.seed}};
      if (!s.config.is_null()) p.source["config"] = s.config;
    }
    p.parsed = parse_config(p.config.dump(), fmt::format("hybrid {} (config of {})", what,
                                                          p.donor ? p.donor->dir : p.source["like"].get<std::string>()));
    LT_CHECK(p.parsed.hidden_size == E.config.hidden_size,
             "hybrid: {}: its config has hidden_size {}, the embeddings' donor {} has {}", what,
             p.parsed.hidden_size, E.dir, E.config.hidden_size);
    LT_CHECK(std::find(p.parsed.layer_types.begin(), p.parsed.layer_types.end(), p.kind) != p.parsed.layer_types.end(),
             "hybrid: {}: a {} config has no {} layers (its kinds: {})", what, p.parsed.model_type, p.kind,
             fmt::join(p.parsed.layer_types, ", "));
    plan.push_back(std::move(p));
  }

  // the tensors to copy: (hybrid part, donor, donor's stored name)
  const bool tie = Donors::same(E, H) && E.config.tie_word_embeddings;
  const std::string embed_src = stored_name(E, E.arch->embed_name);
  const std::string norm_src = stored_name(H, H.arch->norm_name);
  const std::string head_src = H.config.tie_word_embeddings ? stored_name(H, H.arch->embed_name)
                                                            : stored_name(H, H.arch->head_name);
  std::set<std::string> dtypes = {E.ck.info(embed_src).dtype, H.ck.info(norm_src).dtype};
  if (!tie) dtypes.insert(H.ck.info(head_src).dtype);
  for (const Planned& p : plan)
    if (p.donor) {
      std::string prefix;
      for (const Named& n : layer_tensors(*p.donor->arch, p.donor->config, int(p.layer), &prefix))
        dtypes.insert(p.donor->ck.info(stored_name(*p.donor, prefix + n.suffix)).dtype);
    }
  // one stored dtype is kept; a mix is widened to float32 (exact for bf16 and fp16)
  const c10::ScalarType dtype = dtypes.size() == 1 ? stored_dtype(*dtypes.begin()) : c10::kFloat;

  // the config: native when the stack is one architecture, else ltrun_hybrid
  nlohmann::json sources = {{"embed", E.dir}, {"head", H.dir}, {"layers", nlohmann::json::array()}};
  for (const Planned& p : plan) sources["layers"].push_back(p.source);
  std::optional<std::string> native;
  if (spec.native) native = native_config(plan, E.config, tie, H.config.rms_norm_eps, dtype_name(dtype));
  nlohmann::json j;
  if (native) {
    j = nlohmann::json::parse(*native);
  } else {
    j = {{"architectures", {kLtrunHybridArch.hf_class}},
         {"model_type", kLtrunHybridArch.model_type},
         {"vocab_size", E.config.vocab_size},
         {"hidden_size", E.config.hidden_size},
         {"num_hidden_layers", int64_t(plan.size())},
         {"rms_norm_eps", H.config.rms_norm_eps},
         {"tie_word_embeddings", tie}};
    nlohmann::json types = nlohmann::json::array(), ids = nlohmann::json::array(),
                   configs = nlohmann::json::array();
    std::map<std::string, size_t> seen;
    for (const Planned& p : plan) {
      const std::string key = p.config.dump();
      auto [it, fresh] = seen.emplace(key, configs.size());
      if (fresh) configs.push_back(p.config);
      types.push_back(p.kind);
      ids.push_back(it->second);
    }
    j["layer_types"] = types;
    j["layer_config_ids"] = ids;
    j["layer_configs"] = configs;
    set_token_ids(E.config, j);
    j["torch_dtype"] = dtype_name(dtype);
  }
  j["hybrid_sources"] = sources;
  const std::string config_path = (fs::path(spec.out_dir) / "config.json").string();
  Config hc = parse_config(j.dump(2) + "\n", config_path);
  const fs::path gen = fs::path(E.dir) / "generation_config.json";
  if (fs::exists(gen)) hc.generation_json = read_file(gen.string());

  Model m = Model::init(hc, spec.seed, c10::kCPU, dtype);
  const Arch& arch = find_arch(hc.model_type, config_path);
  HybridResult r;
  at::NoGradGuard no_grad;
  std::map<std::string, at::Tensor> params;
  for (const Param& p : m.parameters()) params.emplace(p.name, p.tensor);
  auto copy = [&](const std::string& name, const Donor& d, const std::string& src) {
    at::Tensor dst = params.at(name);
    const at::Tensor t = d.ck.tensor(src);
    LT_CHECK(t.sizes() == dst.sizes(), "hybrid: {}: donor {} tensor {} has shape {}, the hybrid needs {}", name,
             d.dir, src, fmt::format("[{}]", fmt::join(t.sizes(), ", ")),
             fmt::format("[{}]", fmt::join(dst.sizes(), ", ")));
    dst.copy_(t);
    r.copied.push_back({name, d.dir, src});
  };
  copy(arch.embed_name, E, embed_src);
  for (size_t l = 0; l < plan.size(); ++l) {
    const Planned& p = plan[l];
    if (!p.donor) {
      r.fresh_layers.push_back(int(l));
      continue;
    }
    std::string src_prefix, dst_prefix;
    const std::vector<Named> src = layer_tensors(*p.donor->arch, p.donor->config, int(p.layer), &src_prefix);
    const std::vector<Param> dst = m.parameters(int(l));
    dst_prefix = fmt::format(fmt::runtime(arch.layer_prefix), l);
    LT_CHECK(src.size() == dst.size(), "hybrid: layer {}: donor {} layer {} has {} tensors, the hybrid's has {}",
             l, p.donor->dir, p.layer, src.size(), dst.size());
    for (size_t k = 0; k < src.size(); ++k) {
      LT_CHECK(dst[k].name == dst_prefix + src[k].suffix, "hybrid: layer {}: tensor {} does not match donor {}'s {}",
               l, dst[k].name, p.donor->dir, src_prefix + src[k].suffix);
      copy(dst[k].name, *p.donor, stored_name(*p.donor, src_prefix + src[k].suffix));
    }
  }
  copy(arch.norm_name, H, norm_src);
  if (!tie) copy(arch.head_name, H, head_src);

  ltrun::fs::make_dirs(spec.out_dir);  // marked as ltrun's: a study may replace it (lt.fs.remove)
  m.save(spec.out_dir);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json",
                        "merges.txt", "tokenizer.model"}) {
    const fs::path src = fs::path(E.dir) / f;
    if (fs::exists(src)) fs::copy_file(src, fs::path(spec.out_dir) / f, fs::copy_options::overwrite_existing);
  }
  // A warning, not an error: a stack of donors without tokenizer files is a real case (weights
  // from elsewhere, token-id studies) and the hybrid works on ids. But a hybrid silently without
  // the tokenizer its ids mean is a trap (lt.model.load gives it none, text prompts fail later).
  // No other donor's tokenizer is copied in: the ids are the embedding donor's.
  if (!fs::exists(fs::path(E.dir) / "tokenizer.json")) {
    std::string other = fs::exists(fs::path(H.dir) / "tokenizer.json") ? H.dir : "";
    for (const Planned& p : plan)
      if (other.empty() && p.donor && fs::exists(fs::path(p.donor->dir) / "tokenizer.json")) other = p.donor->dir;
    r.warnings.push_back(fmt::format(
        "hybrid: warning: the embedding donor {} has no tokenizer.json, so {} is written without one "
        "(lt.model.load gives it no tokenizer: text prompts are refused, token ids work){}",
        E.dir, spec.out_dir,
        other.empty() ? std::string()
                      : fmt::format("; donor {} has one, but it is not copied: the token ids are the "
                                    "embedding donor's (copy it in by hand if the vocabularies are one)",
                                    other)));
  }
  for (const std::string& w : r.warnings) fmt::print(stderr, "{}\n", w);
  r.dir = spec.out_dir;
  r.model_type = hc.model_type;
  r.dtype = dtype_name(dtype);
  r.n_layers = hc.n_layers;
  r.layer_types = hc.layer_types;
  for (const Param& p : m.parameters()) r.parameters += p.tensor.numel();
  return r;
}

const Fields<HybridSpec>& hybrid_fields() {
  static const Fields<HybridSpec> f = {{"out", &HybridSpec::out_dir},
                                       {"embed", &HybridSpec::embed},
                                       {"head", &HybridSpec::head},
                                       {"native", &HybridSpec::native}};
  return f;
}

const Fields<HybridLayerSpec>& hybrid_layer_fields() {
  static const Fields<HybridLayerSpec> f = {{"from", &HybridLayerSpec::from},
                                            {"layer", &HybridLayerSpec::layer, 0, 1 << 20},
                                            {"kind", &HybridLayerSpec::kind},
                                            {"like", &HybridLayerSpec::like},
                                            {"init", &HybridLayerSpec::init}};
  return f;
}

const Fields<HybridResult>& hybrid_result_fields() {
  static const Fields<HybridResult> f = {{"dir", &HybridResult::dir},
                                         {"arch", &HybridResult::model_type},
                                         {"dtype", &HybridResult::dtype},
                                         {"n_layers", &HybridResult::n_layers},
                                         {"parameters", &HybridResult::parameters},
                                         {"layer_types", &HybridResult::layer_types},
                                         {"warnings", &HybridResult::warnings}};
  return f;
}

const Fields<HybridCopy>& hybrid_copy_fields() {
  static const Fields<HybridCopy> f = {
      {"name", &HybridCopy::name}, {"donor", &HybridCopy::donor}, {"donor_name", &HybridCopy::donor_name}};
  return f;
}

}  // namespace ltrun::model
