// runtime/text/regex.cpp: PCRE2 compile (with JIT) and the isolated split.
#include "runtime/text/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "runtime/core/error.h"

namespace ltrun::text {

namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof buf);
  return reinterpret_cast<const char*>(buf);
}

// Match data holds the result of one match, so each thread needs its own.
struct ThreadMatchData {
  pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
  ~ThreadMatchData() { pcre2_match_data_free(md); }
};

}  // namespace

struct Regex::Code {
  pcre2_code* re = nullptr;
  ~Code() { pcre2_code_free(re); }
};

Regex::Regex(const std::string& pattern, const std::string& where)
    : code_(std::make_unique<Code>()), where_(where) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  code_->re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                            PCRE2_UTF | PCRE2_UCP, &err, &offset, nullptr);
  if (!code_->re)
    fail("{}: cannot compile regex at offset {}: {} (pattern: {})", where, offset,
         pcre2_message(err), pattern);
  // JIT makes matching several times faster; without it PCRE2 interprets (same results).
  pcre2_jit_compile(code_->re, PCRE2_JIT_COMPLETE);
}

Regex::~Regex() = default;

void Regex::split_isolated(std::string_view subject, size_t base, std::vector<Range>& out) const {
  thread_local ThreadMatchData data;
  const auto* s = reinterpret_cast<PCRE2_SPTR>(subject.data());
  const size_t n = subject.size();
  size_t pos = 0, gap = 0;
  while (pos < n) {
    // the text was validated once; without NO_UTF_CHECK PCRE2 rescans the whole subject
    // on every call, which is quadratic in the length of the text
    const int rc = pcre2_match(code_->re, s, n, pos, PCRE2_NO_UTF_CHECK, data.md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) fail("{}: regex match failed: {}", where_, pcre2_message(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data.md);
    const size_t b = ov[0], e = ov[1];
    if (e == b) {  // an empty match splits nothing: go on after the next character
      pos = b + 1;
      while (pos < n && (static_cast<uint8_t>(subject[pos]) & 0xC0) == 0x80) ++pos;
      continue;
    }
    if (b > gap) out.push_back({base + gap, base + b});
    out.push_back({base + b, base + e});
    gap = pos = e;
  }
  if (gap < n) out.push_back({base + gap, base + n});
}

}  // namespace ltrun::text
