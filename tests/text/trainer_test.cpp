// tests/text/trainer_test.cpp: BPE training: merges worked out by hand on a tiny corpus
// (Hugging Face's rule: most frequent pair, ties to the smaller pair of ids), then a small
// English/Chinese corpus: vocab size, round trips, determinism.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "runtime/core/error.h"
#include "runtime/text/tokenizer.h"
#include "test_helpers.h"

using ltrun::text::BpeTrainOptions;
using ltrun::text::Tokenizer;
using ltrun::text::train_bpe;
using Ids = std::vector<int32_t>;
using namespace text_test;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json merges(const char* json) { return nlohmann::json::parse(json); }

// A few hundred lines of English and Chinese, the same on every run.
std::vector<std::string> corpus() {
  const std::vector<std::string> en = {
      "the",  "model",    "learns",  "a",       "small", "language",  "from",     "text",
      "and",  "predicts", "next",    "token",   "with",  "attention", "layers",   "in",
      "each", "step",     "we",      "measure", "loss",  "of",        "training", "data",
      "is",   "it's",     "they're", "don't",   "42",    "2024"};
  const std::vector<std::string> zh = {"模型", "学习",   "语言", "数据",   "训练", "我们",
                                       "文本", "注意力", "预测", "下一个", "词元", "很好"};
  std::vector<std::string> lines;
  uint32_t state = 12345;
  const auto next = [&](size_t n) {
    state = state * 1664525u + 1013904223u;
    return (state >> 8) % n;
  };
  for (int i = 0; i < 300; ++i) {
    std::string line;
    const size_t words = 4 + next(10);
    for (size_t w = 0; w < words; ++w) {
      if (i % 3 == 0) {
        line += zh[next(zh.size())];
      } else {
        if (w) line += ' ';
        line += en[next(en.size())];
      }
    }
    line += i % 3 == 0 ? "。" : (i % 2 ? "." : "!\n");
    if (i % 10 == 0) line = "<|im_start|>user\n" + line + "<|im_end|>";
    lines.push_back(line);
  }
  return lines;
}

}  // namespace

TEST_CASE("trainer: merges on a tiny corpus, worked out by hand") {
  // words: "ab" x1, " ab" x2, " cd" x2. Pair counts: a b 3, Ġ a 2, Ġ c 2, c d 2.
  // 1. "a b" (3). Then all pairs count 2: Ġ ab (220, 256), Ġ c (220, 66), c d (66, 67):
  // 2. "c d" (smallest ids), 3. "Ġ ab", 4. "Ġ cd"; then every word is one token.
  const std::string out = scratch("tiny_trained.json");
  train_bpe({"ab ab ab cd cd"}, BpeTrainOptions{}, out);
  const auto j = nlohmann::json::parse(slurp(out));
  CHECK(j["model"]["merges"] == merges(R"([["a", "b"], ["c", "d"], ["Ġ", "ab"], ["Ġ", "cd"]])"));
  const auto tok = Tokenizer::load(out);
  CHECK(tok.vocab_size() == 256 + 4 + 3);
  CHECK(tok.special_ids() == Ids{260, 261, 262});
  CHECK(tok.token_to_id("<|endoftext|>") == 260);
  CHECK(tok.token_to_id("<|im_end|>") == 262);
  // byte tokens take GPT-2's (and Qwen's) ids
  CHECK(tok.token_to_id("!") == 0);
  CHECK(tok.token_to_id("Ġ") == 220);
  CHECK(tok.token_to_id("a") == 64);
  CHECK(tok.encode("ab cd ab<|im_end|>") == Ids{256, 259, 258, 262});

  // min_frequency 3: only "a b" occurs often enough
  train_bpe({"ab ab ab cd cd"}, BpeTrainOptions{1024, {"<|endoftext|>"}, 3}, out);
  CHECK(nlohmann::json::parse(slurp(out))["model"]["merges"] == merges(R"([["a", "b"]])"));
  // vocab_size counts bytes, merges and special tokens: room for two merges
  train_bpe({"ab ab ab cd cd"}, BpeTrainOptions{256 + 2 + 1, {"<|endoftext|>"}, 2}, out);
  CHECK(nlohmann::json::parse(slurp(out))["model"]["merges"] ==
        merges(R"([["a", "b"], ["c", "d"]])"));
  CHECK(Tokenizer::load(out).vocab_size() == 259);
}

TEST_CASE("trainer: a small English/Chinese corpus") {
  const auto lines = corpus();
  const std::string out = scratch("trained.json");
  BpeTrainOptions options;
  options.vocab_size = 500;
  train_bpe(lines, options, out);
  const auto tok = Tokenizer::load(out);
  CHECK(tok.vocab_size() == 500);
  CHECK(tok.special_ids() == Ids{497, 498, 499});

  // merges were learned and are used: a training line takes far fewer tokens than bytes
  const auto ids = tok.encode(lines[1]);
  CHECK(ids.size() * 3 < lines[1].size());
  CHECK(tok.encode(lines[0]).front() == tok.token_to_id("<|im_start|>"));

  // any text encodes and decodes back, seen or not (all 256 bytes are tokens)
  const std::vector<std::string> texts = {
      "the model learns",
      "Completely unseen WORDS, with punctuation!?",
      "emoji 👨‍👩‍👧 🏳️‍🌈 😀 and 🇨🇳",
      "未见过的汉字：鑫龘靐",
      "tabs\tand\nnewlines\r\n  trailing  ",
      "<|im_start|>assistant\n模型 predicts 42 tokens<|im_end|>",
      "\x01\x7f control",
      ""};
  for (const auto& t : texts) {
    INFO(t);
    CHECK(tok.decode(tok.encode(t)) == t);
  }

  // deterministic: the same corpus gives the same file, byte for byte
  const std::string again = scratch("trained_again.json");
  train_bpe(lines, options, again);
  CHECK(slurp(out) == slurp(again));

  // a vocabulary larger than the corpus supports: training stops at min_frequency
  options.vocab_size = 5000;
  train_bpe(lines, options, again);
  const auto big = Tokenizer::load(again);
  CHECK(big.vocab_size() > 500);
  CHECK(big.vocab_size() < 5000);
}

TEST_CASE("trainer: errors") {
  const std::string out = scratch("never_written.json");
  CHECK_THROWS_WITH(train_bpe({"abc"}, BpeTrainOptions{100}, out),
                    Catch::Contains("vocab_size 100"));
  CHECK_THROWS_WITH(train_bpe({"ok", "bad \xC3("}, BpeTrainOptions{}, out),
                    Catch::Contains("text #1 is not valid UTF-8 at byte 4"));
  CHECK_THROWS_WITH(train_bpe({"abc"}, BpeTrainOptions{300, {"<a>", "<a>"}}, out),
                    Catch::Contains("distinct"));
  const std::string bad_dir = scratch("no/such/dir/tokenizer.json");
  CHECK_THROWS_WITH(train_bpe({"abc"}, BpeTrainOptions{}, bad_dir), Catch::Contains(bad_dir));
}
