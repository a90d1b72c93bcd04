// tests/io/io_test_util.h: scratch folders, raw file bytes and error checks for the io tests.
#pragma once
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>

#include "runtime/core/error.h"
#include "tests/test_util.h"

namespace io_test {

// A fresh, empty folder under $LTRUN_TEST_TMP (or /tmp) for one test.
inline std::string scratch(const std::string& name) { return ltrun_test::scratch_dir("io", name); }

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A safetensors file assembled by hand: the 8-byte little-endian length of `header`, the
// header text, the data bytes.
inline std::string st_bytes(const std::string& header, const std::string& data) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
  return out + header + data;
}

inline uint64_t le64(const std::string& bytes, size_t at = 0) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes.at(at + i));
  return v;
}

using ltrun_test::require_error;

}  // namespace io_test
