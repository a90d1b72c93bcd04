// tests/text/tokenizer_test.cpp: the tokenizer on the hand-built tiny tokenizer.json, whose
// expected ids follow from its merges by hand; errors name the file and JSON path.
// (Parity with a reference implementation on the real Qwen3 tokenizer.json:
// tests/cli/tokenizer_parity.sh.)
#include <catch2/catch.hpp>

#include <thread>

#include "runtime/core/error.h"
#include "runtime/text/tokenizer.h"
#include "test_helpers.h"

using ltrun::text::Tokenizer;
using Ids = std::vector<int32_t>;
using namespace text_test;

namespace {

// ids in tests/data/text/tiny/tokenizer.json
constexpr int32_t kBang = 0, kH = 6, kO = 8, kSpace = 11, kA3 = 12, kCopy = 13, kNewline = 14;
constexpr int32_t kEll = 17, kSpaceWorld = 23, kAcute = 24, kCafe = 27, kAA = 28, kDiaeresis = 29;
constexpr int32_t kA = 1;
constexpr int32_t kEnd = 30, kX = 31, kXY = 32, kS = 33;  // added tokens

std::string substr(std::string_view text, const ltrun::text::Encoding::Span& s) {
  return std::string(text.substr(s.begin, s.end - s.begin));
}

}  // namespace

TEST_CASE("merges apply by rank, not left to right") {
  const auto tok = Tokenizer::load(tiny());
  // "l l" (rank 0) beats "h e" (rank 2); then "e ll" (rank 1) takes the e
  CHECK(tok.encode("hello") == Ids{kH, kEll, kO});
  CHECK(tok.encode("hello world!") == Ids{kH, kEll, kO, kSpaceWorld, kBang});
  // equal pairs: the leftmost merges first
  CHECK(tok.encode("aaa") == Ids{kAA, kA});
  CHECK(tok.encode("aaaa") == Ids{kAA, kAA});
  // "Ã ©" (é's two bytes, rank 8) merges before "c a" (rank 9), then "caf Ã©"
  CHECK(tok.encode("café") == Ids{kCafe});
  CHECK(tok.encode("\n") == Ids{kNewline});
}

TEST_CASE("the vocabulary's tables") {
  const auto tok = Tokenizer::load(tiny() + "/tokenizer.json");
  CHECK(tok.vocab_size() == 34);
  CHECK(tok.token_to_id("Ġworld") == kSpaceWorld);
  CHECK(tok.token_to_id("<s>") == kS);
  CHECK_FALSE(tok.token_to_id("zzz").has_value());
  CHECK(tok.id_to_token(kCafe) == "cafÃ©");
  CHECK(tok.id_to_token(kEnd) == "<|end|>");
  CHECK_THROWS_WITH(tok.id_to_token(34), Catch::Contains("no token has id 34"));
  CHECK_THROWS_AS(tok.id_to_token(-1), ltrun::Error);
  CHECK(tok.special_ids() == Ids{kEnd, kS});
  const Tokenizer copy = tok;  // copies share the loaded tables
  CHECK(copy.encode("hello") == tok.encode("hello"));
}

TEST_CASE("added tokens are split out before pre-tokenization") {
  const auto tok = Tokenizer::load(tiny());
  CHECK(tok.encode("hello<|end|>hello") == Ids{kH, kEll, kO, kEnd, kH, kEll, kO});
  // the regex would have joined " <" and "|" with the word around them
  CHECK(tok.encode("a <|end|>!") == Ids{kA, kSpace, kEnd, kBang});
  CHECK(tok.encode("<|end|><|end|>") == Ids{kEnd, kEnd});
  // the longest token at the leftmost position wins
  CHECK(tok.encode("<xy><x>") == Ids{kXY, kX});
  // lstrip / rstrip: <s> swallows the white space around it
  CHECK(tok.encode("a  <s>  a") == Ids{kA, kS, kA});
  CHECK(tok.encode("hello world<s>") == Ids{kH, kEll, kO, kSpaceWorld, kS});
}

TEST_CASE("NFC: decomposed and composed text encode alike") {
  const auto tok = Tokenizer::load(tiny());
  const std::string decomposed = "cafe\xCC\x81";  // e + U+0301 COMBINING ACUTE ACCENT
  CHECK(tok.encode(decomposed) == Ids{kCafe});
  CHECK(tok.decode(tok.encode(decomposed)) == "café");
  // no normalizer: the decomposed form stays (and has no token for U+0301's bytes here)
  const auto raw =
      Tokenizer::load(tiny_variant("no_nfc", [](auto& j) { j["normalizer"] = nullptr; }));
  CHECK_THROWS_WITH(raw.encode(decomposed), Catch::Contains("byte 0xcc has no token"));
}

TEST_CASE("decode") {
  const auto tok = Tokenizer::load(tiny());
  CHECK(tok.decode({kH, kEll, kO, kSpaceWorld, kBang}) == "hello world!");
  CHECK(tok.decode({}).empty());
  // the first byte of "é" alone, or the second alone, is not UTF-8: U+FFFD each
  CHECK(tok.decode({kA3}) == "\xEF\xBF\xBD");
  CHECK(tok.decode({kCopy, kA}) ==
        "\xEF\xBF\xBD"
        "a");
  CHECK(tok.decode({kA3, kCopy}) == "é");  // split across tokens, whole again in decode
  CHECK(tok.decode({kA3, kEnd, kCopy}) == "\xEF\xBF\xBD<|end|>\xEF\xBF\xBD");
  CHECK(tok.decode({kH, kEnd, kX, kS}, true) == "h<x>");  // special ones skipped
  CHECK(tok.decode({kH, kEnd, kX, kS}) == "h<|end|><x><s>");
  CHECK(tok.decode({kH, 1000, -5, kO}) == "ho");  // ids without a token are skipped
}

TEST_CASE("offsets map each token to its bytes of the original text") {
  const auto tok = Tokenizer::load(tiny());
  const std::string text = "hello <|end|>café è!";
  const auto enc = tok.encode_with_offsets(text);
  REQUIRE(enc.ids == Ids{kH, kEll, kO, kSpace, kEnd, kCafe, kSpace, kA3, kDiaeresis, kBang});
  REQUIRE(enc.offsets.size() == enc.ids.size());
  const std::vector<std::string> pieces = {"h",    "ell", "o",    " ",    "<|end|>",
                                           "café", " ",   "\xC3", "\xA8", "!"};
  for (size_t i = 0; i < pieces.size(); ++i) CHECK(substr(text, enc.offsets[i]) == pieces[i]);
  CHECK(enc.ids == tok.encode(text));

  // NFC merged "e" + U+0301 into é: the token covers the whole source of what it holds
  const std::string decomposed = "hello cafe\xCC\x81!";
  const auto nfc = tok.encode_with_offsets(decomposed);
  REQUIRE(nfc.ids == Ids{kH, kEll, kO, kSpace, kCafe, kBang});
  CHECK(substr(decomposed, nfc.offsets[4]) == "cafe\xCC\x81");
  CHECK(substr(decomposed, nfc.offsets[5]) == "!");

  // lstrip/rstrip: the added token's span holds the white space it swallowed
  const std::string stripped = "a  <s>  a";
  const auto s = tok.encode_with_offsets(stripped);
  CHECK(substr(stripped, s.offsets[1]) == "  <s>  ");
}

TEST_CASE("post-processor template and ignore_merges (Llama 3)") {
  const auto tok = Tokenizer::load(tiny_variant("llama3_like", [](auto& j) {
    j["normalizer"] = nullptr;
    j["model"]["ignore_merges"] = true;
    j["model"]["vocab"]["hello"] = 34;  // no merge makes it: only ignore_merges finds it
    j["post_processor"] = nlohmann::json::parse(R"({"type": "Sequence", "processors": [
      {"type": "ByteLevel"},
      {"type": "TemplateProcessing",
       "single": [{"SpecialToken": {"id": "<|end|>", "type_id": 0}},
                  {"Sequence": {"id": "A", "type_id": 0}}],
       "pair": [],
       "special_tokens": {"<|end|>": {"id": "<|end|>", "ids": [30], "tokens": ["<|end|>"]}}}]})");
  }));
  CHECK(tok.encode("hello!") == Ids{kEnd, 34, kBang});
  CHECK(tok.encode("hello!", false) == Ids{34, kBang});
  CHECK(tok.encode("", true) == Ids{kEnd});
  const auto enc = tok.encode_with_offsets("hello!");
  CHECK(enc.offsets[0].begin == 0);
  CHECK(enc.offsets[0].end == 0);
  CHECK(enc.offsets[1].end == 5);
}

TEST_CASE("merges written as \"a b\" strings load like pairs") {
  const auto tok = Tokenizer::load(tiny_variant("string_merges", [](auto& j) {
    for (auto& m : j["model"]["merges"])
      m = m[0].template get<std::string>() + " " + m[1].template get<std::string>();
  }));
  CHECK(tok.encode("hello world!") == Ids{kH, kEll, kO, kSpaceWorld, kBang});
}

TEST_CASE("a ByteLevel decoder inside a Sequence") {
  const auto tok = Tokenizer::load(tiny_variant("decoder_sequence", [](auto& j) {
    j["decoder"] = {{"type", "Sequence"}, {"decoders", {j["decoder"]}}};
  }));
  CHECK(tok.decode(tok.encode("hello world!")) == "hello world!");
}

TEST_CASE("encode_batch equals encode, from several threads") {
  const auto tok = Tokenizer::load(tiny());
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i)
    texts.push_back(std::string(i % 7, 'a') + (i % 3 ? " hello world" : "<|end|>café") +
                    std::string(i % 5, '!'));
  const auto batch = tok.encode_batch(texts);
  REQUIRE(batch.size() == texts.size());
  for (size_t i = 0; i < texts.size(); ++i) CHECK(batch[i] == tok.encode(texts[i]));
  // concurrent encodes on one tokenizer share its word cache
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < texts.size(); ++i) ok[t] += tok.encode(texts[i]) == batch[i];
    });
  for (auto& th : threads) th.join();
  for (int n : ok) CHECK(n == static_cast<int>(texts.size()));
  CHECK_THROWS_WITH(tok.encode_batch({"hello", "z"}), Catch::Contains("byte 0x7a"));
}

TEST_CASE("invalid UTF-8 input is an error") {
  const auto tok = Tokenizer::load(tiny());
  CHECK_THROWS_WITH(tok.encode("hello\xC3("), Catch::Contains("not valid UTF-8 at byte 5"));
}

TEST_CASE("token ids: dense within the vocabulary, each id once") {
  using nlohmann::json;
  check_load_errors(tiny(), "ids_", {
      // one stray id used to size the id tables: 100000000 entries from a 1 KB file
      {"huge", [](json& j) { j["model"]["vocab"]["a"] = 100000000; }, "model.vocab[\"a\"]",
       "id 100000000 is beyond the 34 tokens of the vocab and added_tokens (ids must be below 34)"},
      {"just_beyond", [](json& j) { j["model"]["vocab"]["a"] = 34; }, "model.vocab[\"a\"]", "ids must be below 34"},
      {"duplicate", [](json& j) { j["model"]["vocab"]["b"] = 1; }, "model.vocab[\"b\"]",
       "id 1 is also the id of \"a\""},
      {"added_huge", [](json& j) { j["added_tokens"][2]["id"] = 100000000; }, "added_tokens[2].id",
       "id 100000000 is beyond the 34 tokens"},
      {"added_duplicate", [](json& j) { j["added_tokens"][3]["id"] = 31; }, "added_tokens[3].id",
       "id 31 is also the id of the added token \"<x>\""},
  });
  // nesting 70,000 deep: an error naming the file (the error's dump() used to recurse per level)
  const std::string deep = scratch("ids_deep.json");
  write_file(deep, "{\"model\": " + std::string(70000, '[') + std::string(70000, ']') + "}");
  CHECK_THROWS_WITH(Tokenizer::load(deep), Catch::Contains(deep) && Catch::Contains("nested deeper than 200"));
  // an added token may reuse a vocab id (Llama 2's <s> is both): still loads
  const auto reuse = tiny_variant("ids_reuse", [](json& j) { j["added_tokens"][3]["id"] = 5; });
  CHECK(Tokenizer::load(reuse).vocab_size() == 33);
}

TEST_CASE("load errors name the file and the JSON path") {
  const std::string missing = scratch("does_not_exist.json");
  CHECK_THROWS_WITH(Tokenizer::load(missing),
                    Catch::Contains(missing) && Catch::Contains("cannot open"));
  CHECK_THROWS_WITH(Tokenizer::load(scratch("")), Catch::Contains("tokenizer.json"));

  const std::string malformed = scratch("malformed.json");
  write_file(malformed, "{\"model\": {\"type\": \"BPE\",");
  CHECK_THROWS_WITH(Tokenizer::load(malformed),
                    Catch::Contains(malformed) && Catch::Contains("malformed JSON"));

  using nlohmann::json;
  check_load_errors(tiny(), "", {
      {"wordpiece", [](json& j) { j["model"]["type"] = "WordPiece"; }, "model.type",
       "unsupported model \"WordPiece\""},
      {"lowercase",
       [](json& j) {
         j["normalizer"] = {{"type", "Lowercase"}};
       },
       "normalizer.type", "unsupported normalizer"},
      {"whitespace",
       [](json& j) { j["pre_tokenizer"]["pretokenizers"][1]["type"] = "WhitespaceSplit"; },
       "pre_tokenizer.pretokenizers[1].type", "unsupported pre-tokenizer \"WhitespaceSplit\""},
      {"metaspace_after_split",
       [](json& j) {
         j["pre_tokenizer"]["pretokenizers"][1] = {{"type", "Metaspace"}, {"replacement", "▁"}};
       },
       "pre_tokenizer.pretokenizers[1]", "Metaspace must be the only pre-tokenizer"},
      {"byte_fallback", [](json& j) { j["model"]["byte_fallback"] = true; }, "model.byte_fallback",
       "byte_fallback is not supported with a byte-level BPE"},
      {"metaspace_decoder",
       [](json& j) {
         j["decoder"] = {{"type", "Metaspace"}, {"replacement", "▁"}};
       },
       "decoder.type", "unsupported decoder \"Metaspace\" (supported: ByteLevel)"},
      {"removed", [](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed"; },
       "pre_tokenizer.pretokenizers[0].behavior", "unsupported split behavior"},
      {"bad_regex",
       [](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(a"; },
       "pre_tokenizer.pretokenizers[0].pattern.Regex", "cannot compile regex"},
      {"no_bytelevel", [](json& j) { j["pre_tokenizer"]["pretokenizers"].erase(1); },
       "pre_tokenizer", "needs a ByteLevel pre-tokenizer"},
      {"bad_merge",
       [](json& j) {
         j["model"]["merges"][3] = json::array({"Ġ", "q"});
       },
       "model.merges[3]", "token \"q\" is not in the vocab"},
      {"bad_string_merge", [](json& j) { j["model"]["merges"][0] = "l l l"; }, "model.merges[0]",
       "expected \"a b\""},
      {"bad_id", [](json& j) { j["added_tokens"][0]["id"] = "x"; }, "added_tokens[0].id",
       "expected a token id"},
      {"no_vocab", [](json& j) { j["model"].erase("vocab"); }, "model.vocab", "missing"},
      {"wordpiece_decoder", [](json& j) { j["decoder"]["type"] = "WordPiece"; }, "decoder.type",
       "unsupported decoder"},
      {"roberta", [](json& j) { j["post_processor"]["type"] = "RobertaProcessing"; },
       "post_processor.type", "unsupported post-processor"},
  });
}
