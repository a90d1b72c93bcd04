// runtime/model/tools/model_dump.cpp: ltrun_model_dump, a small driver of the model core for
// tests/parity/hf_parity.py (and for poking at a checkpoint without the Lua front end).
//
//   ltrun_model_dump new DIR [--arch A] [--layers N] [--hidden N] [--heads N] [--kv-heads N]
//                    [--intermediate N] [--head-dim N] [--vocab N] [--seed N] [--tie] [--bias]
//                    [--pattern M*-] (nemotron_h: the kind of each layer)
//   ltrun_model_dump info DIR
//   ltrun_model_dump forward DIR OUT --ids "1 2 3,4 5" [--device D] [--dtype T]
//       OUT/model.safetensors: input_ids, attention_mask [B, T] (rows left-padded with 0),
//       hidden.0 .. hidden.L [B, T, H] (ltrun's convention: all before the final norm),
//       normed = final_norm(hidden.L), logits [B, T, V], and logits_stepwise: the same
//       logits decoded one token at a time through a DecodeState; all float32.
//   ltrun_model_dump generate DIR --ids "..." --max-new N [--device D] [--dtype T]
//       greedy; prints one JSON list of new token ids per prompt
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <map>
#include <sstream>

#include "runtime/core/device.h"
#include "runtime/core/error.h"
#include "runtime/io/checkpoint.h"
#include "runtime/model/blocks.h"
#include "runtime/model/generate.h"
#include "runtime/model/info.h"
#include "runtime/model/tiny.h"

namespace {

using namespace ltrun;

struct Args {
  std::vector<std::string> pos;
  std::map<std::string, std::string> opt;  // --key value, or --flag -> ""

  std::string get(const std::string& k, const std::string& fallback) const {
    auto it = opt.find(k);
    return it == opt.end() ? fallback : it->second;
  }
  int64_t num(const std::string& k, int64_t fallback) const {
    auto it = opt.find(k);
    return it == opt.end() ? fallback : std::stoll(it->second);
  }
  bool flag(const std::string& k) const { return opt.count(k) > 0; }
};

Args parse(int argc, char** argv) {
  Args a;
  const std::vector<std::string> flags = {"--tie", "--bias"};
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("--", 0) != 0) {
      a.pos.push_back(s);
    } else if (std::find(flags.begin(), flags.end(), s) != flags.end()) {
      a.opt[s.substr(2)] = "";
    } else {
      LT_CHECK(i + 1 < argc, "{} needs a value", s);
      a.opt[s.substr(2)] = argv[++i];
    }
  }
  return a;
}

// "1 2 3,4 5" -> {{1, 2, 3}, {4, 5}}
std::vector<std::vector<int64_t>> parse_ids(const std::string& text) {
  std::vector<std::vector<int64_t>> rows;
  std::stringstream all(text);
  std::string row;
  while (std::getline(all, row, ',')) {
    std::stringstream r(row);
    rows.emplace_back();
    for (int64_t id; r >> id;) rows.back().push_back(id);
    LT_CHECK(!rows.back().empty(), "--ids: empty row in \"{}\"", text);
  }
  LT_CHECK(!rows.empty(), "--ids: no tokens");
  return rows;
}

model::Model load(const Args& a) {
  const c10::Device device = parse_device(a.get("device", "cpu"));
  std::optional<c10::ScalarType> dtype;
  if (a.flag("dtype")) dtype = parse_dtype(a.get("dtype", ""));
  return model::Model::load(a.pos.at(1), device, dtype);
}

void cmd_forward(const Args& a) {
  LT_CHECK(a.pos.size() == 3, "usage: forward DIR OUT --ids \"...\"");
  const model::Model m = load(a);
  const auto rows = parse_ids(a.get("ids", ""));
  const int64_t B = int64_t(rows.size());
  int64_t T = 0;
  for (const auto& r : rows) T = std::max<int64_t>(T, int64_t(r.size()));
  at::Tensor ids = at::zeros({B, T}, at::kLong), mask = at::zeros({B, T}, at::kLong);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = int64_t(rows[b].size());
    ids[b].narrow(0, T - n, n).copy_(at::tensor(rows[b], at::kLong));
    mask[b].narrow(0, T - n, n).fill_(1);
  }
  at::NoGradGuard no_grad;
  model::ForwardOptions o;
  o.capture = true;
  o.attention_mask = mask;
  const model::ForwardResult r = m.forward(ids, o);
  std::vector<std::pair<std::string, at::Tensor>> out = {{"input_ids", ids},
                                                         {"attention_mask", mask}};
  for (size_t l = 0; l < r.hidden.size(); ++l)
    out.emplace_back(fmt::format("hidden.{}", l), r.hidden[l].to(at::kCPU, at::kFloat));
  at::Tensor norm_weight;
  for (const model::Param& p : m.parameters())
    if (p.layer < 0 && p.part == model::ParamPart::Norm) norm_weight = p.tensor;
  const double eps = m.config().rms_norm_eps;
  out.emplace_back("normed", (m.config().norm_offset ? model::rms_norm_offset(r.hidden.back(), norm_weight, eps)
                                                     : model::rms_norm(r.hidden.back(), norm_weight, eps))
                                 .to(at::kCPU, at::kFloat));
  out.emplace_back("logits", r.logits.to(at::kCPU, at::kFloat));
  model::DecodeState state;
  std::vector<at::Tensor> steps;
  for (int64_t t = 0; t < T; ++t) {
    model::ForwardOptions s;
    s.state = &state;
    s.attention_mask = mask.narrow(1, 0, t + 1);
    steps.push_back(m.forward(ids.narrow(1, t, 1), s).logits);
  }
  out.emplace_back("logits_stepwise", at::cat(steps, 1).to(at::kCPU, at::kFloat));
  io::save_checkpoint(a.pos[2], out);
}

void cmd_generate(const Args& a) {
  LT_CHECK(a.pos.size() == 2, "usage: generate DIR --ids \"...\" --max-new N");
  const model::Model m = load(a);
  model::GenerateOptions o;
  o.max_new_tokens = int(a.num("max-new", 16));
  o.stop_ids = std::vector<int64_t>{};  // fixed length, to compare with HF's min_new_tokens
  for (const model::Generation& g : model::generate(m, parse_ids(a.get("ids", "")), o))
    std::cout << fmt::format("[{}]\n", fmt::join(g.tokens, ", "));
}

void cmd_new(const Args& a) {
  LT_CHECK(a.pos.size() == 2, "usage: new DIR [--arch A] [--layers N] ...");
  model::TinySpec s;
  s.arch = a.get("arch", s.arch);
  s.layers = a.num("layers", s.layers);
  s.hidden = a.num("hidden", s.hidden);
  s.heads = a.num("heads", s.heads);
  s.kv_heads = a.num("kv-heads", s.kv_heads);
  s.intermediate = a.num("intermediate", s.intermediate);
  s.head_dim = a.num("head-dim", s.head_dim);
  s.vocab = a.num("vocab", s.vocab);
  s.seed = uint64_t(a.num("seed", 0));
  s.tie_word_embeddings = a.flag("tie");
  s.attention_bias = a.flag("bias");
  s.pattern = a.get("pattern", "");
  model::make_tiny(s, c10::kCPU, parse_dtype(a.get("dtype", "float32"))).save(a.pos[1]);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args a = parse(argc, argv);
    const std::string cmd = a.pos.empty() ? "" : a.pos[0];
    if (cmd == "forward")
      cmd_forward(a);
    else if (cmd == "generate")
      cmd_generate(a);
    else if (cmd == "new")
      cmd_new(a);
    else if (cmd == "info" && a.pos.size() == 2)
      std::cout << model::describe(a.pos[1]).to_string();
    else
      fail("usage: ltrun_model_dump new|info|forward|generate ... (see the source's header)");
  } catch (const std::exception& e) {
    std::cerr << "ltrun_model_dump: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
