// runtime/train/tools/loss_dump.cpp: ltrun_loss_dump, the training loss and its gradients for
// tests/parity/hf_parity.py (HF transformers' loss and autograd are the reference).
//
//   ltrun_loss_dump DIR OUT --ids "1 2 3 4,5 6 7 8" [--from-layer K] [--checkpointed]
//                   [--device D] [--dtype T]
//   Rows are training windows (all the same length, no padding): the loss is the trainer's
//   causal_lm_loss, mean next-token cross entropy over rows x (length - 1) targets. With
//   --from-layer K the embeddings and blocks 0..K-1 are frozen and run without autograd, as
//   in training a deep suffix; --checkpointed takes the activation-checkpointing backward.
//   OUT/model.safetensors: loss (a 1-element float32 tensor) and grad.NAME (float32) for every
//   parameter that trains: blocks K.., the final norm, the head, and the embeddings when K is
//   0 (a tied head's gradient then counts both uses, as in HF; with K > 0, the head's only).
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <fmt/format.h>

#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/core/device.h"
#include "runtime/core/error.h"
#include "runtime/io/checkpoint.h"
#include "runtime/model/model.h"
#include "runtime/train/loss.h"

namespace {

using namespace ltrun;

int run(int argc, char** argv) {
  std::vector<std::string> pos;
  std::map<std::string, std::string> opt;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--checkpointed")
      opt["checkpointed"] = "";
    else if (s.rfind("--", 0) == 0 && i + 1 < argc)
      opt[s.substr(2)] = argv[++i];
    else if (s.rfind("--", 0) == 0)
      fail("{}: missing its value", s);
    else
      pos.push_back(s);
  }
  LT_CHECK(pos.size() == 2 && opt.count("ids"),
           "usage: ltrun_loss_dump DIR OUT --ids \"1 2 3,4 5 6\" [--from-layer K] "
           "[--checkpointed] [--device D] [--dtype T]");
  std::optional<c10::ScalarType> dtype;
  if (opt.count("dtype")) dtype = parse_dtype(opt["dtype"]);
  model::Model m = model::Model::load(pos[0], parse_device(opt.count("device") ? opt["device"] : "cpu"),
                                      dtype);
  const int from = opt.count("from-layer") ? std::stoi(opt["from-layer"]) : 0;
  LT_CHECK(from >= 0 && from < m.n_layers(), "--from-layer {} out of range (model has {} layers)", from,
           m.n_layers());

  std::vector<std::vector<int64_t>> rows;
  std::stringstream all(opt["ids"]);
  for (std::string row; std::getline(all, row, ',');) {
    std::stringstream r(row);
    rows.emplace_back();
    for (int64_t id; r >> id;) rows.back().push_back(id);
    LT_CHECK(rows.back().size() >= 2 && rows.back().size() == rows.front().size(),
             "--ids: rows must hold the same number (>= 2) of ids");
  }
  LT_CHECK(!rows.empty(), "--ids: no rows");
  at::Tensor batch = at::empty({int64_t(rows.size()), int64_t(rows[0].size())}, at::kLong);
  for (size_t b = 0; b < rows.size(); ++b) batch[int64_t(b)].copy_(at::tensor(rows[b], at::kLong));
  batch = batch.to(m.device());

  const bool tied = m.config().tie_word_embeddings;
  for (const model::Param& p : m.parameters()) {
    const bool below =
        p.layer >= 0 ? p.layer < from : from > 0 && p.part == model::ParamPart::Embeddings;
    p.tensor.set_requires_grad(!below || (tied && p.part == model::ParamPart::Embeddings));
  }
  at::Tensor loss;
  if (opt.count("checkpointed")) {
    loss = train::checkpointed_loss_backward(m, batch, from, 1.0);
  } else {
    loss = train::causal_lm_loss(m, batch, from).loss;
    loss.backward();
  }
  std::vector<std::pair<std::string, at::Tensor>> out = {
      {"loss", loss.detach().reshape({1}).to(at::kCPU, at::kFloat)}};
  for (const model::Param& p : m.parameters())
    if (p.tensor.grad().defined())
      out.emplace_back("grad." + p.name, p.tensor.grad().to(at::kCPU, at::kFloat));
  io::save_checkpoint(pos[1], out);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "ltrun_loss_dump: " << e.what() << "\n";
    return 1;
  }
}
