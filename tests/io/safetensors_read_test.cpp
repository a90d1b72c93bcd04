// tests/io/safetensors_read_test.cpp: the reader against files assembled byte by byte here
// and against byte vectors from the reference implementation's own tests; every malformed
// input must give an ltrun::Error that names the file and the tensor.
#include <ATen/ATen.h>

#include <cmath>

#include "runtime/io/safetensors.h"
#include "tests/io/io_test_util.h"

using ltrun::io::SafetensorsFile;
using namespace io_test;

namespace {

std::string pad8(std::string header) {
  header.resize((header.size() + 7) / 8 * 8, ' ');
  return header;
}

// Values encoded by hand (IEEE-754 / bfloat16 bit patterns, little-endian), in a header
// whose entries are neither in name nor in offset order.
std::string handmade_file() {
  std::string header = pad8(
      R"({"f16":{"dtype":"F16","shape":[3],"data_offsets":[16,22]},)"
      R"("__metadata__":{"format":"pt","note":"hand made"},)"
      R"("i64":{"dtype":"I64","shape":[],"data_offsets":[0,8]},)"
      R"("empty":{"dtype":"F32","shape":[0,3],"data_offsets":[32,32]},)"
      R"("f32":{"shape":[2],"dtype":"F32","data_offsets":[8,16]},)"
      R"("bf16":{"dtype":"BF16","shape":[2],"data_offsets":[22,26]},)"
      R"("flag":{"dtype":"BOOL","shape":[2],"data_offsets":[30,32]},)"
      R"("u8":{"dtype":"U8","shape":[2,2],"data_offsets":[26,30]}})");
  const unsigned char data[] = {
      0xFD, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,  // i64: -3
      0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x20, 0xC0,  // f32: 1.0, -2.5
      0x00, 0x3C, 0xFF, 0x7B, 0x00, 0x80,              // f16: 1.0, 65504, -0.0
      0x80, 0x3F, 0x49, 0xC0,                          // bf16: 1.0, -3.140625
      0x01, 0x02, 0xFE, 0xFF,                          // u8: 1, 2, 254, 255
      0x01, 0x00,                                      // flag: true, false
  };
  return st_bytes(header, std::string(reinterpret_cast<const char*>(data), sizeof data));
}

std::string file_of_bytes(const std::string& name, const std::string& bytes) {
  std::string path = scratch("read_" + name) + "/x.safetensors";
  write_bytes(path, bytes);
  return path;
}

// Opening a file made of `bytes` fails with a message naming the file and containing `parts`.
void require_rejected(const std::string& case_name, const std::string& bytes,
                      std::initializer_list<std::string> parts) {
  INFO("case: " << case_name);
  std::string path = file_of_bytes(case_name, bytes);
  require_error([&] { SafetensorsFile::open(path); }, {path});
  require_error([&] { SafetensorsFile::open(path); }, parts);
}

std::string entry(const std::string& name, const std::string& dtype, const std::string& shape,
                  const std::string& offsets) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
         ",\"data_offsets\":" + offsets + "}";
}

}  // namespace

TEST_CASE("reader returns hand-encoded values of every dtype", "[io][safetensors]") {
  std::string path = scratch("read_handmade") + "/handmade.safetensors";
  write_bytes(path, handmade_file());
  auto f = SafetensorsFile::open(path);

  std::vector<std::string> order;
  for (const auto& t : f.tensors()) order.push_back(t.name);
  CHECK(order == std::vector<std::string>{"i64", "f32", "f16", "bf16", "u8", "flag", "empty"});
  CHECK(f.metadata() ==
        std::map<std::string, std::string>{{"format", "pt"}, {"note", "hand made"}});
  CHECK(f.has("f32"));
  CHECK_FALSE(f.has("__metadata__"));
  CHECK(f.info("f16").dtype == "F16");
  CHECK(f.info("f16").begin == 16);
  CHECK(f.info("f16").end == 22);
  CHECK(f.info("u8").shape == std::vector<int64_t>{2, 2});

  at::Tensor i64 = f.tensor("i64");
  CHECK(i64.scalar_type() == at::kLong);
  CHECK(i64.dim() == 0);
  CHECK(i64.item<int64_t>() == -3);

  at::Tensor f32 = f.tensor("f32");
  CHECK(f32.scalar_type() == at::kFloat);
  CHECK(f32[0].item<float>() == 1.0f);
  CHECK(f32[1].item<float>() == -2.5f);

  at::Tensor f16 = f.tensor("f16").to(at::kFloat);
  CHECK(f.tensor("f16").scalar_type() == at::kHalf);
  CHECK(f16[0].item<float>() == 1.0f);
  CHECK(f16[1].item<float>() == 65504.0f);
  CHECK(f16[2].item<float>() == 0.0f);
  CHECK(std::signbit(f16[2].item<float>()));

  at::Tensor bf16 = f.tensor("bf16");
  CHECK(bf16.scalar_type() == at::kBFloat16);
  CHECK(bf16.to(at::kFloat)[0].item<float>() == 1.0f);
  CHECK(bf16.to(at::kFloat)[1].item<float>() == -3.140625f);

  at::Tensor u8 = f.tensor("u8");
  CHECK(u8.scalar_type() == at::kByte);
  CHECK(u8.sizes() == at::IntArrayRef{2, 2});
  CHECK(u8[1][0].item<int64_t>() == 254);
  CHECK(u8[1][1].item<int64_t>() == 255);

  at::Tensor flag = f.tensor("flag");
  CHECK(flag.scalar_type() == at::kBool);
  CHECK(flag[0].item<bool>());
  CHECK_FALSE(flag[1].item<bool>());

  at::Tensor empty = f.tensor("empty");
  CHECK(empty.numel() == 0);
  CHECK(empty.sizes() == at::IntArrayRef{0, 3});
}

TEST_CASE("reader views the mapping without copying, privately", "[io][safetensors]") {
  std::string path = scratch("read_view") + "/handmade.safetensors";
  const std::string bytes = handmade_file();
  write_bytes(path, bytes);

  at::Tensor t;
  {
    auto f = SafetensorsFile::open(path);
    t = f.tensor("f32");
    CHECK(f.tensor("f32").data_ptr() == t.data_ptr());  // both view the same mapped bytes
  }
  // The tensor keeps the mapping alive after the file object is gone.
  CHECK(t[1].item<float>() == -2.5f);
  // Writing to it changes the private copy-on-write page, never the file.
  t.fill_(7.0f);
  CHECK(t[0].item<float>() == 7.0f);
  CHECK(read_bytes(path) == bytes);
  CHECK(SafetensorsFile::open(path).tensor("f32")[0].item<float>() == 1.0f);
}

TEST_CASE("reader copies tensors that are misaligned in the file", "[io][safetensors]") {
  // An unpadded 54-byte header puts the data at file offset 62, so the F32 tensor is not
  // 4-byte aligned in the mapping; the reader must copy it rather than view it.
  std::string header = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  REQUIRE((8 + header.size()) % 4 != 0);
  std::string path = scratch("read_misaligned") + "/m.safetensors";
  write_bytes(path, st_bytes(header, std::string("\x00\x00\x80\x3F\x00\x00\x20\xC0", 8)));
  at::Tensor x = SafetensorsFile::open(path).tensor("x");
  CHECK(reinterpret_cast<uintptr_t>(x.data_ptr()) % 4 == 0);
  CHECK(x[0].item<float>() == 1.0f);
  CHECK(x[1].item<float>() == -2.5f);
}

TEST_CASE("reader accepts the reference implementation's valid vectors", "[io][safetensors]") {
  // Byte strings from huggingface/safetensors, safetensors/src/tensor.rs tests.
  struct Case {
    const char* name;
    std::string bytes;
  };
  const std::string i32_2x2 =
      R"({"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}})";
  const Case cases[] = {
      {"deserialization", st_bytes(i32_2x2, std::string(16, '\0'))},
      {"empty_shapes", st_bytes(R"({"test":{"dtype":"I32","shape":[],"data_offsets":[0,4]}})",
                                std::string(4, '\0'))},
      {"zero_sized", st_bytes(R"({"test":{"dtype":"I32","shape":[2,0],"data_offsets":[0, 0]}})",
                              "")},
      {"whitespace_trailing", st_bytes("{}\x0D\x20\x09\x0A", "")},
      {"whitespace_leading", st_bytes("\x09\x0A{}\x0D\x20", "")},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    std::string path = file_of_bytes(c.name, c.bytes);
    auto f = SafetensorsFile::open(path);
    for (const auto& t : f.tensors()) {
      at::Tensor x = f.tensor(t.name);
      CHECK(x.scalar_type() == at::kInt);
      CHECK(x.sizes().vec() == t.shape);
      if (x.numel() > 0) CHECK(x.abs().sum().item<int64_t>() == 0);
    }
  }
}

TEST_CASE("reader rejects the reference implementation's invalid vectors", "[io][safetensors]") {
  const std::string i32_2x2 =
      R"({"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}})";
  std::string header_too_large = st_bytes(i32_2x2, std::string(16, '\0'));
  header_too_large.replace(5, 3, "\xff\xff\xff");
  std::string json_attack = "{";
  for (int i = 0; i < 10; ++i)
    json_attack += (i ? "," : "") + entry("weight_" + std::to_string(i), "F32", "[2,2]", "[0,16]");
  json_attack += "}";

  require_rejected("polyglot", st_bytes(i32_2x2, std::string(16, '\0') + "extra_bogus_data"),
                   {"tensors cover 16 bytes", "holds 32", "trailing bytes"});
  require_rejected("missing_2_bytes", st_bytes(i32_2x2, std::string(14, '\0')),
                   {"tensors cover 16 bytes", "holds 14"});
  require_rejected("header_too_large", header_too_large, {"exceeds the limit"});
  require_rejected("header_too_small", "", {"0 bytes", "too short"});
  require_rejected("invalid_header_length", std::string("<\0\0\0\0\0\0\0", 8),
                   {"header length 60 runs past the end of the 8-byte file"});
  require_rejected("non_utf8", std::string("\x01\0\0\0\0\0\0\0\xff", 9), {"not valid JSON"});
  require_rejected("not_json", std::string("\x01\0\0\0\0\0\0\0{", 9), {"not valid JSON"});
  require_rejected("invalid_info",
                   st_bytes(R"({"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0, 4]}})", ""),
                   {"tensor \"test\"", "I32 [2, 2] takes 16 bytes", "span 4"});
  require_rejected("overflow_shape",
                   st_bytes(R"({"test":{"dtype":"I32","shape":[2,18446744073709551614],)"
                            R"("data_offsets":[0,16]}})", std::string(16, '\0')),
                   {"tensor \"test\"", "shape"});
  require_rejected("overflow_bytes",
                   st_bytes(R"({"test":{"dtype":"I32","shape":[2,9223372036854775807],)"
                            R"("data_offsets":[0,16]}})", std::string(16, '\0')),
                   {"tensor \"test\"", "overflows 64 bits"});
  require_rejected("json_attack", st_bytes(json_attack, std::string(16, '\0')),
                   {"must start at 16", "gaps or overlaps"});
}

TEST_CASE("reader rejects malformed files with errors naming file and tensor",
          "[io][safetensors]") {
  const std::string f32x1 = std::string("\x00\x00\x80\x3F", 4);

  std::string missing = scratch("read_missing") + "/nope.safetensors";
  require_error([&] { SafetensorsFile::open(missing); },
                {"cannot open safetensors file", missing, "No such file"});
  std::string folder = scratch("read_folder");
  require_error([&] { SafetensorsFile::open(folder); }, {folder, "not a regular file"});

  require_rejected("seven_bytes", std::string(7, '\0'), {"7 bytes", "too short"});
  require_rejected("absurd_length", std::string("\0\0\0\0\0\0\0\x40", 8),
                   {"header length 4611686018427387904 exceeds the limit"});
  require_rejected("past_end", st_bytes("{}", "").replace(0, 1, "\x10"),
                   {"header length 16 runs past the end of the 10-byte file"});
  require_rejected("json_syntax", st_bytes("{\"a\" 1}", ""), {"not valid JSON", "column"});
  require_rejected("number_overflow", st_bytes(R"({"a":1e999})", ""), {"not valid JSON"});
  require_rejected("array_header", st_bytes("[]", ""), {"must be a JSON object, found array"});
  require_rejected("deep_array", st_bytes(std::string(100000, '[') + std::string(100000, ']'), ""),
                   {"header JSON nests deeper than 128 levels"});
  require_rejected("deep_metadata",
                   st_bytes(R"({"__metadata__":{"k":)" + std::string(200, '[') +
                                std::string(200, ']') + "}}", ""),
                   {"header JSON nests deeper than 128 levels"});
  require_rejected("shallow_metadata",
                   st_bytes(R"({"__metadata__":{"k":)" + std::string(100, '[') +
                                std::string(100, ']') + "}}", ""),
                   {"__metadata__ \"k\" must be a string"});
  require_rejected("metadata_not_object", st_bytes(R"({"__metadata__":[]})", ""),
                   {"__metadata__ must be an object"});
  require_rejected("entry_not_object", st_bytes(R"({"w":3})", ""),
                   {"tensor \"w\"", "entry must be an object, found 3"});
  require_rejected("no_offsets", st_bytes(R"({"w":{"dtype":"F32","shape":[1]}})", f32x1),
                   {"tensor \"w\"", "lacks \"data_offsets\""});
  require_rejected("no_dtype", st_bytes(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", f32x1),
                   {"tensor \"w\"", "lacks \"dtype\""});
  require_rejected("no_shape", st_bytes(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", f32x1),
                   {"tensor \"w\"", "lacks \"shape\""});
  require_rejected("dtype_number",
                   st_bytes(R"({"w":{"dtype":32,"shape":[1],"data_offsets":[0,4]}})", f32x1),
                   {"tensor \"w\"", "dtype must be a string"});
  require_rejected("unknown_dtype", st_bytes("{" + entry("w", "F33", "[1]", "[0,4]") + "}", f32x1),
                   {"tensor \"w\"", "unknown dtype \"F33\""});
  for (const char* shape : {"[-1]", "[1.0]", "\"1\"", "[[1]]", "{}", "[18446744073709551616]"})
    require_rejected(std::string("shape ") + shape,
                     st_bytes("{" + entry("w", "F32", shape, "[0,4]") + "}", f32x1),
                     {"tensor \"w\"", "shape must be an array of non-negative integers"});
  for (const char* off : {"[0,4,8]", "[0]", "[-4,0]", "[0,4.0]", "\"0,4\"", "{\"0\":4}"})
    require_rejected(std::string("offsets ") + off,
                     st_bytes("{" + entry("w", "F32", "[1]", off) + "}", f32x1),
                     {"tensor \"w\"", "data_offsets must be [begin, end]"});
  require_rejected("end_before_begin",
                   st_bytes("{" + entry("a", "F32", "[1]", "[0,4]") + "," +
                                entry("b", "F32", "[1]", "[4,0]") + "}", f32x1),
                   {"tensor \"b\"", "[4, 0] end before they begin"});
  require_rejected("size_mismatch", st_bytes("{" + entry("w", "F32", "[2]", "[0,4]") + "}", f32x1),
                   {"tensor \"w\"", "F32 [2] takes 8 bytes", "[0, 4] span 4"});
  require_rejected("huge_dims",
                   st_bytes("{" + entry("w", "F32", "[1099511627776,1099511627776,0]", "[0,0]") +
                                "}", ""),
                   {"tensor \"w\"", "overflows 64 bits"});
  require_rejected("gap",
                   st_bytes("{" + entry("a", "F32", "[1]", "[0,4]") + "," +
                                entry("b", "F32", "[1]", "[8,12]") + "}", std::string(12, '\0')),
                   {"tensor \"b\"", "must start at 4", "gaps or overlaps"});
  require_rejected("overlap",
                   st_bytes("{" + entry("a", "F32", "[2]", "[0,8]") + "," +
                                entry("b", "F32", "[1]", "[4,8]") + "}", std::string(8, '\0')),
                   {"tensor \"b\"", "must start at 8"});
  require_rejected("sub_byte", st_bytes("{" + entry("w", "F4", "[3]", "[0,2]") + "}", "\0\0"),
                   {"tensor \"w\"", "not a whole number of bytes"});

  // A dtype the format defines but LibTorch 1.13 lacks opens, and fails only when read.
  std::string fp8 = file_of_bytes(
      "fp8", st_bytes("{" + entry("w", "F8_E4M3", "[2]", "[0,2]") + "}", std::string(2, '\0')));
  auto f = SafetensorsFile::open(fp8);
  CHECK(f.info("w").nbytes() == 2);
  require_error([&] { f.tensor("w"); }, {fp8, "tensor \"w\"", "F8_E4M3", "cannot represent"});
  require_error([&] { f.info("nope"); }, {fp8, "no tensor named \"nope\""});
  require_error([&] { f.tensor("nope"); }, {fp8, "no tensor named \"nope\""});
}
