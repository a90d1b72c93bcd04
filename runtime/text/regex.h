// runtime/text/regex.h: the pre-tokenizer's split regex, PCRE2 with UTF and Unicode
// properties, JIT-compiled (internal to text/).
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ltrun::text {

struct Range {
  size_t begin, end;
};

class Regex {
 public:
  // `where` names the pattern's origin (file and JSON path) in error messages.
  Regex(const std::string& pattern, const std::string& where);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Hugging Face's "Isolated" split: every match and every gap between matches becomes
  // its own piece. Appends the pieces of subject (valid UTF-8) as ranges shifted by base.
  void split_isolated(std::string_view subject, size_t base, std::vector<Range>& out) const;

 private:
  struct Code;
  std::unique_ptr<Code> code_;
  std::string where_;
};

}  // namespace ltrun::text
