// tests/io/fuzz/fuzz_tokenizer.cpp: libFuzzer entry point for tokenizer.json loading. Built
// like fuzz_safetensors (runtime/io/CMakeLists.txt, -DLTRUN_FUZZ=ON in a clang build); seed
// it with the fixtures under tests/data/text. A file that loads is also used: every id decoded
// and a few texts (ASCII, CJK, an added token, invalid UTF-8) encoded and decoded again, so
// the tables built from the file are exercised, not only the parser. Any exception other
// than ltrun::Error escapes and libFuzzer reports it as a crash.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/core/error.h"
#include "runtime/text/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // TMPDIR=/dev/shm keeps this off the disk.
  static const std::string path =
      (std::filesystem::temp_directory_path() /
       ("ltrun_fuzz_" + std::to_string(::getpid()) + ".tokenizer.json")).string();
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), size);
  try {
    const auto tok = ltrun::text::Tokenizer::load(path);
    std::vector<int32_t> all;
    for (int32_t id = 0; id < tok.vocab_size(); ++id) {
      try {
        (void)tok.id_to_token(id);
        all.push_back(id);
      } catch (const ltrun::Error&) {  // a gap in the ids: refused, fine
      }
    }
    (void)tok.decode(all);
    (void)tok.decode(all, true);
    for (const char* text : {"Hello, world! 42 times", "你好，世界", "<s> <|end|> x", "a\xff\xfe b", ""}) {
      try {
        (void)tok.decode(tok.encode(text));
        (void)tok.encode_with_offsets(text);
      } catch (const ltrun::Error&) {  // invalid UTF-8, an unknown byte without unk: fine
      }
    }
  } catch (const ltrun::Error&) {  // a rejected file: fine
  }
  return 0;
}
