// runtime/cli/table.cpp: query results as aligned text (numbers right-aligned), CSV (RFC 4180)
// or JSON (an array of objects).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/cli/cli.h"

namespace ltrun::cli {
namespace {

constexpr size_t kMaxCell = 80;  // aligned output shortens longer cells

size_t display_width(const std::string& s) {  // UTF-8 code points; good enough for CJK-free columns
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string cell_text(const store::Value& v) {
  if (std::holds_alternative<double>(v)) return fmt::format("{:.6g}", std::get<double>(v));
  std::string out = escape_controls(store::to_text(v), false);
  if (display_width(out) > kMaxCell) {
    size_t cut = 0, cps = 0;
    while (cut < out.size() && cps < kMaxCell - 1) {
      cut++;
      while (cut < out.size() && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) cut++;
      cps++;
    }
    out = out.substr(0, cut) + "…";
  }
  return out;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// the length of the UTF-8 sequence at s[i] (1..4), or 0 when it is not valid UTF-8
size_t utf8_length(const std::string& s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; k++)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  return n;
}

}  // namespace

std::string escape_controls(const std::string& s, bool keep_newlines) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      if (keep_newlines && (c == '\n' || c == '\t')) out += char(c);
      else if (c == '\n') out += "\\n";
      else if (c == '\t') out += "\\t";
      else if (c == '\r') out += "\\r";
      else out += fmt::format("\\x{:02x}", c);
      i++;
    } else if (c < 0x80) {
      out += char(c);
      i++;
    } else if (size_t n = utf8_length(s, i)) {
      const auto c2 = static_cast<unsigned char>(s[i + 1]);
      if (c == 0xC2 && c2 < 0xA0) out += fmt::format("\\u{:04x}", c2);  // C1: U+0080..U+009F
      else out.append(s, i, n);
      i += n;
    } else {
      out += fmt::format("\\x{:02x}", c);
      i++;
    }
  }
  return out;
}

std::string format_table(const store::Table& t, TableFormat f, size_t max_width) {
  std::string out;
  if (f == TableFormat::csv) {
    for (size_t c = 0; c < t.columns.size(); c++) out += (c ? "," : "") + csv_field(t.columns[c]);
    out += "\n";
    for (const auto& row : t.rows) {
      for (size_t c = 0; c < row.size(); c++) out += (c ? "," : "") + csv_field(store::to_text(row[c]));
      out += "\n";
    }
    return out;
  }
  if (f == TableFormat::json) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& row : t.rows) {
      nlohmann::json o = nlohmann::json::object();
      for (size_t c = 0; c < row.size(); c++) {
        const auto& v = row[c];
        if (std::holds_alternative<int64_t>(v)) o[t.columns[c]] = std::get<int64_t>(v);
        else if (std::holds_alternative<double>(v)) o[t.columns[c]] = std::get<double>(v);
        else if (std::holds_alternative<std::string>(v)) o[t.columns[c]] = std::get<std::string>(v);
        else o[t.columns[c]] = nullptr;
      }
      a.push_back(std::move(o));
    }
    return a.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  std::vector<std::vector<std::string>> cells;
  std::vector<size_t> width(t.columns.size());
  std::vector<bool> numeric(t.columns.size(), true);
  for (size_t c = 0; c < t.columns.size(); c++) width[c] = display_width(t.columns[c]);
  for (const auto& row : t.rows) {
    std::vector<std::string> r;
    for (size_t c = 0; c < row.size(); c++) {
      r.push_back(cell_text(row[c]));
      width[c] = std::max(width[c], display_width(r.back()));
      if (std::holds_alternative<std::string>(row[c])) numeric[c] = false;
    }
    cells.push_back(std::move(r));
  }
  // the leading columns that fit in max_width (two spaces between columns), at least one
  size_t shown = t.columns.size();
  if (max_width > 0) {
    size_t used = 0;
    for (size_t c = 0; c < t.columns.size(); c++) {
      used += (c ? 2 : 0) + width[c];
      if (used > max_width && c > 0) {
        shown = c;
        break;
      }
    }
  }
  auto line = [&](const std::vector<std::string>& r, bool header) {
    std::string s;
    for (size_t c = 0; c < std::min(r.size(), shown); c++) {
      const std::string pad(width[c] - display_width(r[c]), ' ');
      s += (c ? "  " : "") + ((numeric[c] && !header) ? pad + r[c] : r[c] + pad);
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  out += line(t.columns, true);
  std::string rule;
  for (size_t c = 0; c < shown; c++) rule += (c ? "  " : "") + std::string(width[c], '-');
  out += rule + "\n";
  for (const auto& r : cells) out += line(r, false);
  out += fmt::format("({} row{})\n", t.rows.size(), t.rows.size() == 1 ? "" : "s");
  if (shown < t.columns.size()) {  // the columns left out, named, the lines within max_width too
    std::string text = fmt::format("({} more column{} past {} characters:", t.columns.size() - shown,
                                   t.columns.size() - shown == 1 ? "" : "s", max_width);
    std::string line_now = text;
    text.clear();
    for (size_t c = shown; c <= t.columns.size(); c++) {
      const std::string word = c < t.columns.size() ? " " + t.columns[c] + (c + 1 < t.columns.size() ? "," : ";")
                                                    : std::string(" --wide or --csv shows them)");
      if (display_width(line_now) + display_width(word) > max_width && display_width(line_now) > 0) {
        text += line_now + "\n";
        line_now = word.substr(1);
      } else {
        line_now += word;
      }
    }
    out += text + line_now + "\n";
  }
  return out;
}

}  // namespace ltrun::cli
