// runtime/eval/csv.h: CSV per RFC 4180, as the benchmark files are written (C-Eval, CMMLU,
// MMLU): quoted fields, doubled quotes, commas and line breaks inside quotes, CRLF or LF,
// an optional UTF-8 byte-order mark. Each record keeps the line it starts on, for errors.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace ltrun::eval {

struct CsvRecord {
  std::vector<std::string> fields;
  int line = 0;  // 1-based line of the file on which the record starts
};

// Reads and parses a whole file. Blank lines are skipped (as pandas does). A line break
// inside a quoted field is kept as "\n" whatever the file uses. A quote inside an unquoted
// field is taken literally (pandas does the same). Errors name file:line: an unterminated
// quoted field (the line where it opens), text after a closing quote.
std::vector<CsvRecord> read_csv(const std::string& path);

// The same on text already in memory; `name` is what errors call it.
std::vector<CsvRecord> parse_csv(std::string_view text, const std::string& name);

// Whole file as bytes; errors name the file. (Shared by the CSV and JSONL readers.)
std::string read_text_file(const std::string& path);

}  // namespace ltrun::eval
