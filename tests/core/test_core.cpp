// tests/core: sha256 against FIPS 180-4 vectors, device/dtype parsing, tensor printing,
// process liveness (a zombie has ended; a pid beyond pid_t is no process).
#include <ATen/ATen.h>

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <iterator>
#include <set>

#include "runtime/core/device.h"
#include "runtime/core/env.h"
#include "runtime/core/error.h"
#include "runtime/core/fs.h"
#include "runtime/core/interrupt.h"
#include "runtime/core/run_context.h"
#include "runtime/core/sha256.h"
#include "runtime/core/tensor_format.h"
#include "runtime/core/tensor_ops.h"

using namespace ltrun;

TEST_CASE("seed streams: pinned values, < 2^53, one per (run seed, stream)") {
  // pinned against an independent computation (Python, from the published splitmix64 and
  // FNV-1a constants): splitmix64(splitmix64(seed) ^ fnv1a(name)) mod 2^53
  CHECK(stream_seed(1, "data.windows") == 4512607255414897ULL);
  CHECK(stream_seed(2, "data.windows") == 7160536211181867ULL);
  CHECK(stream_seed(1, "train.order") == 7388942077074073ULL);
  CHECK(stream_seed(20261125, "eval") == 7907403396762285ULL);
  std::set<uint64_t> seen;
  for (uint64_t seed : {0ULL, 1ULL, 2ULL, 3ULL, (1ULL << 53) - 1})
    for (const char* name : kSeedStreams) {
      const uint64_t s = stream_seed(seed, name);
      CHECK(s < kSeedLimit);
      CHECK(s == stream_seed(seed, name));
      seen.insert(s);
    }
  CHECK(seen.size() == 5 * std::size(kSeedStreams));  // no two (seed, stream) pairs alike
  RunContext ctx;
  CHECK(ctx.seed == 1);
  CHECK(ctx.stream("eval") == stream_seed(1, "eval"));
  CHECK(!ctx.run_id());
}

TEST_CASE("sha256 matches the FIPS 180-4 examples") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // one million 'a': crosses many block boundaries
  CHECK(sha256_hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("sha256_file names a missing file") {
  REQUIRE_THROWS_WITH(sha256_file("/nonexistent/x.bin"), Catch::Contains("/nonexistent/x.bin"));
}

TEST_CASE("devices parse; CUDA asked for without CUDA is a clear error") {
  CHECK(parse_device("cpu").is_cpu());
  if (!cuda_available()) {
    CHECK(parse_device("auto").is_cpu());
    REQUIRE_THROWS_WITH(parse_device("cuda"), Catch::Contains("--device cuda"));
    REQUIRE_THROWS_WITH(parse_device("cuda:1"), Catch::Contains("cuda:1"));
  }
  REQUIRE_THROWS_WITH(parse_device("gpu"), Catch::Contains("expected auto, cpu, cuda or cuda:N"));
}

TEST_CASE("share_path: /usr/share/X under LTRUN_SHARE_DIR only when X is absent") {
  const char* old = std::getenv("LTRUN_SHARE_DIR");
  const std::string saved = old ? old : "";
  ::unsetenv("LTRUN_SHARE_DIR");
  CHECK(ltrun::fs::share_path("/usr/share/ltrun-no-such/x") == "/usr/share/ltrun-no-such/x");
  ::setenv("LTRUN_SHARE_DIR", "/tmp/deps/usr/share", 1);
  CHECK(ltrun::fs::share_path("/usr/share/ltrun-no-such/x") == "/tmp/deps/usr/share/ltrun-no-such/x");
  CHECK(ltrun::fs::share_path("/usr/share") == "/usr/share");           // the folder itself exists
  const auto present = ltrun::fs::list("/usr/share");  // anything there is taken as given
  if (!present.empty()) CHECK(ltrun::fs::share_path("/usr/share/" + present[0]) == "/usr/share/" + present[0]);
  CHECK(ltrun::fs::share_path("data/usr/share/x") == "data/usr/share/x");
  CHECK(ltrun::fs::share_path("/usr/sharex/y") == "/usr/sharex/y");
  if (old) ::setenv("LTRUN_SHARE_DIR", saved.c_str(), 1); else ::unsetenv("LTRUN_SHARE_DIR");
}

TEST_CASE("remove_tree deletes like rm -rf without following links; walk lists depth first") {
  const char* t = std::getenv("LTRUN_TEST_TMP");
  const std::string root = std::string(t && *t ? t : "/tmp") + "/core_fs_tree";
  const std::string keep = root + "-outside";
  ltrun::fs::remove_tree(root);
  ltrun::fs::remove_tree(keep);
  ltrun::fs::make_dirs(root + "/a/b/c");
  ltrun::fs::make_dirs(keep);
  std::FILE* f = std::fopen((keep + "/precious").c_str(), "w");
  REQUIRE(f);
  std::fclose(f);
  f = std::fopen((root + "/a/b/file").c_str(), "w");
  std::fclose(f);
  REQUIRE(::symlink(keep.c_str(), (root + "/a/link").c_str()) == 0);
  std::vector<std::string> seen;  // (.ltrun-owned markers left out)
  for (const auto& e : ltrun::fs::walk(root))
    if (e.path.find(".ltrun-owned") == std::string::npos)
      seen.push_back(e.path.substr(root.size()) + ":" + std::to_string(e.depth) + (e.is_dir ? "d" : "") + (e.is_file ? "f" : ""));
  CHECK(seen == std::vector<std::string>{"/a:0d", "/a/b:1d", "/a/b/c:2d", "/a/b/file:2f", "/a/link:1d"});
  size_t shallow = 0;
  for (const auto& e : ltrun::fs::walk(root, 0)) shallow += e.depth > 0;
  CHECK(shallow == 0);
  CHECK(ltrun::fs::remove_tree(root).empty());
  CHECK_FALSE(ltrun::fs::exists(root));
  CHECK(ltrun::fs::exists(keep + "/precious"));  // the link's target is untouched
  CHECK(ltrun::fs::remove_tree(root).empty());   // missing: no error
  REQUIRE_THROWS_WITH(ltrun::fs::walk(root), Catch::Contains(root));
  ltrun::fs::remove_tree(keep);
}

TEST_CASE("dtype names round-trip and unknown names fail") {
  for (auto n : {"float32", "bfloat16", "float16", "float64", "int64", "int32", "bool"})
    CHECK(dtype_name(parse_dtype(n)) == n);
  CHECK(parse_dtype("bf16") == c10::kBFloat16);
  REQUIRE_THROWS_WITH(parse_dtype("float8"), Catch::Contains("unknown dtype 'float8'"));
}

TEST_CASE("tensor printing") {
  CHECK(format_tensor(at::tensor({1.0, 2.5}, at::kFloat)) == "tensor([1.0000, 2.5000])");
  CHECK(format_tensor(at::tensor({int64_t(3), int64_t(-12)})) == "tensor([  3, -12])");
  CHECK(format_tensor(at::tensor({1.0, 2.0, 3.0, 4.0}, at::kFloat).reshape({2, 2})) ==
        "tensor([[1.0000, 2.0000],\n        [3.0000, 4.0000]])");
  CHECK(format_tensor(at::ones({2}, at::kBFloat16)) == "tensor([1.0000, 1.0000], dtype=bfloat16)");
  CHECK(format_tensor(at::tensor({int64_t(1), int64_t(0)}).to(at::kBool)) == "tensor([ true, false])");
  const std::string big = format_tensor(at::arange(5000));
  CHECK(big == "tensor([   0,    1,    2, ..., 4997, 4998, 4999])");
  CHECK(format_tensor(at::Tensor()) == "tensor(<freed>)");
}

TEST_CASE("check_interrupt raises once per Ctrl-C and the flag stays for the status") {
  install_interrupt_handler(nullptr);
  clear_interrupt();
  CHECK_NOTHROW(check_interrupt());
  std::raise(SIGINT);
  CHECK(interrupt_requested());
  CHECK_THROWS_AS(check_interrupt(), Interrupted);
  CHECK_NOTHROW(check_interrupt());  // consumed
  CHECK(interrupt_requested());      // but remembered, so the run is marked interrupted
  clear_interrupt();
  CHECK(!interrupt_requested());
}

TEST_CASE("process_alive: a process that ended but is not reaped yet (a zombie) has ended") {
  // where PID 1 does not reap orphans, a killed worker stays a zombie for good: a run or
  // lease it held must still count as the process gone
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) _exit(0);
  CHECK(process_alive(long(getpid())));
  bool zombie = false;
  for (int i = 0; i < 6000 && !zombie; i++) {  // until the child has exited (up to 60 s)
    siginfo_t info{};
    // WNOWAIT: look without reaping, so the child stays a zombie
    zombie = waitid(P_PID, id_t(child), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == child;
    if (!zombie) usleep(10000);
  }
  REQUIRE(zombie);
  CHECK_FALSE(process_alive(long(child)));
  waitpid(child, nullptr, 0);
  CHECK_FALSE(process_alive(long(child)));
  CHECK_FALSE(process_alive(1L << 32));  // would wrap to 0 (our process group) as a pid_t
  CHECK_FALSE(process_alive(0));
}

TEST_CASE("tensor ops: indices, dimensions and slices as PyTorch and Python take them") {
  const at::Tensor t = at::arange(10);
  CHECK(norm_index(-1, 10, 0) == 9);
  CHECK(norm_index(0, 10, 0) == 0);
  CHECK_THROWS_WITH(norm_index(10, 10, 0), "index 10 is out of range for dimension 0 of size 10");
  CHECK_THROWS_WITH(norm_index(-11, 10, 2), "index -11 is out of range for dimension 2 of size 10");
  CHECK(norm_dim(at::zeros({2, 3}), -1) == 1);
  CHECK(norm_dim(at::scalar_tensor(1.0), 0) == 0);
  CHECK_THROWS_WITH(norm_dim(at::zeros({2, 3}), 2), "dimension 2 is out of range for a tensor with 2 dimension(s)");
  // Python: list(range(10))[-3:] == [7, 8, 9]; [2:100:3] == [2, 5, 8]; [5:2] == []
  CHECK(py_slice(t, 0, -3, std::nullopt).equal(at::arange(7, 10)));
  CHECK(py_slice(t, 0, 2, 100, 3).equal(at::arange(2, 10, 3)));
  CHECK(py_slice(t, 0, 5, 2).numel() == 0);
  CHECK(py_slice(t, 0, -100, 3).equal(at::arange(0, 3)));
  CHECK_THROWS_WITH(py_slice(t, 0, 0, 5, 0), "slice step must be positive, got 0");
}

TEST_CASE("tensor ops: reductions by name against hand values") {
  const at::Tensor t = at::tensor({1.0, 2.0, 3.0, 4.0}, at::kDouble).reshape({2, 2});
  CHECK(reduce(t, Reduction::sum).item<double>() == 10.0);
  CHECK(reduce(t, Reduction::prod).item<double>() == 24.0);
  CHECK(reduce(t, Reduction::amax).item<double>() == 4.0);
  CHECK(reduce(t, Reduction::var).item<double>() == Approx(5.0 / 3.0));  // unbiased: sum((x - 2.5)^2) / 3
  CHECK(reduce(t, Reduction::sum, -1).equal(at::tensor({3.0, 7.0}, at::kDouble)));
  CHECK(reduce(t, Reduction::mean, 0, true).sizes() == at::IntArrayRef({1, 2}));
  // logsumexp over everything: log(e^1 + e^2 + e^3 + e^4) = 4.4401896985611957
  CHECK(reduce(t, Reduction::logsumexp).item<double>() == Approx(4.4401896985611957).epsilon(1e-12));
}

TEST_CASE("tensor ops: sizes checked before allocating; arange's length") {
  const auto o = at::TensorOptions().dtype(at::kFloat);
  CHECK(checked_new("lt.zeros", {2, 3}, o, [] { return at::zeros({2, 3}); }).numel() == 6);
  CHECK_THROWS_WITH(checked_new("lt.zeros", {int64_t(1) << 40, int64_t(1) << 40}, o, [] { return at::Tensor(); }),
                    "lt.zeros: a float32 tensor of shape [1099511627776, 1099511627776] needs more than 2^63 bytes");
  CHECK(arange_size(0, 10, 3, "f") == 4);  // 0 3 6 9
  CHECK(arange_size(5, 5, 1, "f") == 0);
  CHECK(arange_size(1, 0, -0.25, "f") == 4);
  CHECK_THROWS_WITH(arange_size(0, 1, 0, "lt.arange"),
                    "lt.arange: start 0, stop 1, step 0: expected finite numbers and a step other than 0");
  CHECK_THROWS_WITH(arange_size(0, 1, -1, "f"), "f: start 0, stop 1, step -1: the step leads away from stop");
}
