// runtime/text/tools/ltrun_tokenize.cpp: encodes a JSON list of strings with a tokenizer.json
// and prints, per string, the ids, the token offsets and the decoded text as JSON.
//   ltrun_tokenize TOKENIZER TEXTS.json [--no-special] [--bench MB]
// --bench MB: instead, encode TEXTS.json's strings joined, repeated up to MB megabytes, and
// print the throughput (a speed sanity check, not a test).
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "runtime/core/error.h"
#include "runtime/text/tokenizer.h"

namespace {

std::vector<std::string> read_texts(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  LT_CHECK(in, "cannot open '{}'", file);
  try {
    return nlohmann::json::parse(in).get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    ltrun::fail("'{}': expected a JSON list of strings: {}", file, e.what());
  }
}

void bench(const ltrun::text::Tokenizer& tok, const std::vector<std::string>& texts, double mb) {
  std::string text;
  while (text.size() < mb * 1e6)
    for (const auto& t : texts) text += t + "\n";
  const auto t0 = std::chrono::steady_clock::now();
  const size_t n = tok.encode(text, false).size();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%.1f MB -> %zu tokens in %.3f s: %.1f MB/s\n", text.size() / 1e6, n, s,
              text.size() / 1e6 / s);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TOKENIZER TEXTS.json [--no-special] [--bench MB]\n", argv[0]);
    return 2;
  }
  try {
    const auto tok = ltrun::text::Tokenizer::load(argv[1]);
    const auto texts = read_texts(argv[2]);
    bool special = true;
    for (int i = 3; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--no-special") {
        special = false;
      } else if (arg == "--bench" && i + 1 < argc) {
        bench(tok, texts, std::atof(argv[++i]));
        return 0;
      } else {
        ltrun::fail("unknown argument '{}'", arg);
      }
    }
    nlohmann::json out = nlohmann::json::array();
    for (const auto& text : texts) {
      const auto enc = tok.encode_with_offsets(text, special);
      nlohmann::json offsets = nlohmann::json::array();
      for (const auto& o : enc.offsets) offsets.push_back({o.begin, o.end});
      out.push_back({{"ids", enc.ids}, {"offsets", offsets}, {"decoded", tok.decode(enc.ids)}});
    }
    // lossy decoding keeps the output valid UTF-8, so strict dumping cannot fail
    std::cout << out.dump() << "\n";
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ltrun_tokenize: %s\n", e.what());
    return 1;
  }
  return 0;
}
