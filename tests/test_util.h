// tests/test_util.h: what the Catch2 areas share: fresh scratch folders and checks that a
// call fails with an ltrun::Error naming what went wrong.
#pragma once
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <string>

#include "runtime/core/error.h"
#include "runtime/core/fs.h"

namespace ltrun_test {

// A fresh, empty folder $LTRUN_TEST_TMP/AREA/NAME (or under /tmp).
inline std::string scratch_dir(const std::string& area, const std::string& name) {
  const char* root = std::getenv("LTRUN_TEST_TMP");
  auto dir = std::filesystem::path(root && *root ? root : "/tmp") / area / name;
  ltrun::fs::remove_tree(dir.string());  // not std::filesystem::remove_all: see runtime/core/fs.h
  std::filesystem::create_directories(dir);
  return dir.string();
}

// Runs `f` and requires an ltrun::Error whose message contains each of `parts`.
template <class F>
void require_error(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
  } catch (const ltrun::Error& e) {
    const std::string msg = e.what();
    INFO("message: " << msg);
    for (const auto& p : parts) CHECK(msg.find(p) != std::string::npos);
    return;
  } catch (const std::exception& e) {
    FAIL("expected ltrun::Error, got another exception: " << e.what());
  }
  FAIL("expected ltrun::Error, nothing was thrown");
}

}  // namespace ltrun_test
