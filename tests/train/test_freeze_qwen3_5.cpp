// tests/train/test_freeze_qwen3_5.cpp: freeze specs on Qwen3.5's layer kinds: "attention"
// selects a block's token mixer whichever kind it is (every Gated DeltaNet tensor, or the
// gated attention's), "mlp" and "norms" the rest, by the parts the architecture tags, and a
// frozen Gated DeltaNet block gets no gradient while the trainable ones do.
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <set>

#include "runtime/model/tiny.h"
#include "runtime/train/freeze.h"
#include "tests/tiny_spec.h"

using namespace ltrun;
using namespace ltrun::train;

TEST_CASE("freeze specs select Gated DeltaNet and gated attention tensors by part", "[train][qwen3_5]") {
  model::TinySpec s = ltrun_test::tiny_spec("qwen3_5_text", 3, 4, 50);
  s.pattern = "LAL";
  model::Model m = model::make_tiny(s);
  m.set_requires_grad(true);

  // the mixers of blocks 0 (Gated DeltaNet) and 1 (attention), by name as HF spells them
  const FreezeReport r = train_only(m, Spec::blocks({0, 1}, Part::Sub::Attention));
  std::set<std::string> want = {"dt_bias", "A_log", "conv1d.weight", "norm.weight", "out_proj.weight",
                                "in_proj_qkv.weight", "in_proj_z.weight", "in_proj_b.weight", "in_proj_a.weight"};
  int64_t n = 0, mixer0 = 0;
  for (const auto& p : m.parameters()) {
    const std::string gdn0 = "model.layers.0.linear_attn.", attn1 = "model.layers.1.self_attn.";
    const bool sel = (p.name.rfind(gdn0, 0) == 0 && want.count(p.name.substr(gdn0.size()))) ||
                     p.name.rfind(attn1, 0) == 0;
    INFO(p.name);
    CHECK(p.tensor.requires_grad() == sel);
    if (sel) n += p.tensor.numel();
    if (p.name.rfind(gdn0, 0) == 0) mixer0 += p.tensor.numel();
  }
  CHECK(r.trainable == n);
  // GDN sizes of the tiny spec: key heads 2, value heads 4, head dims 8, hidden 32, kernel 4:
  // qkv 64x32, z 32x32, b and a 4x32, conv 64x1x4, out 32x32, dt_bias, A_log 4, norm 8
  CHECK(mixer0 == 64 * 32 + 32 * 32 + 2 * 4 * 32 + 64 * 4 + 32 * 32 + 2 * 4 + 8);
  CHECK(lowest_trainable_layer(m) == 0);

  // freezing the shallow Gated DeltaNet block: no gradient reaches it, the rest gets one
  freeze(m, Spec::blocks({0}).add(Spec::named("embeddings")));
  const at::Tensor ids = at::randint(50, {1, 9}, at::kLong);
  m.forward(ids).logits.pow(2).mean().backward();
  for (const auto& p : m.parameters()) {
    INFO(p.name);
    if (p.layer == 0 || p.name == "model.embed_tokens.weight")
      CHECK(!p.tensor.grad().defined());
    else
      CHECK((p.tensor.grad().defined() && p.tensor.grad().abs().sum().item<double>() > 0));
  }
}
