// tests/io/json_file_test.cpp: JSON files read with errors naming file, position and key.
#include "runtime/io/json_file.h"
#include "tests/io/io_test_util.h"

using namespace ltrun::io;
using namespace io_test;

TEST_CASE("read_json_file and json_require", "[io][json]") {
  std::string dir = scratch("json");
  std::string good = dir + "/config.json";
  write_bytes(good, R"({"hidden_size": 64, "model_type": "qwen3", "rope": {"theta": 1e6}})");
  auto j = read_json_file(good);
  CHECK(json_require<int>(j, "hidden_size", good) == 64);
  CHECK(json_require<std::string>(j, "model_type", good) == "qwen3");
  CHECK(json_require<double>(json_require(j, "rope", good), "theta", good) == 1e6);

  require_error([&] { json_require(j, "num_layers", good); },
                {good, "missing required key \"num_layers\""});
  require_error([&] { json_require<int>(j, "model_type", good); },
                {good, "key \"model_type\" has the wrong type (string)", "must be number"});
  require_error([&] { json_require(j["hidden_size"], "x", good); },
                {good, "expected a JSON object holding \"x\", found number"});

  std::string missing = dir + "/missing.json";
  require_error([&] { read_json_file(missing); },
                {"cannot read", missing, "No such file"});
  std::string bad = dir + "/bad.json";
  write_bytes(bad, "{\n  \"a\": 1,\n  \"b\": ]\n}\n");
  require_error([&] { read_json_file(bad); }, {bad, "invalid JSON", "line 3, column 8"});
}
