// tests/model/test_hybrid.cpp: hybrid assembly (runtime/model/assemble.h) and the ltrun_hybrid
// architecture: exactly the donor tensors asked for are copied (bit-equal, named, nothing
// else), fresh layers get HF's init, vocabulary and hidden-size mismatches are refused naming
// both donors, the save -> load round trip is bit-exact, and the forward pass equals the
// donors' own layers composed by hand (resume from a layer, the donor's lens): one donor's
// layers give the donor's logits, mixed Qwen3 + Nemotron-H and Qwen2 + Qwen3 stacks (another
// RoPE theta, biases, no q/k norm) give the composed donors' logits; decoding token by token
// agrees with the full pass; a stack of one architecture is written in that architecture's
// own config.
#include <ATen/core/grad_mode.h>

#include <map>
#include <nlohmann/json.hpp>

#include "model_test_util.h"
#include "runtime/core/env.h"
#include "runtime/core/fs.h"
#include "runtime/io/checkpoint.h"
#include "runtime/model/assemble.h"
#include "runtime/model/model.h"

using namespace ltrun::model;
using model_test::rel_err;

namespace {

// Donor weights far from any fresh init (std 0.02, unit norms), so that a copied tensor and
// an initialised one cannot be mistaken, and every layer moves the logits well above rounding.
std::string donor(const std::string& name, TinySpec s) {
  Model m = make_tiny(s);
  at::NoGradGuard no_grad;
  at::Generator g = at::detail::createCPUGenerator(s.seed + 100);
  for (auto& p : m.parameters()) {
    const auto r = at::rand(p.tensor.sizes(), g, at::kFloat);
    if (p.decay) p.tensor.mul_(p.part == ParamPart::Embeddings ? 30 : 10);
    else if (p.name.find("A_log") != std::string::npos) p.tensor.add_(r - 0.5);
    else p.tensor.add_(r * 0.5 - 0.25);
  }
  const std::string dir = model_test::scratch("hybrid_" + name);
  m.save(dir);
  return dir;
}

TinySpec qwen3(uint64_t seed = 1, int64_t layers = 4) { return ltrun_test::tiny_spec("qwen3", layers, seed); }
TinySpec nemotron(const std::string& pattern = "M*-M", uint64_t seed = 2) {
  TinySpec s = ltrun_test::tiny_spec("nemotron_h", int64_t(pattern.size()), seed);
  s.pattern = pattern;
  s.chunk = 4;  // several chunks in a few tokens
  return s;
}

std::map<std::string, at::Tensor> tensors(const Model& m) {
  std::map<std::string, at::Tensor> out;
  for (const Param& p : m.parameters()) out.emplace(p.name, p.tensor);
  return out;
}

nlohmann::json config_of(const std::string& dir) {
  return nlohmann::json::parse(ltrun::read_file(dir + "/config.json"));
}

HybridLayerSpec from(const std::string& dir, int64_t layer) {
  HybridLayerSpec s;
  s.from = dir;
  s.layer = layer;
  return s;
}

HybridLayerSpec fresh(const std::string& kind, const std::string& like = "") {
  HybridLayerSpec s;
  s.kind = kind;
  s.like = like;
  return s;
}

at::Tensor logits(const Model& m, const at::Tensor& ids) { return m.forward(ids).logits; }

// Layers lo..hi of donor d run on the residual h (from another model's layers).
at::Tensor run_layers(const Model& d, const at::Tensor& h, int lo, int hi) {
  ForwardOptions o;
  o.from_layer = lo;
  o.to_layer = hi;
  o.hidden = h;
  o.logits = Logits::None;
  return d.forward({}, o).residual;
}

at::Tensor embed_then(const Model& d, const at::Tensor& ids, int hi) {
  ForwardOptions o;
  o.to_layer = hi;
  o.logits = Logits::None;
  return d.forward(ids, o).residual;
}

}  // namespace

TEST_CASE("hybrid: copies exactly the donor tensors asked for, fresh layers get HF's init", "[hybrid]") {
  const std::string A = donor("copy_q", qwen3()), B = donor("copy_nh", nemotron());
  HybridSpec s;
  s.out_dir = model_test::scratch("hybrid_copy_out");
  s.embed = B;
  s.head = A;
  s.layers = {from(B, 0), from(B, 1), fresh("mlp"), from(A, 2), from(A, 3)};
  s.seed = 5;
  const HybridResult r = assemble_hybrid(s);
  CHECK(r.model_type == "ltrun_hybrid");
  CHECK(r.layer_types == std::vector<std::string>{"mamba", "attention", "mlp", "decoder", "decoder"});
  CHECK(r.fresh_layers == std::vector<int>{2});

  const Model h = Model::load(s.out_dir), a = Model::load(A), b = Model::load(B);
  const auto ht = tensors(h), at_ = tensors(a), bt = tensors(b);
  // what each hybrid tensor must be: the donor tensor of the same layer-relative name
  std::map<std::string, std::pair<std::string, at::Tensor>> expected;  // hybrid name -> (donor, tensor)
  auto expect_layer = [&](int hl, const std::string& dir, const std::map<std::string, at::Tensor>& dt,
                          const std::string& dprefix) {
    for (const auto& [name, t] : dt)
      if (name.rfind(dprefix, 0) == 0)
        expected[fmt::format("model.layers.{}.", hl) + name.substr(dprefix.size())] = {dir, t};
  };
  expect_layer(0, B, bt, "backbone.layers.0.");
  expect_layer(1, B, bt, "backbone.layers.1.");
  expect_layer(3, A, at_, "model.layers.2.");
  expect_layer(4, A, at_, "model.layers.3.");
  expected["model.embed_tokens.weight"] = {B, bt.at("backbone.embeddings.weight")};
  expected["model.norm.weight"] = {A, at_.at("model.norm.weight")};
  expected["lm_head.weight"] = {A, at_.at("lm_head.weight")};

  // every expected tensor is there and bit-equal; the copy list names exactly these
  for (const auto& [name, src] : expected) {
    INFO(name);
    REQUIRE(ht.count(name));
    CHECK(at::equal(ht.at(name), src.second));
  }
  CHECK(r.copied.size() == expected.size());
  for (const HybridCopy& c : r.copied) {
    INFO(c.name);
    REQUIRE(expected.count(c.name));
    CHECK(c.donor == expected.at(c.name).first);
  }
  // everything else is the fresh MLP layer: HF's init (unit norm, normal(0, 0.02) matrices),
  // equal to no donor tensor
  int fresh_tensors = 0;
  for (const auto& [name, t] : ht) {
    if (expected.count(name)) continue;
    INFO(name);
    REQUIRE(name.rfind("model.layers.2.", 0) == 0);
    ++fresh_tensors;
    if (name.find("norm") != std::string::npos) {
      CHECK(at::equal(t, at::ones_like(t)));
    } else {
      CHECK(std::abs(t.std().item<double>() - 0.02) < 0.004);
      CHECK(std::abs(t.mean().item<double>()) < 0.004);
    }
    for (const auto* donor_map : {&at_, &bt})
      for (const auto& [dn, dt] : *donor_map)
        if (dt.sizes() == t.sizes()) CHECK_FALSE(at::equal(dt, t));
  }
  CHECK(fresh_tensors == 3);  // norm, up_proj, down_proj of a Nemotron-H MLP layer
  // parts and kinds are the donors' (freeze specs select by them)
  for (const Param& p : h.parameters(3)) {
    const auto donor_params = a.parameters(2);
    bool found = false;
    for (const Param& q : donor_params)
      if (q.name.substr(std::string("model.layers.2.").size()) == p.name.substr(std::string("model.layers.3.").size())) {
        CHECK(q.part == p.part);
        CHECK(q.decay == p.decay);
        found = true;
      }
    CHECK(found);
  }
  CHECK(h.layer_kind(0) == "mamba");
  CHECK(h.layer_kind(2) == "mlp");
  // the config: one layer config per donor (the fresh MLP uses B's, stored once)
  const nlohmann::json j = config_of(s.out_dir);
  CHECK(j["layer_config_ids"] == nlohmann::json({0, 0, 0, 1, 1}));
  REQUIRE(j["layer_configs"].size() == 2);
  CHECK(j["layer_configs"][0]["model_type"] == "nemotron_h");
  CHECK(j["layer_configs"][1]["model_type"] == "qwen3");
  CHECK(j["hybrid_sources"]["layers"][2]["kind"] == "mlp");
  CHECK(j["hybrid_sources"]["layers"][2]["like"] == B);
}

TEST_CASE("hybrid: the same seed gives the same fresh layers, another seed others", "[hybrid]") {
  const std::string B = donor("seed_nh", nemotron());
  auto make = [&](const std::string& name, uint64_t seed) {
    HybridSpec s;
    s.out_dir = model_test::scratch(name);
    s.embed = B;
    s.layers = {fresh("mamba2"), from(B, 1)};
    s.seed = seed;
    assemble_hybrid(s);
    return Model::load(s.out_dir).parameters(0);
  };
  const auto x = make("hybrid_seed_a", 3), y = make("hybrid_seed_b", 3), z = make("hybrid_seed_c", 4);
  bool all_same = true, any_diff = false;
  for (size_t i = 0; i < x.size(); ++i) {
    all_same &= at::equal(x[i].tensor, y[i].tensor);
    any_diff |= !at::equal(x[i].tensor, z[i].tensor);
  }
  CHECK(all_same);
  CHECK(any_diff);
}

TEST_CASE("hybrid: different vocabularies or hidden sizes are refused naming both donors", "[hybrid]") {
  const std::string A = donor("vocab_q", qwen3());
  const std::string V = donor("vocab_other", ltrun_test::tiny_spec("qwen3", 4, 3, /*vocab=*/67));
  TinySpec wide = qwen3(4);
  wide.hidden = 48;
  wide.intermediate = 64;
  const std::string W = donor("vocab_wide", wide);
  HybridSpec s;
  s.out_dir = model_test::scratch("hybrid_vocab_out");
  s.embed = A;
  s.layers = {from(A, 0), from(V, 1)};
  model_test::require_error([&] { assemble_hybrid(s); }, {A, V, "vocab_size 61", "vocab_size 67", "vocabularies"});
  s.layers = {from(A, 0)};
  s.head = V;
  model_test::require_error([&] { assemble_hybrid(s); }, {A, V, "vocabularies"});
  s.head = "";
  s.layers = {from(A, 0), from(W, 1)};
  model_test::require_error([&] { assemble_hybrid(s); }, {"layer 1", W, A, "hidden_size 48"});
  s.layers = {from(A, 7)};
  model_test::require_error([&] { assemble_hybrid(s); }, {"layer 0", A, "0..3", "7"});
  s.layers = {fresh("mamba")};
  model_test::require_error([&] { assemble_hybrid(s); }, {"no donor has a mamba layer"});
  CHECK_FALSE(std::filesystem::exists(s.out_dir + "/config.json"));
}

TEST_CASE("hybrid: one donor's layers give the donor's logits (ltrun_hybrid and native)", "[hybrid]") {
  const std::string A = donor("same_q", qwen3()), B = donor("same_nh", nemotron());
  const at::Tensor ids = model_test::random_ids(2, 9, 61, 11);
  for (const std::string& d : {A, B}) {
    const Model m = Model::load(d);
    for (bool native : {false, true}) {
      INFO(d << " native " << native);
      HybridSpec s;
      s.out_dir = model_test::scratch(fmt::format("hybrid_same_{}_{}", m.config().model_type, native));
      s.embed = d;
      for (int l = 0; l < m.n_layers(); ++l) s.layers.push_back(from(d, l));
      s.native = native;
      const HybridResult r = assemble_hybrid(s);
      CHECK(r.model_type == (native ? m.config().model_type : "ltrun_hybrid"));
      const Model h = Model::load(s.out_dir);
      // the same layer code on the same tensors in the same order: equal to the bit
      CHECK(at::equal(logits(h, ids), logits(m, ids)));
    }
  }
}

TEST_CASE("hybrid: a Qwen3 + Nemotron-H stack computes the donors' layers composed", "[hybrid]") {
  const std::string A = donor("mix_q", qwen3()), B = donor("mix_nh", nemotron("M*-M-"));
  const Model a = Model::load(A), b = Model::load(B);
  const at::Tensor ids = model_test::random_ids(2, 10, 61, 12);
  // a stack assembled in a scratch folder and loaded
  auto stack = [](const char* name, const std::string& embed, const std::string& head,
                  std::vector<HybridLayerSpec> layers) {
    HybridSpec s;
    s.out_dir = model_test::scratch(name);
    s.embed = embed;
    s.head = head;
    s.layers = std::move(layers);
    assemble_hybrid(s);
    return Model::load(s.out_dir);
  };
  // Qwen3 layers shallow, Nemotron-H deep; embeddings from A, final norm and head from B
  const Model h = stack("hybrid_mix_qn", A, B, {from(A, 0), from(A, 1), from(B, 2), from(B, 3), from(B, 4)});
  const at::Tensor ref = b.lens(run_layers(b, embed_then(a, ids, 1), 2, 4));
  CHECK(at::equal(logits(h, ids), ref));

  // the reverse: Nemotron-H shallow, Qwen3 deep
  const Model h2 = stack("hybrid_mix_nq", B, A, {from(B, 0), from(B, 1), from(A, 2), from(A, 3)});
  const at::Tensor ref2 = a.lens(run_layers(a, embed_then(b, ids, 1), 2, 3));
  CHECK(at::equal(logits(h2, ids), ref2));

  // decoding token by token (KV cache, conv + SSM state) against the full pass
  DecodeState st;
  std::vector<at::Tensor> steps;
  for (int64_t t = 0; t < ids.size(1); ++t) {
    ForwardOptions o;
    o.state = &st;
    steps.push_back(h2.forward(ids.narrow(1, t, 1), o).logits);
  }
  const at::Tensor full = logits(h2, ids);
  // the step form of the Mamba2 scan sums in another order than the chunked one: fp32 rounding
  CHECK(rel_err(at::cat(steps, 1), full) < 1e-5);
}

TEST_CASE("hybrid: layers from donors with other attention (biases, no q/k norm, RoPE theta)", "[hybrid]") {
  TinySpec q2 = ltrun_test::tiny_spec("qwen2", 3, 6);
  q2.rope_theta = 1e6;  // the first RoPE layer's tables are the stack's; A's layers make their own
  const std::string C = donor("rope_q2", q2), A = donor("rope_q3", qwen3());
  const Model a = Model::load(A), c = Model::load(C);
  const at::Tensor ids = model_test::random_ids(2, 12, 61, 13);
  HybridSpec s;
  s.out_dir = model_test::scratch("hybrid_rope");
  s.embed = C;
  s.head = A;
  s.layers = {from(C, 0), from(A, 1), from(A, 2), from(C, 2)};
  const HybridResult r = assemble_hybrid(s);
  CHECK(r.model_type == "ltrun_hybrid");
  const Model h = Model::load(s.out_dir);
  const at::Tensor mid = run_layers(a, embed_then(c, ids, 0), 1, 2);
  const at::Tensor ref = a.lens(run_layers(c, mid, 2, 2));
  CHECK(at::equal(logits(h, ids), ref));
  // with left padding and positions from the mask, as generation runs it: each layer's own
  // RoPE follows the same positions
  at::Tensor mask = at::ones({2, 12}, at::kLong);
  mask[0].narrow(0, 0, 3).zero_();
  ForwardOptions o;
  o.attention_mask = mask;
  const at::Tensor padded = h.forward(ids, o).logits;
  ForwardOptions oc = o;
  oc.to_layer = 0;
  oc.logits = Logits::None;
  const at::Tensor h0 = c.forward(ids, oc).residual;
  ForwardOptions oa = o;
  oa.from_layer = 1;
  oa.to_layer = 2;
  oa.hidden = h0;
  oa.logits = Logits::None;
  const at::Tensor h2 = a.forward({}, oa).residual;
  ForwardOptions oc2 = o;
  oc2.from_layer = 2;
  oc2.to_layer = 2;
  oc2.hidden = h2;
  oc2.logits = Logits::None;
  CHECK(at::equal(padded, a.lens(c.forward({}, oc2).residual)));
}

TEST_CASE("hybrid: save -> load -> save is bit-exact", "[hybrid]") {
  const std::string A = donor("trip_q", qwen3()), B = donor("trip_nh", nemotron());
  HybridSpec s;
  s.out_dir = model_test::scratch("hybrid_trip") + "/h";
  ltrun::fs::make_dirs(s.out_dir);  // a folder holding only lt.fs's marker counts as empty
  s.embed = A;
  s.layers = {from(B, 0), fresh("attention"), from(A, 1)};
  assemble_hybrid(s);
  CHECK(std::filesystem::exists(s.out_dir + "/" + ltrun::fs::kOwnedMarker));
  const Model h = Model::load(s.out_dir);
  const std::string again = model_test::scratch("hybrid_trip_again");
  h.save(again);
  const Model h2 = Model::load(again);
  CHECK(config_of(again) == config_of(s.out_dir));
  const auto x = tensors(h), y = tensors(h2);
  REQUIRE(x.size() == y.size());
  for (const auto& [name, t] : x) {
    INFO(name);
    REQUIRE(y.count(name));
    CHECK(at::equal(t, y.at(name)));
  }
  const ltrun::io::Checkpoint c1 = ltrun::io::Checkpoint::open(s.out_dir), c2 = ltrun::io::Checkpoint::open(again);
  CHECK(c1.names() == c2.names());
}

TEST_CASE("hybrid: a stack of one architecture is written in its own config", "[hybrid]") {
  const std::string B = donor("native_nh", nemotron("M*-M")), B2 = donor("native_nh2", nemotron("-M*", 9));
  const Model b = Model::load(B), b2 = Model::load(B2);
  HybridSpec s;
  s.out_dir = model_test::scratch("hybrid_native");
  s.embed = B;
  s.layers = {from(B, 0), from(B, 1), from(B2, 1), fresh("mlp")};
  const HybridResult r = assemble_hybrid(s);
  CHECK(r.model_type == "nemotron_h");
  const nlohmann::json j = config_of(s.out_dir);
  CHECK(j["model_type"] == "nemotron_h");
  CHECK(j["architectures"] == nlohmann::json({"NemotronHForCausalLM"}));
  CHECK(j["hybrid_override_pattern"] == "M*M-");
  CHECK(j["num_hidden_layers"] == 4);
  CHECK(j["hybrid_sources"]["layers"][2]["from"] == B2);
  const Model h = Model::load(s.out_dir);
  CHECK(h.parameters().front().name == "backbone.embeddings.weight");
  // layers 0-1 of B, layer 1 of B2, then a fresh MLP layer: composed by hand
  const at::Tensor ids = model_test::random_ids(1, 8, 61, 14);
  const at::Tensor x = run_layers(b2, embed_then(b, ids, 1), 1, 1);
  ForwardOptions upto;
  upto.to_layer = 2;
  upto.logits = Logits::None;
  CHECK(at::equal(h.forward(ids, upto).residual, x));
  // another hidden size per layer is not one architecture: Qwen3 layers with other intermediate sizes
  TinySpec q = qwen3(1);
  TinySpec q_wide = qwen3(2);
  q_wide.intermediate = 80;
  const std::string Q = donor("native_q", q), QW = donor("native_qw", q_wide);
  s.out_dir = model_test::scratch("hybrid_not_native");
  s.embed = Q;
  s.layers = {from(Q, 0), from(QW, 1)};
  CHECK(assemble_hybrid(s).model_type == "ltrun_hybrid");
}

TEST_CASE("hybrid: the command line's layer list", "[hybrid]") {
  const auto v = parse_hybrid_layers("models/a:0-2,mamba@models/b,attention,c:d:5");
  REQUIRE(v.size() == 6);
  CHECK(v[0].from == "models/a");
  CHECK(v[2].layer == 2);
  CHECK(v[3].kind == "mamba");
  CHECK(v[3].like == "models/b");
  CHECK(v[4].kind == "attention");
  CHECK(v[4].like.empty());
  CHECK(v[5].from == "c:d");
  CHECK(v[5].layer == 5);
  model_test::require_error([] { parse_hybrid_layers("a:3-1"); }, {"a:3-1", "empty"});
  model_test::require_error([] { parse_hybrid_layers("a:x"); }, {"a:x", "DIR:I"});
  model_test::require_error([] { parse_hybrid_layers("a:1,,b:2"); }, {"empty item"});
}

TEST_CASE("hybrid: config.json errors name the key", "[hybrid]") {
  const std::string A = donor("cfg_q", qwen3()), B = donor("cfg_nh", nemotron());
  HybridSpec s;
  s.out_dir = model_test::scratch("hybrid_cfg");
  s.embed = A;
  s.layers = {from(B, 0), from(A, 1)};
  assemble_hybrid(s);
  nlohmann::json j = config_of(s.out_dir);
  auto with = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json k = j;
    edit(k);
    return k.dump();
  };
  model_test::require_error([&] { parse_config(with([](auto& k) { k["layer_types"][1] = "mamba"; }), "h/config.json"); },
                            {"h/config.json", "layer_types", "layer 1", "mamba", "qwen3"});
  model_test::require_error([&] { parse_config(with([](auto& k) { k["layer_config_ids"][0] = 5; }), "h/config.json"); },
                            {"layer_config_ids", "layer 0"});
  model_test::require_error(
      [&] { parse_config(with([](auto& k) { k["layer_configs"][0]["hidden_size"] = 48; }), "h/config.json"); },
      {"layer_configs[0].hidden_size", "48"});
  model_test::require_error(
      [&] { parse_config(with([](auto& k) { k["layer_configs"][1]["rms_norm_eps"] = 0; }), "h/config.json"); },
      {"layer_configs[1]", "rms_norm_eps"});
}
