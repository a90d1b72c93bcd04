// runtime/data/corpus.cpp: reading documents, packing shards + index.json, mmap reading,
// shuffled windows.
#include "runtime/data/corpus.h"

#include <ATen/ATen.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "runtime/core/env.h"
#include "runtime/core/inputs.h"
#include "runtime/core/error.h"
#include "runtime/core/fs.h"
#include "runtime/core/interrupt.h"
#include "runtime/io/atomic_file.h"
#include "runtime/text/tokenizer.h"
#include "runtime/text/utf8.h"

namespace ltrun::data {

namespace fs = std::filesystem;

namespace {

// Corpus files are read whole: regular files only (a FIFO would hang `data pack`,
// /dev/zero never ends), and at most this many bytes each.
constexpr unsigned long long kMaxCorpusFileBytes = 1ull << 34;

std::string read_file(const fs::path& p, unsigned long long max_bytes = kMaxCorpusFileBytes) {
  try {
    return ltrun::read_file(p.string(), max_bytes);
  } catch (const Error& e) {
    fail("corpus: {}", e.what());
  }
}

bool ends_with(const std::string& s, const std::string& x) {
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

// Splits fortune-format text at lines holding only "%"; drops empty documents.
void split_fortunes(const std::string& text, std::vector<std::string>& out) {
  std::string cur;
  size_t i = 0;
  while (i <= text.size()) {
    size_t e = text.find('\n', i);
    if (e == std::string::npos) e = text.size();
    std::string_view line(text.data() + i, e - i);
    if (line == "%" || line == "%\r") {
      if (cur.find_first_not_of(" \t\r\n") != std::string::npos) out.push_back(cur);
      cur.clear();
    } else {
      cur.append(line);
      if (e < text.size()) cur += '\n';
    }
    i = e + 1;
  }
  if (cur.find_first_not_of(" \t\r\n") != std::string::npos) out.push_back(cur);
}

void read_one(const fs::path& p, const std::string& field, std::vector<std::string>& out,
              int64_t& bytes, int64_t max_bytes) {
  const std::string text = read_file(p);
  note_input("data", p.string());  // recorded with the run (runtime/core/inputs.h)
  LT_CHECK(text.find_first_not_of(" \t\r\n") != std::string::npos, "corpus: {} is empty",
           p.string());
  const size_t bad = text::invalid_utf8_at(text);
  LT_CHECK(bad == std::string::npos, "corpus: {} is not UTF-8 text (invalid byte at offset {})",
           p.string(), bad);
  const size_t before = out.size();
  if (ends_with(p.string(), ".jsonl")) {
    size_t i = 0;
    int line_no = 0;
    while (i < text.size()) {
      size_t e = text.find('\n', i);
      if (e == std::string::npos) e = text.size();
      ++line_no;
      std::string_view line(text.data() + i, e - i);
      i = e + 1;
      if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(line);
      } catch (const std::exception& ex) {
        fail("corpus: {}:{}: not a JSON object: {}", p.string(), line_no, ex.what());
      }
      LT_CHECK(j.is_object() && j.contains(field) && j[field].is_string(),
               "corpus: {}:{}: no string field \"{}\"", p.string(), line_no, field);
      std::string doc = j[field].get<std::string>();
      if (!doc.empty()) out.push_back(std::move(doc));
    }
  } else {
    split_fortunes(text, out);
  }
  LT_CHECK(out.size() > before, "corpus: {} holds no documents", p.string());
  // count document bytes; past max_bytes keep only the documents that fit (at least one)
  for (size_t i = before; i < out.size(); ++i) {
    if (max_bytes > 0 && bytes >= max_bytes && i > before) {
      out.resize(i);
      break;
    }
    bytes += int64_t(out[i].size());
  }
}

uint64_t splitmix(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

std::vector<std::string> read_documents(const std::vector<std::string>& inputs,
                                        const std::string& field, int64_t max_bytes,
                                        int64_t* bytes_read) {
  LT_CHECK(!inputs.empty(), "corpus: no input files");
  std::vector<std::string> docs;
  int64_t bytes = 0;
  auto full = [&] { return max_bytes > 0 && bytes >= max_bytes; };
  for (const std::string& in : inputs) {
    const fs::path p(ltrun::fs::share_path(in));
    LT_CHECK(fs::exists(p), "corpus: {} does not exist", in);
    if (fs::is_directory(p)) {
      std::vector<fs::path> files;
      for (const auto& e : ltrun::fs::walk(p.string())) {
        const std::string name = fs::path(e.path).filename().string();
        if (!e.is_file || name.empty() || name[0] == '.' || ends_with(name, ".dat")) continue;
        files.push_back(e.path);
      }
      std::sort(files.begin(), files.end());
      LT_CHECK(!files.empty(), "corpus: folder {} holds no files", in);
      for (const auto& f : files) {
        if (full()) break;
        read_one(f, field, docs, bytes, max_bytes);
      }
    } else if (!full()) {
      read_one(p, field, docs, bytes, max_bytes);
    }
  }
  if (bytes_read) *bytes_read = bytes;
  return docs;
}

PackResult pack(const PackOptions& o) {
  LT_CHECK(!o.out_dir.empty(), "data pack: no output folder");
  LT_CHECK(o.val_fraction >= 0 && o.val_fraction < 1, "data pack: val fraction {} outside [0, 1)",
           o.val_fraction);
  const auto t0 = std::chrono::steady_clock::now();
  const text::Tokenizer tok = text::Tokenizer::load(o.tokenizer);
  std::string eos_text = o.eos;
  std::optional<int32_t> eos;
  if (eos_text.empty()) {
    eos = tok.token_to_id("<|endoftext|>");
    eos_text = "<|endoftext|>";
    if (!eos && !tok.special_ids().empty()) {
      eos = tok.special_ids().front();
      eos_text = tok.id_to_token(*eos);
    }
  } else {
    eos = tok.token_to_id(eos_text);
  }
  LT_CHECK(eos, "data pack: {} has no EOS token {}", tok.path(),
           eos_text.empty() ? "(no special tokens)" : eos_text);

  PackResult r;
  const std::vector<std::string> docs = read_documents(o.inputs, o.field, o.max_bytes, &r.bytes);
  r.documents = int64_t(docs.size());
  r.eos_id = *eos;

  // validation documents: a seeded coin per document; at least one when asked and possible
  std::vector<char> is_val(docs.size(), 0);
  uint64_t st = o.seed * 0x2545F4914F6CDD1Dull + 17;
  for (size_t i = 0; i < docs.size(); ++i)
    is_val[i] = double(splitmix(st) >> 11) / double(1ull << 53) < o.val_fraction;
  if (o.val_fraction > 0 && docs.size() >= 2 &&
      std::find(is_val.begin(), is_val.end(), 1) == is_val.end())
    is_val.back() = 1;

  fs::create_directories(o.out_dir);
  struct Split {
    std::string name;
    std::vector<uint32_t> buf;
    nlohmann::json shards = nlohmann::json::array();
    int64_t tokens = 0, documents = 0;
  } train, val;
  train.name = "train";
  val.name = "val";
  auto flush = [&](Split& s) {
    if (s.buf.empty()) return;
    const std::string file = fmt::format("{}-{:05d}.bin", s.name, s.shards.size());
    io::AtomicFile f((fs::path(o.out_dir) / file).string());
    f.write(s.buf.data(), s.buf.size() * sizeof(uint32_t));
    f.commit();
    s.shards.push_back({{"file", file}, {"tokens", s.buf.size()}});
    s.buf.clear();
  };
  const bool tty = o.progress && isatty(2);
  const size_t chunk = 2048;
  for (size_t i = 0; i < docs.size(); i += chunk) {
    check_interrupt();
    const size_t e = std::min(docs.size(), i + chunk);
    const std::vector<std::string> part(docs.begin() + long(i), docs.begin() + long(e));
    const auto ids = tok.encode_batch(part, /*add_special_tokens=*/false);
    for (size_t k = 0; k < ids.size(); ++k) {
      Split& s = is_val[i + k] ? val : train;
      for (int32_t id : ids[k]) s.buf.push_back(uint32_t(id));
      s.buf.push_back(uint32_t(*eos));
      s.tokens += int64_t(ids[k].size()) + 1;
      s.documents += 1;
      if (int64_t(s.buf.size()) >= o.shard_tokens) flush(s);
    }
    if (tty) {
      const double dt =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      fmt::print(stderr, "\rdata pack: {}/{} documents, {} tokens, {:.0f} tokens/s   ", e,
                 docs.size(), train.tokens + val.tokens, double(train.tokens + val.tokens) / dt);
    }
  }
  if (tty) fmt::print(stderr, "\n");
  flush(train);
  flush(val);
  LT_CHECK(train.tokens > 0, "data pack: no training tokens");
  nlohmann::json j;
  j["format"] = "ltrun-corpus";
  j["version"] = 1;
  j["dtype"] = "uint32";
  j["tokenizer"] = fs::absolute(tok.path()).string();
  j["vocab_size"] = tok.vocab_size();
  j["eos"] = eos_text;
  j["eos_id"] = *eos;
  j["field"] = o.field;
  j["seed"] = o.seed;
  j["val_fraction"] = o.val_fraction;
  j["documents"] = r.documents;
  j["bytes"] = r.bytes;
  j["inputs"] = o.inputs;
  for (Split* s : {&train, &val})
    j["splits"][s->name] = {{"tokens", s->tokens}, {"documents", s->documents}, {"shards", s->shards}};
  io::write_file_atomic((fs::path(o.out_dir) / "index.json").string(), j.dump(2) + "\n");
  r.out_dir = o.out_dir;
  r.train_documents = train.documents;
  r.val_documents = val.documents;
  r.train_tokens = train.tokens;
  r.val_tokens = val.tokens;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// --- reading ----------------------------------------------------------------------------

namespace {

struct Mapping {
  void* p = nullptr;
  size_t n = 0;
  ~Mapping() {
    if (p && n) munmap(p, n);
  }
};

}  // namespace

struct Corpus::State {
  std::string dir;
  int32_t eos_id = 0;
  int64_t vocab_size = 0;
  struct Shard {
    std::shared_ptr<Mapping> map;
    int64_t begin = 0, tokens = 0;  // offset in the split's stream
    const uint32_t* data() const { return static_cast<const uint32_t*>(map->p); }
  };
  std::map<std::string, std::vector<Shard>> splits;
  std::map<std::string, int64_t> tokens;
};

Corpus Corpus::open(const std::string& dir) {
  const fs::path idx = fs::path(dir) / "index.json";
  LT_CHECK(fs::exists(idx), "corpus: {} has no index.json (make one with `ltrun data pack`)", dir);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(idx));
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail("corpus: {}: {}", idx.string(), e.what());
  }
  LT_CHECK(j.value("format", "") == "ltrun-corpus" && j.value("dtype", "") == "uint32",
           "corpus: {} is not an ltrun corpus index (uint32)", idx.string());
  auto s = std::make_shared<State>();
  s->dir = dir;
  s->eos_id = j.at("eos_id").get<int32_t>();
  s->vocab_size = j.at("vocab_size").get<int64_t>();
  for (const char* split : {"train", "val"}) {
    int64_t off = 0;
    auto& v = s->splits[split];
    if (j.contains("splits") && j["splits"].contains(split))
      for (const auto& sh : j["splits"][split]["shards"]) {
        const fs::path p = fs::path(dir) / sh.at("file").get<std::string>();
        const int64_t n = sh.at("tokens").get<int64_t>();
        // O_NONBLOCK: a FIFO in place of a shard must not block the open (refused below)
        const int fd = ::open(p.c_str(), O_RDONLY | O_NONBLOCK);
        LT_CHECK(fd >= 0, "corpus: cannot open shard {}", p.string());
        struct stat stt {};
        if (fstat(fd, &stt) != 0 || !S_ISREG(stt.st_mode)) {
          ::close(fd);
          fail("corpus: shard {} is not a regular file", p.string());
        }
        if (int64_t(stt.st_size) != n * 4) {
          ::close(fd);
          fail("corpus: shard {} has {} bytes, index.json says {} tokens ({} bytes)", p.string(),
               int64_t(stt.st_size), n, n * 4);
        }
        auto m = std::make_shared<Mapping>();
        m->n = size_t(stt.st_size);
        m->p = mmap(nullptr, m->n, PROT_READ, MAP_PRIVATE, fd, 0);
        ::close(fd);
        LT_CHECK(m->p != MAP_FAILED, "corpus: cannot map {}", p.string());
        v.push_back({m, off, n});
        off += n;
      }
    s->tokens[split] = off;
  }
  Corpus c;
  c.s_ = std::move(s);
  return c;
}

int64_t Corpus::tokens(const std::string& split) const {
  auto it = s_->tokens.find(split);
  LT_CHECK(it != s_->tokens.end(), "corpus: unknown split '{}': expected train or val", split);
  return it->second;
}
int32_t Corpus::eos_id() const { return s_->eos_id; }
int64_t Corpus::vocab_size() const { return s_->vocab_size; }
const std::string& Corpus::dir() const { return s_->dir; }

at::Tensor Corpus::slice(const std::string& split, int64_t begin, int64_t n) const {
  const int64_t total = tokens(split);
  LT_CHECK(begin >= 0 && n >= 0 && begin + n <= total,
           "corpus {}: tokens [{}, {}) outside the {} split's {} tokens", s_->dir, begin, begin + n,
           split, total);
  at::Tensor out = at::empty({n}, at::kLong);
  int64_t* dst = out.data_ptr<int64_t>();
  for (const auto& sh : s_->splits.at(split)) {
    const int64_t lo = std::max(begin, sh.begin), hi = std::min(begin + n, sh.begin + sh.tokens);
    for (int64_t i = lo; i < hi; ++i) dst[i - begin] = int64_t(sh.data()[i - sh.begin]);
  }
  return out;
}

Windows::Windows(Corpus c, std::string split, int64_t seq_len, uint64_t seed, bool shuffle)
    : c_(std::move(c)), split_(std::move(split)), seq_len_(seq_len), seed_(seed), shuffle_(shuffle) {
  LT_CHECK(seq_len > 0, "windows: seq_len must be > 0");
  const int64_t t = c_.tokens(split_);
  n_ = t > seq_len ? (t - 1) / seq_len : 0;
  LT_CHECK(n_ > 0, "corpus {}: the {} split has {} tokens, fewer than one window of {} + 1",
           c_.dir(), split_, t, seq_len);
}

at::Tensor Windows::get(int64_t i) const {
  LT_CHECK(i >= 0 && i < n_, "windows: index {} outside 0..{}", i, n_ - 1);
  return c_.slice(split_, i * seq_len_, seq_len_ + 1);
}

int64_t Windows::order(uint64_t k) {
  const int64_t epoch = int64_t(k / uint64_t(n_)), i = int64_t(k % uint64_t(n_));
  if (!shuffle_) return i;
  if (epoch != perm_epoch_) {
    perm_.resize(size_t(n_));
    for (int64_t j = 0; j < n_; ++j) perm_[size_t(j)] = j;
    uint64_t st = seed_ ^ (uint64_t(epoch + 1) * 0xD1B54A32D192ED03ull);
    for (int64_t j = n_ - 1; j > 0; --j)  // Fisher-Yates with our own generator: same everywhere
      std::swap(perm_[size_t(j)], perm_[size_t(splitmix(st) % uint64_t(j + 1))]);
    perm_epoch_ = epoch;
  }
  return perm_[size_t(i)];
}

at::Tensor Windows::next(int64_t batch) {
  LT_CHECK(batch > 0, "windows: batch must be > 0");
  at::Tensor out = at::empty({batch, seq_len_ + 1}, at::kLong);
  for (int64_t b = 0; b < batch; ++b) out[b].copy_(get(order(cursor_++)));
  return out;
}

std::vector<at::Tensor> validation_batches(const Corpus& c, const std::string& split, int64_t seq_len,
                                           int64_t batch, int64_t n_batches) {
  LT_CHECK(batch > 0, "validation batches: batch must be > 0, got {}", batch);
  std::vector<at::Tensor> out;
  if (c.tokens(split) <= seq_len) return out;
  const Windows v(c, split, seq_len, 0, /*shuffle=*/false);
  int64_t i = 0;
  for (int64_t k = 0; k < n_batches && i < v.count(); ++k) {
    const int64_t n = std::min(batch, v.count() - i);
    std::vector<at::Tensor> rows;
    for (int64_t j = 0; j < n; ++j) rows.push_back(v.get(i + j));
    out.push_back(at::stack(rows));
    i += n;
  }
  return out;
}

const Fields<PackOptions>& pack_option_fields() {
  static const Fields<PackOptions> f = {{"tokenizer", &PackOptions::tokenizer},
                                        {"out", &PackOptions::out_dir},
                                        {"field", &PackOptions::field},
                                        {"val", &PackOptions::val_fraction},
                                        {"eos", &PackOptions::eos},
                                        {"max_bytes", &PackOptions::max_bytes},
                                        {"shard_tokens", &PackOptions::shard_tokens},
                                        {"progress", &PackOptions::progress}};
  return f;
}

const Fields<PackResult>& pack_result_fields() {
  static const Fields<PackResult> f = {{"dir", &PackResult::out_dir},
                                       {"documents", &PackResult::documents},
                                       {"train_documents", &PackResult::train_documents},
                                       {"val_documents", &PackResult::val_documents},
                                       {"train_tokens", &PackResult::train_tokens},
                                       {"val_tokens", &PackResult::val_tokens},
                                       {"bytes", &PackResult::bytes},
                                       {"eos_id", &PackResult::eos_id},
                                       {"seconds", &PackResult::seconds}};
  return f;
}

}  // namespace ltrun::data
