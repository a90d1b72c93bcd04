// tests/store/store_test_util.h: helpers shared by the store's tests.
#pragma once
#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

namespace ltrun::test {

// An independent reader: a plain read-only sqlite3 connection (never the Store under test,
// never an input of a merge): the first column of the first row of `sql`, -1 without a row.
inline int64_t count(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK);
  int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

}  // namespace ltrun::test
