// tests/model/test_profile.cpp: the CPU proxies of model/profile.h (issue 35, item 5): operator
// counts inside blocks and the peak of live tensor bytes, both exact counts; the Chrome trace of
// named sections (scripts/gpu-check --profile) and its kernel counts.
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>

#include "runtime/model/profile.h"
#include "tests/model/model_test_util.h"

using namespace ltrun;
using namespace ltrun::model;

TEST_CASE("peak_memory counts the bytes of tensors live at once while it runs") {
  at::Tensor before = at::ones({1000});  // live before: not counted, nor its free
  const MemoryPeak p = peak_memory([&] {
    at::Tensor a = at::empty({1 << 16}, at::kFloat);     // 256 KiB
    {
      at::Tensor b = at::empty({1 << 15}, at::kDouble);  // 256 KiB more, freed below
    }
    at::Tensor c = at::empty({1 << 14}, at::kFloat);     // 64 KiB after b's free
    before = at::Tensor();
  });
  CHECK(p.peak == 2 * (int64_t(1) << 18));
  CHECK(p.end == 0);
}

TEST_CASE("count_ops counts operators inside blocks only, leaves that compute as kernels") {
  Model m = model_test::sharp_tiny(model_test::spec("qwen3"));
  const at::Tensor ids = model_test::random_ids(1, 5, m.config().vocab_size, 3);
  at::NoGradGuard ng;
  const OpCount c = count_ops([&] { m.forward(ids); });
  CHECK(c.blocks == m.n_layers());
  CHECK(c.kernels > 0);
  CHECK(c.top <= c.dispatched);
  CHECK(c.kernels <= c.dispatched);
  // views, reshapes and same-dtype casts launch nothing; the projections (q/k/v and gate/up
  // fused: 4) and attention's two batched products are GEMMs
  for (const char* view : {"aten::view", "aten::transpose", "aten::reshape", "aten::to", "aten::narrow"})
    CHECK(c.by_name.count(view) == 0);
  int64_t gemms = 0;
  for (const auto& [name, n] : c.by_name)
    if (name == "aten::mm" || name == "aten::addmm" || name == "aten::bmm") gemms += n;
  CHECK(gemms == 6 * m.n_layers());
  // the head and the embedding lookup are outside the blocks
  CHECK(c.kernels_outside > 0);
  // a forward without blocks counts nothing inside them
  const at::Tensor x = at::ones({2, 2});
  const OpCount none = count_ops([&] { at::matmul(x, x); });
  CHECK(none.blocks == 0);
  CHECK(none.kernels == 0);
  CHECK(none.kernels_outside == 1);
}

TEST_CASE("decode_ops: operators per block per decode step do not depend on the steps counted") {
  Model m = model_test::sharp_tiny(model_test::spec("qwen3"));
  const DecodeOps a = decode_ops(m, 1, 6, 4), b = decode_ops(m, 1, 6, 7);
  CHECK(a.kernels > 0);
  CHECK(a.kernels == b.kernels);
  CHECK(a.dispatched == b.dispatched);
  CHECK(a.outside == b.outside);
  ltrun_test::require_error([&] { decode_ops(m, 1, 6, 1); }, {"new_tokens >= 2"});
}

// Issue 35's target for the CPU proxy: a decoder block's decode step in at most 15 kernels
// (25 before the fused q/k/v pass, decode attention and silu * up; docs/performance.md), in
// both dtypes the fused CPU passes take.
TEST_CASE("decode_ops: a qwen3 block's decode step runs at most 15 kernels") {
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    INFO(c10::toString(dtype));
    Model m = model_test::sharp_tiny(model_test::spec("qwen3"), dtype);
    for (int64_t batch : {1, 2}) {
      INFO("batch " << batch);
      CHECK(decode_ops(m, batch, 6, 4).kernels <= 15);
    }
  }
}

TEST_CASE("trace writes each section's operators as a Chrome trace and counts its kernels") {
  const std::string path = (std::filesystem::temp_directory_path() / "ltrun_test_profile_trace.json").string();
  const at::Tensor a = at::ones({64}), b = at::full({64}, 2.0);
  at::NoGradGuard ng;
  const TraceResult r = trace({{"one add", [&] { at::Tensor c = a + b; }},
                               {"three", [&] {
                                  at::Tensor c = a * b;
                                  c.add_(a);
                                  at::Tensor v = c.view({8, 8}).transpose(0, 1);  // views launch nothing
                                  at::Tensor d = v.neg();
                                }}},
                              path, /*device=*/false);
  REQUIRE(r.sections.size() == 2);
  CHECK(r.source == "record_function");
  CHECK(r.sections[0].name == "one add");
  CHECK(r.sections[0].host.launches == 1);
  REQUIRE(r.sections[0].host.kernels.size() == 1);
  CHECK(r.sections[0].host.kernels[0].name == "aten::add");
  CHECK(r.sections[1].host.launches == 3);  // mul, add_, neg
  CHECK(r.sections[1].host.kernels.size() == 3);
  for (const TraceSection& s : r.sections) {
    CHECK_FALSE(s.has_device);
    CHECK(s.host.gap_s >= 0);
    CHECK(s.wall_s >= s.host.kernel_s + s.host.gap_s);  // kernels and the gaps between them lie inside
  }
  // the file: JSON with one complete event per section and per operator
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  std::map<std::string, int> n;
  for (const auto& e : j.at("traceEvents"))
    if (e.at("ph") == "X") n[e.at("name").get<std::string>()]++;
  CHECK(n["one add"] == 1);
  CHECK(n["three"] == 1);
  CHECK(n["aten::add"] == 1);
  CHECK(n["aten::mul"] == 1);
  CHECK(n["aten::add_"] == 1);
  CHECK(n["aten::view"] == 1);
  CHECK(int64_t(j.at("traceEvents").size()) == r.events + 1);  // + the process name
  std::filesystem::remove(path);
}
