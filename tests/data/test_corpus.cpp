// tests/data/test_corpus.cpp: packing text / fortune / JSONL / folders into token shards
// (checked against the tokenizer run document by document), the train/validation split,
// memory-mapped reading, deterministic shuffled windows, and errors that name the file.
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "runtime/core/error.h"
#include "runtime/data/corpus.h"
#include "runtime/text/tokenizer.h"
#include "tests/test_util.h"

using namespace ltrun;
namespace sfs = std::filesystem;  // (ltrun::fs is another)

namespace {

std::string scratch(const std::string& name) { return ltrun_test::scratch_dir("corpus", name); }

void write(const sfs::path& p, const std::string& s) {
  sfs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << s;
}

// A small tokenizer trained here, so the test needs no model folder.
std::string make_tokenizer(const std::string& dir) {
  const std::string path = (sfs::path(dir) / "tokenizer.json").string();
  text::BpeTrainOptions o;
  o.vocab_size = 300;
  text::train_bpe({"the cat sat on the mat", "a dog and a cat", "hello world"}, o, path);
  return path;
}

std::vector<int64_t> all_tokens(const data::Corpus& c, const std::string& split) {
  at::Tensor t = c.slice(split, 0, c.tokens(split));
  return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
}

}  // namespace

TEST_CASE("pack: fortune text, JSONL and folders; EOS after every document") {
  const std::string d = scratch("pack");
  const std::string tok_path = make_tokenizer(d);
  write(sfs::path(d) / "in" / "a.txt", "the cat sat\n%\non the mat\n%\n");
  write(sfs::path(d) / "in" / "b.jsonl",
        "{\"body\": \"a dog\"}\n\n{\"body\": \"hello world\", \"x\": 1}\n");
  write(sfs::path(d) / "folder" / "c" / "one", "a cat and a dog\n");
  write(sfs::path(d) / "folder" / "c" / "one.dat", std::string("\xff\xfe\x00\x01", 4));  // skipped
  write(sfs::path(d) / "folder" / ".hidden", "not read");

  const auto docs = data::read_documents(
      {(sfs::path(d) / "in" / "a.txt").string(), (sfs::path(d) / "in" / "b.jsonl").string(),
       (sfs::path(d) / "folder").string()},
      "body");
  REQUIRE(docs.size() == 5);
  CHECK(docs[0] == "the cat sat\n");
  CHECK(docs[1] == "on the mat\n");
  CHECK(docs[2] == "a dog");
  CHECK(docs[3] == "hello world");
  CHECK(docs[4] == "a cat and a dog\n");
  int64_t bytes = 0;
  const auto few = data::read_documents(
      {(sfs::path(d) / "in" / "a.txt").string(), (sfs::path(d) / "in" / "b.jsonl").string()}, "body",
      /*max_bytes=*/15, &bytes);
  CHECK(few.size() == 2);  // the second document starts below the limit, the third does not
  CHECK(bytes == 12 + 11);

  data::PackOptions o;
  o.tokenizer = tok_path;
  o.inputs = {(sfs::path(d) / "in" / "a.txt").string(), (sfs::path(d) / "in" / "b.jsonl").string(),
              (sfs::path(d) / "folder").string()};
  o.field = "body";
  o.out_dir = (sfs::path(d) / "out").string();
  o.val_fraction = 0.0;
  o.shard_tokens = 7;  // several shards
  o.progress = false;
  const data::PackResult r = data::pack(o);
  const text::Tokenizer tok = text::Tokenizer::load(tok_path);
  const int32_t eos = *tok.token_to_id("<|endoftext|>");
  CHECK(r.eos_id == eos);
  std::vector<int64_t> expect;
  for (const auto& doc : docs) {
    for (int32_t id : tok.encode(doc, false)) expect.push_back(id);
    expect.push_back(eos);
  }
  const data::Corpus c = data::Corpus::open(o.out_dir);
  CHECK(all_tokens(c, "train") == expect);
  CHECK(r.train_tokens == int64_t(expect.size()));
  CHECK(c.tokens("val") == 0);
  CHECK(c.vocab_size() == tok.vocab_size());
  nlohmann::json j = nlohmann::json::parse(std::ifstream(sfs::path(o.out_dir) / "index.json"));
  CHECK(j["splits"]["train"]["shards"].size() > 1);
  CHECK(j["dtype"] == "uint32");
}

TEST_CASE("pack: validation split by document, seeded") {
  const std::string d = scratch("split");
  const std::string tok_path = make_tokenizer(d);
  std::string text;
  for (int i = 0; i < 200; ++i) text += "doc number " + std::to_string(i) + "\n%\n";
  write(sfs::path(d) / "f.txt", text);
  auto run = [&](uint64_t seed, const std::string& out) {
    data::PackOptions o;
    o.tokenizer = tok_path;
    o.inputs = {(sfs::path(d) / "f.txt").string()};
    o.out_dir = (sfs::path(d) / out).string();
    o.val_fraction = 0.1;
    o.seed = seed;
    o.progress = false;
    return data::pack(o);
  };
  const auto a = run(1, "a"), b = run(1, "b"), c = run(2, "c");
  CHECK(a.val_documents > 5);
  CHECK(a.val_documents < 40);
  CHECK(a.train_documents + a.val_documents == 200);
  CHECK(all_tokens(data::Corpus::open(a.out_dir), "val") ==
        all_tokens(data::Corpus::open(b.out_dir), "val"));
  CHECK(all_tokens(data::Corpus::open(a.out_dir), "val") !=
        all_tokens(data::Corpus::open(c.out_dir), "val"));
}

TEST_CASE("windows: every window once per epoch, seeded order, resumable cursor") {
  const std::string d = scratch("windows");
  const std::string tok_path = make_tokenizer(d);
  std::string text;
  for (int i = 0; i < 100; ++i) text += "the cat sat on the mat " + std::to_string(i) + "\n%\n";
  write(sfs::path(d) / "f.txt", text);
  data::PackOptions o;
  o.tokenizer = tok_path;
  o.inputs = {(sfs::path(d) / "f.txt").string()};
  o.out_dir = (sfs::path(d) / "out").string();
  o.val_fraction = 0;
  o.progress = false;
  o.shard_tokens = 100;
  data::pack(o);
  const data::Corpus c = data::Corpus::open(o.out_dir);
  const int64_t seq = 16;
  data::Windows w(c, "train", seq, 7);
  CHECK(w.count() == (c.tokens("train") - 1) / seq);
  // window i is tokens [i * seq, i * seq + seq + 1) of the stream, across shard boundaries
  const std::vector<int64_t> all = all_tokens(c, "train");
  for (int64_t i : {int64_t(0), w.count() / 2, w.count() - 1}) {
    at::Tensor win = w.get(i);
    for (int64_t k = 0; k <= seq; ++k) CHECK(win[k].item<int64_t>() == all[size_t(i * seq + k)]);
  }
  // one epoch visits each window once: the same multiset of rows as get(0 .. count-1)
  at::Tensor epoch = w.next(w.count());
  auto rows = [](const at::Tensor& t) {
    std::vector<std::vector<int64_t>> out;
    for (int64_t b = 0; b < t.size(0); ++b) {
      at::Tensor r = t[b].contiguous();
      out.emplace_back(r.data_ptr<int64_t>(), r.data_ptr<int64_t>() + r.numel());
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  std::vector<at::Tensor> in_order;
  for (int64_t i = 0; i < w.count(); ++i) in_order.push_back(w.get(i));
  CHECK(rows(epoch) == rows(at::stack(in_order)));
  CHECK_FALSE(at::equal(epoch, at::stack(in_order)));  // shuffled
  CHECK(w.cursor() == uint64_t(w.count()));
  // same seed, same order; another seed, another order; seek resumes exactly
  data::Windows same(c, "train", seq, 7), other(c, "train", seq, 8);
  CHECK(at::equal(same.next(5), epoch.narrow(0, 0, 5)));
  CHECK_FALSE(at::equal(other.next(5), epoch.narrow(0, 0, 5)));
  data::Windows r(c, "train", seq, 7);
  r.seek(3);
  CHECK(at::equal(r.next(2), epoch.narrow(0, 3, 2)));
  CHECK(r.cursor() == 5);
}

TEST_CASE("pack: empty, non-UTF-8 and malformed inputs are errors naming the file") {
  const std::string d = scratch("errors");
  const std::string tok_path = make_tokenizer(d);
  write(sfs::path(d) / "empty.txt", "  \n");
  write(sfs::path(d) / "latin1.txt", "caf\xe9\n");
  write(sfs::path(d) / "bad.jsonl", "{\"text\": \"ok\"}\n{\"other\": 1}\n");
  auto pack_one = [&](const std::string& f) {
    data::PackOptions o;
    o.tokenizer = tok_path;
    o.inputs = {(sfs::path(d) / f).string()};
    o.out_dir = (sfs::path(d) / "out").string();
    o.progress = false;
    data::pack(o);
  };
  CHECK_THROWS_WITH(pack_one("empty.txt"), Catch::Contains("empty.txt is empty"));
  CHECK_THROWS_WITH(pack_one("latin1.txt"), Catch::Contains("latin1.txt is not UTF-8"));
  CHECK_THROWS_WITH(pack_one("bad.jsonl"), Catch::Contains("bad.jsonl:2: no string field \"text\""));
  CHECK_THROWS_WITH(pack_one("missing.txt"), Catch::Contains("missing.txt does not exist"));
  CHECK_THROWS_WITH(data::Corpus::open(d), Catch::Contains("no index.json"));
}
