// log.jsonl read back (train/log_records.hpp): the one reader every consumer uses.
#include <catch2/catch.hpp>

#include "tinygpt/train/log_records.hpp"

using namespace tinygpt::train;

namespace {

const char* const kLog =
    "{\"step\":1,\"loss\":3.5,\"lr\":0.01}\n"
    "not json\n"
    "[1,2]\n"
    "{\"loss\":9.0}\n"
    "{\"step\":2,\"loss\":3.25}\n"
    "{\"step\":2,\"train_loss\":3.0,\"val_loss\":null}\n"
    "{\"step\":4,\"loss\":2.5}\n"
    "{\"step\":4,\"train_loss\":2.75,\"val_loss\":2.875,\"heads\":[{\"layer\":0}],\"in_context\":{}}\n"
    "{\"step\":5,\"lo";  // cut short by a crash

}  // namespace

TEST_CASE("log records: objects with a step, in order, each with its line as written",
          "[train][log]") {
  const LogRecords log = LogRecords::parse(kLog);
  REQUIRE(log.records().size() == 5);
  CHECK(log.lines()[0] == "{\"step\":1,\"loss\":3.5,\"lr\":0.01}");
  CHECK(log.lines()[4].find("\"heads\"") != std::string::npos);
  const auto losses = log.step_losses();
  REQUIRE(losses.size() == 3);
  CHECK(losses[1].step == 2.0);
  CHECK(losses[1].value == 3.25);
  REQUIRE(log.eval_train_losses().size() == 2);
  const auto val = log.val_losses();  // the null one is no point
  REQUIRE(val.size() == 1);
  CHECK(val[0].step == 4.0);
  CHECK(val[0].value == 2.875);
  REQUIRE(log.head_records().size() == 1);
  CHECK(log.head_records()[0]["step"] == 4);
}

TEST_CASE("log records: a field of another type or a head index out of range is refused by line and field",
          "[train][log]") {
  const std::pair<const char*, const char*> cases[] = {
      {"{\"step\":1,\"loss\":\"x\"}", "log line 1: field 'loss' is string, not a number"},
      {"{\"step\":1,\"heads\":[{\"layer\":\"x\"}]}", "field 'heads[0].layer' is string, not an integer in [0, 65535]"},
      {"{\"step\":1,\"heads\":[{\"head\":65536}]}", "field 'heads[0].head' is number, not an integer in [0, 65535]"},
      {"{\"step\":1,\"cross_attention\":[{\"layer\":-1}]}", "field 'cross_attention[0].layer'"},
      {"{\"step\":1,\"in_context\":{\"ratio\":[]}}", "field 'in_context.ratio' is array, not a number"},
  };
  for (const auto& [line, message] : cases) {
    INFO(line);
    CHECK_THROWS_WITH(LogRecords::parse(line, 10, "log"), Catch::Contains(message));
  }
  // A step below 0 (or not a number) is no record of a run: the line is skipped, as a torn one is.
  CHECK(LogRecords::parse("{\"step\":-1e308,\"loss\":1}\n{\"step\":-1,\"loss\":1}").records().empty());
}

TEST_CASE("log records up to a step: what a checkpoint at that step had logged", "[train][log]") {
  const LogRecords log = LogRecords::parse(kLog, 2);
  CHECK(log.records().size() == 3);
  CHECK(log.head_records().empty());
  CHECK(LogRecords::read("/nonexistent/log.jsonl").records().empty());
}
