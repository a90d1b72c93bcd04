// tests/io/fuzz_test.cpp: thousands of deterministic mutations of a valid file (bit flips,
// truncations, header length changes, header JSON edits): opening and reading each must
// either succeed with tensors that lie inside the file or throw ltrun::Error, nothing else.
#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>

#include "runtime/io/safetensors.h"
#include "tests/io/io_test_util.h"

using ltrun::io::SafetensorsFile;
using namespace io_test;

namespace {

using json = nlohmann::ordered_json;

std::string seed_file(const std::string& dir) {
  std::string path = dir + "/seed.safetensors";
  ltrun::io::save_safetensors(path,
                              {{"w", at::arange(12, at::kFloat).reshape({3, 4})},
                               {"h", at::ones({5}, at::kHalf)},
                               {"b", at::ones({2, 2}, at::kBFloat16)},
                               {"i", at::arange(3, at::kLong)},
                               {"s", at::scalar_tensor(1.0, at::kFloat)},
                               {"z", at::empty({0, 2}, at::kFloat)},
                               {"m", at::ones({3}, at::kBool)}},
                              {{"format", "pt"}});
  return read_bytes(path);
}

// Values a fuzzer would try in a header field.
json odd_value(std::mt19937_64& rng) {
  static const char* dtypes[] = {"F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8",
                                 "BOOL", "F4", "F6_E2M3", "F8_E4M3", "C64", "U64", "f32", ""};
  switch (rng() % 14) {
    case 0: return static_cast<uint64_t>(rng());
    case 1: return static_cast<uint64_t>(rng() % 64);
    case 2: return -static_cast<int64_t>(rng() % 64) - 1;
    case 3: return 1.5;
    case 4: return "x";
    case 5: return json::array();
    case 6: return json::object();
    case 7: return nullptr;
    case 8: return json{rng() % 64, rng() % 64};
    case 9: return json{uint64_t{1} << 40, uint64_t{1} << 40, rng() % 2};
    case 10: return json{rng() % 8, rng() % 8, rng() % 8};
    case 11: return json{INT64_MAX, rng() % 3};
    case 12: return json{static_cast<uint64_t>(rng()), rng() % 4};
    default: return dtypes[rng() % (sizeof dtypes / sizeof *dtypes)];
  }
}

// Length of the file's header if it is plausible, else 0.
uint64_t header_length(const std::string& f) {
  if (f.size() < 8) return 0;
  uint64_t n = le64(f);
  return n <= f.size() - 8 ? n : 0;
}

// Re-serialises the header with one field changed, removed or added, and a correct length.
std::string edit_header(const std::string& f, std::mt19937_64& rng) {
  const uint64_t n = header_length(f);
  if (n == 0) return f;
  json h = json::parse(f.substr(8, n), nullptr, /*allow_exceptions=*/false);
  if (!h.is_object() || h.empty()) return f;
  auto it = h.begin();
  std::advance(it, rng() % h.size());
  json& e = *it;
  static const char* fields[] = {"dtype", "shape", "data_offsets", "extra", "format"};
  const char* field = fields[rng() % 5];
  if (rng() % 7 == 0) {
    e = odd_value(rng);
  } else if (e.is_object() && rng() % 5 == 0) {
    e.erase(field);
  } else if (e.is_object()) {
    e[field] = odd_value(rng);
  }
  std::string header = h.dump();
  if (rng() % 2) header.resize((header.size() + 7) / 8 * 8, ' ');
  return st_bytes(header, f.substr(8 + n));
}

std::string mutate(std::string f, std::mt19937_64& rng) {
  const uint64_t n = header_length(f);
  switch (rng() % 6) {
    case 0:  // flip bits anywhere
      for (int k = 1 + rng() % 4; k > 0 && !f.empty(); --k)
        f[rng() % f.size()] ^= static_cast<char>(1 << (rng() % 8));
      break;
    case 1:  // replace header bytes with JSON punctuation and digits
      for (int k = 1 + rng() % 3; k > 0 && n > 0; --k)
        f[8 + rng() % n] = "{}[]\",:-.0123456789eE "[rng() % 22];
      break;
    case 2:  // truncate
      f.resize(f.empty() ? 0 : rng() % f.size());
      break;
    case 3: {  // change the header length
      uint64_t len = rng() % 3 == 0 ? static_cast<uint64_t>(rng()) : n + (rng() % 33) - 16;
      f.resize(std::max<size_t>(f.size(), 8));
      for (int i = 0; i < 8; ++i) f[i] = static_cast<char>(len >> (8 * i));
      break;
    }
    case 4:  // append bytes
      f += std::string(1 + rng() % 16, static_cast<char>(rng()));
      break;
    default:
      return edit_header(f, rng);
  }
  return f;
}

}  // namespace

TEST_CASE("fuzz: mutated files open cleanly or throw ltrun::Error", "[io][safetensors][fuzz]") {
  std::string dir = scratch("fuzz");
  const std::string seed = seed_file(dir);
  const std::string path = dir + "/mutant.safetensors";
  std::mt19937_64 rng(20240521);
  int opened = 0, rejected = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string bytes = mutate(seed, rng);
    if (rng() % 4 == 0) bytes = mutate(bytes, rng);  // sometimes two mutations
    // A new file each time: truncating one in place makes ext4 flush it to disk (slow).
    std::filesystem::remove(path);
    write_bytes(path, bytes);
    try {
      auto f = SafetensorsFile::open(path);
      uint64_t data_start = 8 + le64(bytes);
      for (const auto& t : f.tensors()) {
        INFO("iteration " << iter << ", tensor " << t.name);
        REQUIRE(t.begin <= t.end);
        REQUIRE(data_start + t.end <= bytes.size());
        at::Tensor x;
        try {
          x = f.tensor(t.name);
        } catch (const ltrun::Error&) {
          continue;  // a dtype this LibTorch lacks
        }
        REQUIRE(x.nbytes() == t.nbytes());
        // Compare with the file's bytes: a view of the wrong place would differ.
        if (t.nbytes() > 0)
          REQUIRE(std::memcmp(x.data_ptr(), bytes.data() + data_start + t.begin, t.nbytes()) == 0);
      }
      ++opened;
    } catch (const ltrun::Error&) {
      ++rejected;
    } catch (const std::exception& e) {
      FAIL("iteration " << iter << ": not an ltrun::Error: " << e.what());
    }
  }
  INFO("opened " << opened << ", rejected " << rejected);
  CHECK(opened > 1000);  // the mutations must exercise both outcomes
  CHECK(rejected > 10000);
}
