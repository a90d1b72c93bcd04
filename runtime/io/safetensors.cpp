// runtime/io/safetensors.cpp: the safetensors reader (mmap + validation that follows the
// reference `safetensors` crate) and the atomic writer.
#include "runtime/io/safetensors.h"

#include <ATen/ATen.h>
#include <fcntl.h>
#include <fmt/ranges.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "runtime/core/error.h"
#include "runtime/io/atomic_file.h"

namespace ltrun::io {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian and is viewed in place");

using json = nlohmann::json;

// The reference rejects larger headers (MAX_HEADER_SIZE): a corrupt length must not make
// us parse a gigabyte of tensor bytes as JSON.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// serde_json's default recursion limit, so the reference rejects deeper headers too; it
// also keeps the recursive dump() of error messages away from deeply nested input.
constexpr int kMaxJsonDepth = 128;

struct Dtype {
  const char* name;
  unsigned bits;
  at::ScalarType torch;  // kNone: the format knows it, this LibTorch does not
};
constexpr at::ScalarType kNone = at::ScalarType::Undefined;

// Every dtype of the format, in the reference's order of increasing alignment: the writer
// sorts by descending position here, as the reference does, so each tensor's offset is a
// multiple of its element size.
constexpr Dtype kDtypes[] = {
    {"BOOL", 8, at::kBool},       {"F4", 4, kNone},          {"F6_E2M3", 6, kNone},
    {"F6_E3M2", 6, kNone},        {"U8", 8, at::kByte},      {"I8", 8, at::kChar},
    {"F8_E5M2", 8, kNone},        {"F8_E4M3", 8, kNone},     {"F8_E8M0", 8, kNone},
    {"F8_E4M3FNUZ", 8, kNone},    {"F8_E5M2FNUZ", 8, kNone}, {"I16", 16, at::kShort},
    {"U16", 16, kNone},           {"F16", 16, at::kHalf},    {"BF16", 16, at::kBFloat16},
    {"I32", 32, at::kInt},        {"U32", 32, kNone},        {"F32", 32, at::kFloat},
    {"C64", 64, at::kComplexFloat}, {"F64", 64, at::kDouble}, {"I64", 64, at::kLong},
    {"U64", 64, kNone},
};

const Dtype* find_dtype(const std::string& name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return &d;
  return nullptr;
}

const Dtype* find_dtype(at::ScalarType t) {
  for (const auto& d : kDtypes)
    if (d.torch == t) return &d;
  return nullptr;
}

// A JSON value short enough to quote in an error message.
std::string brief(const json& j) {
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() <= 80 ? s : s.substr(0, 77) + "...";
}

uint64_t read_le64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// The whole file mapped read/write but private (copy-on-write): tensors may be modified in
// place without touching the file, and without an extra copy until they are.
struct Mapping {
  uint8_t* data = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (data) ::munmap(data, size);
  }
};

}  // namespace

struct SafetensorsFile::State {
  std::string path;
  std::shared_ptr<Mapping> map;
  uint64_t data_start = 0;  // 8 + header length
  std::vector<TensorInfo> tensors;
  std::unordered_map<std::string, size_t> index;
  std::map<std::string, std::string> metadata;
};

namespace {

std::shared_ptr<Mapping> map_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below as not regular
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  LT_CHECK(fd >= 0, "cannot open safetensors file {}: {}", path, std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("cannot open safetensors file {}: not a regular file", path);
  }
  auto map = std::make_shared<Mapping>();
  map->size = static_cast<size_t>(st.st_size);
  if (map->size >= 8) {  // shorter files are rejected by the caller; mmap refuses size 0
    void* p = ::mmap(nullptr, map->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    int err = errno;
    ::close(fd);
    LT_CHECK(p != MAP_FAILED, "cannot map safetensors file {}: {}", path, std::strerror(err));
    map->data = static_cast<uint8_t*>(p);
  } else {
    ::close(fd);
  }
  return map;
}

TensorInfo parse_entry(const std::string& path, const std::string& name, const json& e) {
  LT_CHECK(e.is_object(), "{}: tensor \"{}\": header entry must be an object, found {}", path,
           name, brief(e));
  auto field = [&](const char* key) -> const json& {
    auto it = e.find(key);
    LT_CHECK(it != e.end(), "{}: tensor \"{}\": header entry lacks \"{}\"", path, name, key);
    return *it;
  };
  TensorInfo t;
  t.name = name;
  const json& dtype = field("dtype");
  LT_CHECK(dtype.is_string(), "{}: tensor \"{}\": dtype must be a string, found {}", path, name,
           brief(dtype));
  t.dtype = dtype.get<std::string>();
  LT_CHECK(find_dtype(t.dtype), "{}: tensor \"{}\": unknown dtype \"{}\"", path, name, t.dtype);

  const json& shape = field("shape");
  bool shape_ok = shape.is_array();
  for (size_t i = 0; shape_ok && i < shape.size(); ++i) {
    shape_ok = shape[i].is_number_unsigned() &&
               shape[i].get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX);
    if (shape_ok) t.shape.push_back(shape[i].get<int64_t>());
  }
  LT_CHECK(shape_ok, "{}: tensor \"{}\": shape must be an array of non-negative integers, found {}",
           path, name, brief(shape));

  const json& off = field("data_offsets");
  LT_CHECK(off.is_array() && off.size() == 2 && off[0].is_number_unsigned() &&
               off[1].is_number_unsigned(),
           "{}: tensor \"{}\": data_offsets must be [begin, end] (non-negative integers), found {}",
           path, name, brief(off));
  t.begin = off[0].get<uint64_t>();
  t.end = off[1].get<uint64_t>();
  return t;
}

// Byte size implied by dtype and shape, multiplied in the reference's order so that the
// same shapes overflow (e.g. [2^40, 2^40, 0] is rejected although it has no elements).
uint64_t expected_bytes(const std::string& path, const TensorInfo& t) {
  const Dtype& dt = *find_dtype(t.dtype);
  uint64_t n = 1, bits = 0;
  for (int64_t d : t.shape)
    LT_CHECK(!__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n),
             "{}: tensor \"{}\": element count of shape {} overflows 64 bits", path, t.name,
             t.shape);
  LT_CHECK(!__builtin_mul_overflow(n, uint64_t{dt.bits}, &bits),
           "{}: tensor \"{}\": byte size of {} {} overflows 64 bits", path, t.name, t.dtype,
           t.shape);
  LT_CHECK(bits % 8 == 0, "{}: tensor \"{}\": {} elements of {} ({} bits each) are not a whole "
           "number of bytes", path, t.name, n, t.dtype, dt.bits);
  return bits / 8;
}

}  // namespace

SafetensorsFile::SafetensorsFile(std::shared_ptr<const State> state) : s_(std::move(state)) {}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  auto s = std::make_shared<State>();
  s->path = path;
  s->map = map_file(path);
  const uint64_t size = s->map->size;
  LT_CHECK(size >= 8, "{}: file is {} bytes, too short for the 8-byte header length of a "
           "safetensors file", path, size);
  const uint64_t n = read_le64(s->map->data);
  LT_CHECK(n <= kMaxHeaderBytes, "{}: header length {} exceeds the limit of {} bytes (not a "
           "safetensors file?)", path, n, kMaxHeaderBytes);
  LT_CHECK(n <= size - 8, "{}: header length {} runs past the end of the {}-byte file "
           "(truncated?)", path, n, size);
  s->data_start = 8 + n;

  json header;
  try {
    header = json::parse(s->map->data + 8, s->map->data + 8 + n,
                         [&](int depth, json::parse_event_t event, json&) {
                           bool opens = event == json::parse_event_t::object_start ||
                                        event == json::parse_event_t::array_start;
                           LT_CHECK(!opens || depth < kMaxJsonDepth, "{}: header JSON nests "
                                    "deeper than {} levels", path, kMaxJsonDepth);
                           return true;
                         });
  } catch (const json::exception& e) {  // parse_error, or out_of_range for 1e999
    fail("{}: header is not valid JSON: {}", path, e.what());
  }
  LT_CHECK(header.is_object(), "{}: header must be a JSON object, found {}", path,
           header.type_name());

  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      LT_CHECK(value.is_object(), "{}: __metadata__ must be an object of strings, found {}", path,
               brief(value));
      for (const auto& [k, v] : value.items()) {
        LT_CHECK(v.is_string(), "{}: __metadata__ \"{}\" must be a string, found {}", path, k,
                 brief(v));
        s->metadata.emplace(k, v.get<std::string>());
      }
      continue;
    }
    s->tensors.push_back(parse_entry(path, key, value));
  }

  // As the reference does: in offset order the tensors must tile the data buffer exactly.
  // Gaps or overlaps would let a crafted file alias one tensor's bytes as another's, and
  // trailing bytes would let it smuggle another payload (polyglot files).
  std::sort(s->tensors.begin(), s->tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  uint64_t covered = 0;
  for (const auto& t : s->tensors) {
    LT_CHECK(t.end >= t.begin, "{}: tensor \"{}\": data_offsets [{}, {}] end before they begin",
             path, t.name, t.begin, t.end);
    LT_CHECK(t.begin == covered, "{}: tensor \"{}\": data_offsets [{}, {}] must start at {}, "
             "where the previous tensor ends (tensors must tile the data buffer without gaps "
             "or overlaps)", path, t.name, t.begin, t.end, covered);
    uint64_t want = expected_bytes(path, t);
    LT_CHECK(t.end - t.begin == want, "{}: tensor \"{}\": {} {} takes {} bytes but data_offsets "
             "[{}, {}] span {}", path, t.name, t.dtype, t.shape, want, t.begin, t.end,
             t.end - t.begin);
    covered = t.end;
  }
  LT_CHECK(covered == size - s->data_start, "{}: tensors cover {} bytes but the data buffer "
           "after the header holds {} (truncated file or trailing bytes)", path, covered,
           size - s->data_start);

  for (size_t i = 0; i < s->tensors.size(); ++i) s->index.emplace(s->tensors[i].name, i);
  return SafetensorsFile(std::move(s));
}

const std::string& SafetensorsFile::path() const { return s_->path; }
const std::vector<TensorInfo>& SafetensorsFile::tensors() const { return s_->tensors; }
const std::map<std::string, std::string>& SafetensorsFile::metadata() const {
  return s_->metadata;
}
bool SafetensorsFile::has(const std::string& name) const { return s_->index.count(name) > 0; }

const TensorInfo& SafetensorsFile::info(const std::string& name) const {
  auto it = s_->index.find(name);
  LT_CHECK(it != s_->index.end(), "{}: no tensor named \"{}\" (the file has {} tensors)",
           s_->path, name, s_->tensors.size());
  return s_->tensors[it->second];
}

at::Tensor SafetensorsFile::tensor(const std::string& name) const {
  const TensorInfo& t = info(name);
  const Dtype& dt = *find_dtype(t.dtype);
  LT_CHECK(dt.torch != kNone,
           "{}: tensor \"{}\" has dtype {}, which this LibTorch cannot represent", s_->path,
           name, t.dtype);
  auto options = at::TensorOptions().dtype(dt.torch).device(at::kCPU);
  uint8_t* p = s_->map->data + s_->data_start + t.begin;
  if (reinterpret_cast<uintptr_t>(p) % (dt.bits / 8) != 0) {
    at::Tensor copy = at::empty(t.shape, options);
    if (t.nbytes() > 0) std::memcpy(copy.data_ptr(), p, t.nbytes());  // empty: data_ptr null
    return copy;
  }
  // The deleter owns a reference to the mapping: the file stays mapped while any tensor
  // viewing it is alive, even after every SafetensorsFile is gone.
  return at::from_blob(p, t.shape, [map = s_->map](void*) {}, options);
}

void save_safetensors(const std::string& path,
                      const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  struct Item {
    const std::string* name;
    const at::Tensor* tensor;
    const Dtype* dtype;
    int rank;
  };
  std::vector<Item> items;
  std::unordered_set<std::string> seen;
  for (const auto& [name, t] : tensors) {
    LT_CHECK(t.defined(), "{}: tensor \"{}\" is undefined", path, name);
    LT_CHECK(name != "__metadata__", "{}: \"__metadata__\" is reserved, not a tensor name", path);
    LT_CHECK(seen.insert(name).second, "{}: tensor name \"{}\" given twice", path, name);
    LT_CHECK(t.layout() == at::kStrided, "{}: tensor \"{}\" is not dense (sparse or other "
             "layout); safetensors stores dense tensors only", path, name);
    const Dtype* dt = find_dtype(t.scalar_type());
    LT_CHECK(dt, "{}: tensor \"{}\" has dtype {}, which safetensors cannot store", path, name,
             c10::toString(t.scalar_type()));
    items.push_back({&name, &t, dt, static_cast<int>(dt - kDtypes)});
  }
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return a.rank != b.rank ? a.rank > b.rank : *a.name < *b.name;
  });

  std::string header;
  try {
    // ordered_json keeps the reference's key order: __metadata__, then tensors by offset.
    nlohmann::ordered_json h = nlohmann::ordered_json::object();
    if (!metadata.empty()) h["__metadata__"] = metadata;
    uint64_t offset = 0;
    for (const auto& it : items) {
      uint64_t n = it.tensor->nbytes();
      h[*it.name] = {{"dtype", it.dtype->name},
                     {"shape", it.tensor->sizes().vec()},
                     {"data_offsets", {offset, offset + n}}};
      offset += n;
    }
    header = h.dump();
  } catch (const nlohmann::json::exception& e) {
    fail("{}: cannot encode the header (names and metadata must be UTF-8): {}", path, e.what());
  }
  // The data buffer then starts 8-aligned in the file, hence in the (page-aligned) mapping.
  header.resize((header.size() + 7) / 8 * 8, ' ');
  LT_CHECK(header.size() <= kMaxHeaderBytes, "{}: header of {} bytes exceeds the limit of {}",
           path, header.size(), kMaxHeaderBytes);

  AtomicFile out(path);
  uint64_t n = header.size();
  out.write(&n, 8);
  out.write(header.data(), header.size());
  for (const auto& it : items) {
    // One tensor at a time on the CPU keeps the peak memory of saving a GPU model small.
    at::Tensor c;
    try {
      c = it.tensor->to(at::kCPU).resolve_conj().resolve_neg().contiguous();
    } catch (const c10::Error& e) {  // e.g. a meta tensor, which has no data
      fail("{}: tensor \"{}\": cannot copy to the CPU: {}", path, *it.name,
           e.what_without_backtrace());
    }
    out.write(c.data_ptr(), c.nbytes());
  }
  out.commit();
}

}  // namespace ltrun::io
