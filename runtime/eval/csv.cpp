// runtime/eval/csv.cpp: the RFC 4180 reader (a small state machine over the bytes; UTF-8
// passes through untouched since every byte it looks at is ASCII).
#include "runtime/eval/csv.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "runtime/core/env.h"
#include "runtime/core/inputs.h"
#include "runtime/core/error.h"

namespace ltrun::eval {

std::string read_text_file(const std::string& path) {
  std::string text = read_file(path);  // regular files only, bounded (runtime/core/env.h)
  note_input("data", path);             // recorded with the run (runtime/core/inputs.h)
  return text;
}

std::vector<CsvRecord> parse_csv(std::string_view text, const std::string& name) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  std::vector<CsvRecord> records;
  const size_t n = text.size();
  size_t pos = 0;
  int line = 1;
  // true at a line end: "\n", or "\r\n" (a lone "\r" is data)
  auto line_end = [&](size_t p) {
    return text[p] == '\n' || (text[p] == '\r' && p + 1 < n && text[p + 1] == '\n');
  };
  auto skip_line_end = [&] {
    pos += text[pos] == '\r' ? 2 : 1;
    ++line;
  };

  while (pos < n) {
    CsvRecord rec;
    rec.line = line;
    for (;;) {  // one field per iteration
      std::string field;
      if (pos < n && text[pos] == '"') {
        const int open_line = line;
        ++pos;
        for (;;) {
          LT_CHECK(pos < n, "{}:{}: unterminated quoted field (the quote opens on this line)",
                   name, open_line);
          const char c = text[pos];
          if (c == '"') {
            if (pos + 1 < n && text[pos + 1] == '"') {
              field += '"';
              pos += 2;
              continue;
            }
            ++pos;
            break;
          }
          if (line_end(pos)) {
            field += '\n';
            skip_line_end();
            continue;
          }
          field += c;
          ++pos;
        }
        LT_CHECK(pos >= n || text[pos] == ',' || line_end(pos),
                 "{}:{}: unexpected text after the closing quote of field {}", name, line,
                 rec.fields.size() + 1);
      } else {
        while (pos < n && text[pos] != ',' && !line_end(pos)) field += text[pos++];
      }
      rec.fields.push_back(std::move(field));
      if (pos < n && text[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < n) skip_line_end();
      break;
    }
    const bool blank = rec.fields.size() == 1 && rec.fields[0].empty();
    if (!blank) records.push_back(std::move(rec));
  }
  return records;
}

std::vector<CsvRecord> read_csv(const std::string& path) {
  return parse_csv(read_text_file(path), path);
}

}  // namespace ltrun::eval
