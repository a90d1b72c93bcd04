// tests/eval/csv_test.cpp: the RFC 4180 reader on text in memory: quoting, doubled quotes,
// separators and line breaks inside quotes, CRLF, BOM, and errors that name file:line.
#include <catch2/catch.hpp>

#include "runtime/core/error.h"
#include "runtime/eval/csv.h"

using ltrun::eval::parse_csv;
using Fields = std::vector<std::string>;

TEST_CASE("csv: plain, quoted and doubled-quote fields") {
  const auto r = parse_csv("a,b,c\n\"x,y\",\"he said \"\"hi\"\"\",\"\"\n", "mem.csv");
  REQUIRE(r.size() == 2);
  CHECK(r[0].fields == Fields{"a", "b", "c"});
  CHECK(r[1].fields == Fields{"x,y", "he said \"hi\"", ""});
  CHECK(r[0].line == 1);
  CHECK(r[1].line == 2);
}

TEST_CASE("csv: CRLF, BOM, line breaks inside quotes keep the line count") {
  const std::string text =
      "\xEF\xBB\xBFid,question\r\n"
      "1,\"two\r\nlines\"\r\n"
      "2,\"three\nlines\r\nhere\"\r\n"
      "3,last\r\n";
  const auto r = parse_csv(text, "mem.csv");
  REQUIRE(r.size() == 4);
  CHECK(r[0].fields == Fields{"id", "question"});  // the BOM is not part of "id"
  CHECK(r[1].fields == Fields{"1", "two\nlines"});  // CRLF inside quotes becomes "\n"
  CHECK(r[2].fields == Fields{"2", "three\nlines\nhere"});
  CHECK(r[3].fields == Fields{"3", "last"});
  CHECK(r[1].line == 2);
  CHECK(r[2].line == 4);
  CHECK(r[3].line == 7);
}

TEST_CASE("csv: blank lines, empty trailing field, no final newline, UTF-8") {
  const auto r = parse_csv("a,\n\n\n中文,\"引号，逗号\"", "mem.csv");
  REQUIRE(r.size() == 2);
  CHECK(r[0].fields == Fields{"a", ""});
  CHECK(r[1].fields == Fields{"中文", "引号，逗号"});
  CHECK(r[1].line == 4);
  // a quote inside an unquoted field is data (as pandas reads it)
  CHECK(parse_csv("ab\"c,d\n", "m")[0].fields == Fields{"ab\"c", "d"});
  // a lone CR is data, not a line end
  CHECK(parse_csv("a\rb,c\n", "m")[0].fields == Fields{"a\rb", "c"});
}

TEST_CASE("csv: errors name file and line") {
  CHECK_THROWS_WITH(parse_csv("h1,h2\nok,ok\nx,\"never\nclosed,y\n", "f.csv"),
                    Catch::Contains("f.csv:3: unterminated quoted field"));
  CHECK_THROWS_WITH(parse_csv("h1,h2\n\n\"ab\"c,d\n", "f.csv"),
                    Catch::Contains("f.csv:3: unexpected text after the closing quote of field 1"));
  CHECK_THROWS_AS(ltrun::eval::read_csv("/nonexistent/x.csv"), ltrun::Error);
}
