// tests/io/safetensors_write_test.cpp: the writer, checked three ways: byte-exact against
// outputs of the reference implementation, by parsing its files by hand against the
// format, and by bit-exact round trips through the reader.
#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "runtime/io/safetensors.h"
#include "tests/io/io_test_util.h"

using ltrun::io::save_safetensors;
using ltrun::io::SafetensorsFile;
using namespace io_test;

namespace {

using Named = std::vector<std::pair<std::string, at::Tensor>>;

template <class T>
at::Tensor from_values(std::vector<T> v, at::ScalarType type) {
  return at::from_blob(v.data(), {static_cast<int64_t>(v.size())}, at::TensorOptions(type)).clone();
}

// Float tensors given as raw bit patterns, so NaN payloads and -0.0 are exact.
at::Tensor from_bits32(std::vector<int32_t> bits) {
  return from_values(std::move(bits), at::kInt).view(at::kFloat);
}
at::Tensor from_bits16(std::vector<int16_t> bits, at::ScalarType type) {
  return from_values(std::move(bits), at::kShort).view(type);
}

bool same_bits(const at::Tensor& a, const at::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
  at::Tensor x = a.contiguous(), y = b.contiguous();
  return x.nbytes() == 0 || std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

std::string bytes_of(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("writer output is byte-identical to the reference writer's", "[io][safetensors]") {
  // Expected bytes from huggingface/safetensors, safetensors/src/tensor.rs: test_serialization,
  // test_empty and test_serialization_forced_alignement.
  const unsigned char attn_dot_0[] = {
      64, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 46, 48, 34, 58, 123, 34, 100,
      116, 121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34,
      58, 91, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102, 115,
      101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 0, 0, 0, 0, 0, 0, 128, 63,
      0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0, 160, 64};
  const unsigned char empty[] = {8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32};
  const unsigned char empty_with_metadata[] = {
      40, 0, 0, 0, 0, 0, 0, 0, 123, 34, 95, 95, 109, 101, 116, 97, 100, 97, 116, 97, 95,
      95, 34, 58, 123, 34, 102, 114, 97, 109, 101, 119, 111, 114, 107, 34, 58, 34, 112,
      116, 34, 125, 125, 32, 32, 32, 32, 32};
  const unsigned char attn0_aligned[] = {
      72, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 48, 34, 58, 123, 34, 100, 116,
      121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34, 58,
      91, 49, 44, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102,
      115, 101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 32, 32, 32, 32, 32,
      32, 32, 0, 0, 0, 0, 0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0,
      160, 64};
  auto as_string = [](const auto& a) {
    return std::string(reinterpret_cast<const char*>(a), sizeof a);
  };
  std::string dir = scratch("write_reference");
  at::Tensor six = at::arange(6, at::kFloat);

  save_safetensors(dir + "/a.safetensors", {{"attn.0", six.reshape({1, 2, 3})}});
  CHECK(read_bytes(dir + "/a.safetensors") == as_string(attn_dot_0));
  save_safetensors(dir + "/b.safetensors", {});
  CHECK(read_bytes(dir + "/b.safetensors") == as_string(empty));
  save_safetensors(dir + "/c.safetensors", {}, {{"framework", "pt"}});
  CHECK(read_bytes(dir + "/c.safetensors") == as_string(empty_with_metadata));
  save_safetensors(dir + "/d.safetensors", {{"attn0", six.reshape({1, 1, 2, 3})}});
  CHECK(read_bytes(dir + "/d.safetensors") == as_string(attn0_aligned));
}

TEST_CASE("writer output parsed by hand follows the format", "[io][safetensors]") {
  std::string path = scratch("write_spec") + "/spec.safetensors";
  const std::vector<float> w = {1.5f, -2.0f, 0.25f, 3.0f, -0.0f, 8.0f};
  const std::vector<float> b = {0.5f, -1.0f};
  Named tensors = {
      {"b.weight", from_values(w, at::kFloat).reshape({2, 3})},
      {"d", from_bits16({0x3C00}, at::kHalf)},
      {"a.weight", from_bits16({0x3F80, 0x4049, static_cast<int16_t>(0xC000)}, at::kBFloat16)},
      {"e", from_values<uint8_t>({7, 8, 9}, at::kByte)},
      {"c", from_values<int64_t>({-1, 2}, at::kLong)},
      {"b.bias", from_values(b, at::kFloat)},
      {"f", from_values<uint8_t>({1}, at::kByte).to(at::kBool)},
      {"g", at::scalar_tensor(0.5, at::kDouble)},
  };
  save_safetensors(path, tensors, {{"format", "pt"}});

  const std::string file = read_bytes(path);
  const uint64_t n = le64(file);
  CHECK(n % 8 == 0);
  REQUIRE(8 + n <= file.size());
  const std::string header = file.substr(8, n);
  const size_t last_brace = header.find_last_of('}');
  CHECK(header.find_first_not_of(' ', last_brace + 1) == std::string::npos);
  auto h = nlohmann::ordered_json::parse(header);

  // The reference writer's order: descending dtype alignment (I64 > F64 > F32 > BF16 > F16 >
  // U8 > BOOL in its Dtype enum), then name; __metadata__ first.
  std::vector<std::string> keys;
  for (const auto& kv : h.items()) keys.push_back(kv.key());
  CHECK(keys == std::vector<std::string>{"__metadata__", "c", "g", "b.bias", "b.weight",
                                         "a.weight", "d", "e", "f"});
  CHECK(h["__metadata__"] == nlohmann::ordered_json{{"format", "pt"}});
  for (const auto& key : keys) {
    if (key == "__metadata__") continue;
    std::vector<std::string> fields;
    for (const auto& kv : h[key].items()) fields.push_back(kv.key());
    CHECK(fields == std::vector<std::string>{"dtype", "shape", "data_offsets"});
  }

  // Offsets tile the buffer from 0 and every tensor sits at a multiple of its element size.
  const std::map<std::string, uint64_t> elem = {{"I64", 8}, {"F64", 8}, {"F32", 4}, {"BF16", 2},
                                                {"F16", 2}, {"U8", 1},  {"BOOL", 1}};
  const std::string data = file.substr(8 + n);
  uint64_t at = 0;
  std::map<std::string, std::string> raw;
  for (size_t i = 1; i < keys.size(); ++i) {
    const auto& e = h[keys[i]];
    uint64_t begin = e["data_offsets"][0], end = e["data_offsets"][1];
    CHECK(begin == at);
    CHECK(begin % elem.at(e["dtype"]) == 0);
    raw[keys[i]] = data.substr(begin, end - begin);
    at = end;
  }
  CHECK(at == data.size());
  CHECK(h["b.weight"]["shape"] == nlohmann::ordered_json{2, 3});
  CHECK(h["g"]["shape"] == nlohmann::ordered_json::array());
  CHECK(raw["b.weight"] == bytes_of(w));
  CHECK(raw["b.bias"] == bytes_of(b));
  CHECK(raw["a.weight"] == std::string("\x80\x3F\x49\x40\x00\xC0", 6));
  CHECK(raw["d"] == std::string("\x00\x3C", 2));
  CHECK(raw["c"] == std::string("\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\x02\0\0\0\0\0\0\0", 16));
  CHECK(raw["e"] == "\x07\x08\x09");
  CHECK(raw["f"] == "\x01");
  CHECK(raw["g"] == std::string("\0\0\0\0\0\0\xE0\x3F", 8));
}

TEST_CASE("save then load is bit-exact", "[io][safetensors]") {
  std::mt19937 rng(1234);
  std::vector<int32_t> random32(1000);
  std::vector<int16_t> random16(1000);
  for (auto& x : random32) x = static_cast<int32_t>(rng());
  for (auto& x : random16) x = static_cast<int16_t>(rng());

  const at::Tensor base = at::arange(24, at::kFloat).reshape({4, 6});
  Named tensors = {
      // quiet and signalling NaNs with payloads, -0.0, denormals, infinities
      {"f32.special", from_bits32({0x7FC00001, 0x7F800001, static_cast<int32_t>(0xFFC12345),
                                   static_cast<int32_t>(0x80000000), 0x00000001, 0x7F800000,
                                   static_cast<int32_t>(0xFF800000)})},
      {"f16.special", from_bits16({0x7C01, 0x7E00, static_cast<int16_t>(0xFE01),
                                   static_cast<int16_t>(0x8000), 0x0001, 0x7C00}, at::kHalf)},
      {"bf16.special", from_bits16({0x7FC1, 0x7F81, static_cast<int16_t>(0xFF81),
                                    static_cast<int16_t>(0x8000), 0x0001, 0x7F80},
                                   at::kBFloat16)},
      {"f32.random", from_bits32(random32).reshape({10, 100})},
      {"f16.random", from_values(random16, at::kShort).view(at::kHalf)},
      {"bf16.random", from_values(random16, at::kShort).view(at::kBFloat16).reshape({2, 5, 100})},
      {"f64", at::randn({3, 2}, at::kDouble)},
      {"i64", from_values<int64_t>({INT64_MIN, -1, 0, INT64_MAX}, at::kLong)},
      {"i32", from_values<int32_t>({INT32_MIN, INT32_MAX}, at::kInt)},
      {"i16", from_values<int16_t>({-32768, 32767}, at::kShort)},
      {"i8", from_values<int8_t>({-128, 127}, at::kChar)},
      {"u8", from_values<uint8_t>({0, 255}, at::kByte)},
      {"bool", from_values<uint8_t>({1, 0, 1}, at::kByte).to(at::kBool)},
      {"c64", at::randn({2, 2}, at::kComplexFloat)},
      {"scalar", at::scalar_tensor(-0.0, at::kFloat)},
      {"scalar.bf16", at::scalar_tensor(3.0, at::kBFloat16)},
      {"zero.rows", at::empty({0, 3}, at::kFloat)},
      {"zero.cols", at::empty({3, 0}, at::kHalf)},
      {"zero.1d", at::empty({0}, at::kBFloat16)},
      // non-contiguous inputs: transposed, strided slice, broadcast, offset view
      {"transposed", base.t()},
      {"strided", base.slice(1, 0, 6, 2)},
      {"expanded", at::arange(3, at::kFloat).expand({4, 3})},
      {"offset_view", base[2]},
  };
  std::string path = scratch("write_roundtrip") + "/rt.safetensors";
  const std::map<std::string, std::string> meta = {{"format", "pt"}, {"note", "ünïcode ✓"}};
  save_safetensors(path, tensors, meta);

  auto f = SafetensorsFile::open(path);
  CHECK(f.metadata() == meta);
  CHECK(f.tensors().size() == tensors.size());
  for (const auto& [name, t] : tensors) {
    INFO(name);
    at::Tensor back = f.tensor(name);
    CHECK(back.is_contiguous());
    CHECK(same_bits(back, t));
  }
  CHECK(f.tensor("scalar").dim() == 0);
  CHECK(f.info("zero.cols").shape == std::vector<int64_t>{3, 0});
  CHECK(f.tensor("transposed").equal(base.t()));
}

TEST_CASE("writer replaces files atomically", "[io][safetensors]") {
  std::string dir = scratch("write_atomic");
  std::string path = dir + "/model.safetensors";
  save_safetensors(path, {{"w", at::full({4}, 1.0f)}});
  CHECK(files_in(dir) == std::vector<std::string>{"model.safetensors"});

  // A reader of the old file keeps its data: the new file is a new inode renamed over it.
  at::Tensor old = SafetensorsFile::open(path).tensor("w");
  save_safetensors(path, {{"w", at::full({4}, 2.0f)}});
  CHECK(old.sum().item<float>() == 4.0f);
  CHECK(SafetensorsFile::open(path).tensor("w").sum().item<float>() == 8.0f);
  CHECK(files_in(dir) == std::vector<std::string>{"model.safetensors"});

  // A failure halfway (the second tensor cannot be read) leaves the old file and no debris.
  at::Tensor meta = at::empty({2}, at::TensorOptions().device(at::kMeta));
  require_error([&] { save_safetensors(path, {{"a", at::ones({2})}, {"b", meta}}); },
                {path, "tensor \"b\"", "cannot copy to the CPU"});
  CHECK(SafetensorsFile::open(path).tensor("w").sum().item<float>() == 8.0f);
  CHECK(files_in(dir) == std::vector<std::string>{"model.safetensors"});

  require_error([&] { save_safetensors(dir + "/no/such/folder/x.safetensors", {}); },
                {"no/such/folder/x.safetensors", "No such file"});
}

TEST_CASE("writer rejects what safetensors cannot store", "[io][safetensors]") {
  std::string path = scratch("write_errors") + "/x.safetensors";
  at::Tensor ok = at::ones({2});
  require_error([&] { save_safetensors(path, {{"a", ok}, {"a", ok}}); },
                {path, "\"a\" given twice"});
  require_error([&] { save_safetensors(path, {{"__metadata__", ok}}); }, {path, "reserved"});
  require_error([&] { save_safetensors(path, {{"u", at::Tensor()}}); },
                {path, "tensor \"u\" is undefined"});
  require_error([&] { save_safetensors(path, {{"c", at::ones({2}, at::kComplexDouble)}}); },
                {path, "tensor \"c\"", "ComplexDouble", "cannot store"});
  require_error([&] { save_safetensors(path, {{"s", at::eye(3).to_sparse()}}); },
                {path, "tensor \"s\"", "not dense"});
  require_error([&] { save_safetensors(path, {{"bad\xff", ok}}); },
                {path, "cannot encode the header"});
  CHECK_FALSE(std::filesystem::exists(path));
}
