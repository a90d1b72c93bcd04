// tests/io/fuzz/fuzz_safetensors.cpp: libFuzzer entry point for the safetensors reader.
// Built only with -DLTRUN_FUZZ=ON in a clang build (see runtime/io/CMakeLists.txt); the
// input is written to a file because the reader maps files. Any exception other than
// ltrun::Error escapes and libFuzzer reports it as a crash.
#include <ATen/ATen.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/core/error.h"
#include "runtime/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // TMPDIR=/dev/shm keeps this off the disk.
  static const std::string path =
      (std::filesystem::temp_directory_path() /
       ("ltrun_fuzz_" + std::to_string(::getpid()) + ".safetensors")).string();
  std::filesystem::remove(path);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(data), size);
  try {
    auto f = ltrun::io::SafetensorsFile::open(path);
    for (const auto& t : f.tensors()) {
      try {
        at::Tensor x = f.tensor(t.name);
        const auto* p = static_cast<const volatile uint8_t*>(x.data_ptr());
        uint8_t acc = 0;
        for (size_t i = 0; i < x.nbytes(); ++i) acc ^= p[i];  // touch every byte
        (void)acc;
      } catch (const ltrun::Error&) {  // a dtype this LibTorch lacks: fine
      }
    }
  } catch (const ltrun::Error&) {  // a rejected file: fine
  }
  return 0;
}
