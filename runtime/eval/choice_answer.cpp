// runtime/eval/choice_answer.cpp: reading the chosen option letter from generated text.
#include "runtime/eval/choice_answer.h"

#include <algorithm>
#include <vector>

namespace ltrun::eval {
namespace {

bool ascii_alnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// Full-width Ａ-Ｚ, '：', '（', '）' (U+FF21.., U+FF1A, U+FF08, U+FF09) -> ASCII; other bytes kept.
std::string to_ascii_forms(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto b0 = static_cast<unsigned char>(text[i]);
    if (b0 == 0xEF && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0xBC) {
      const auto b2 = static_cast<unsigned char>(text[i + 2]);
      char ascii = 0;
      if (b2 >= 0xA1 && b2 <= 0xBA) ascii = static_cast<char>('A' + (b2 - 0xA1));
      if (b2 == 0x9A) ascii = ':';
      if (b2 == 0x88) ascii = '(';
      if (b2 == 0x89) ascii = ')';
      if (ascii) {
        out += ascii;
        i += 2;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

// The first lone option letter in t[from, to), or 0.
char first_lone_letter(std::string_view t, size_t from, size_t to, int num_choices) {
  to = std::min(to, t.size());
  for (size_t p = from; p < to; ++p) {
    const char c = t[p];
    if (c < 'A' || c >= 'A' + num_choices) continue;
    const bool alone_before = p == 0 || !ascii_alnum(t[p - 1]);
    const bool alone_after = p + 1 == t.size() || !ascii_alnum(t[p + 1]);
    if (alone_before && alone_after) return c;
  }
  return 0;
}

}  // namespace

std::string extract_choice(std::string_view text, int num_choices) {
  num_choices = std::clamp(num_choices, 1, 26);
  const std::string t = to_ascii_forms(text);
  std::string lower = t;
  for (char& c : lower)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');

  // marker ends, in text order
  std::vector<size_t> after_marker;
  for (std::string_view m : {std::string_view("answer"), std::string_view("答案")})
    for (size_t p = lower.find(m); p != std::string::npos; p = lower.find(m, p + 1))
      after_marker.push_back(p + m.size());
  std::sort(after_marker.begin(), after_marker.end());
  constexpr size_t kWindow = 24;  // "是：", " is (", "应该是选项" fit; a long sentence does not
  for (size_t from : after_marker)
    if (char c = first_lone_letter(t, from, from + kWindow, num_choices)) return std::string(1, c);

  if (char c = first_lone_letter(t, 0, t.size(), num_choices)) return std::string(1, c);
  return {};
}

bool contains_option(std::string_view output, std::string_view answer_letter, std::string_view answer_text) {
  const std::string t = to_ascii_forms(output);
  if (answer_letter.size() == 1 && answer_letter[0] >= 'A' && answer_letter[0] <= 'Z') {
    const char l = answer_letter[0];
    for (size_t p = t.find(l); p != std::string::npos; p = t.find(l, p + 1)) {
      const bool alone_before = p == 0 || !ascii_alnum(t[p - 1]);
      const bool alone_after = p + 1 == t.size() || !ascii_alnum(t[p + 1]);
      if (alone_before && alone_after) return true;
    }
  }
  auto lower = [](std::string_view s) {
    std::string out(s);
    for (char& c : out)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
  };
  size_t a = 0, b = answer_text.size();
  while (a < b && (answer_text[a] == ' ' || answer_text[a] == '\t' || answer_text[a] == '\n')) ++a;
  while (b > a && (answer_text[b - 1] == ' ' || answer_text[b - 1] == '\t' || answer_text[b - 1] == '\n')) --b;
  if (a == b) return false;
  return lower(t).find(lower(to_ascii_forms(answer_text.substr(a, b - a)))) != std::string::npos;
}

}  // namespace ltrun::eval
