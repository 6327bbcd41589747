// A log.jsonl whose fields have the wrong types (edited by hand, its checkpoint manifest
// removed) is refused by every reader with one line naming the file, the line and the field,
// never a raw JSON type error.
#include <functional>
#include <sstream>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;
using nlohmann::json;

TEST_CASE("a log.jsonl field of the wrong type is refused naming the file, line and field",
          "[cli][hardening][log]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run);
  const std::string log = read_bytes(run + "/log.jsonl");
  std::vector<json> records;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) records.push_back(json::parse(line));
  size_t eval_line = 0;  // the first evaluation, which scored the heads
  while (eval_line < records.size() && !records[eval_line].contains("heads")) ++eval_line;
  REQUIRE(eval_line < records.size());
  struct Edit {
    size_t line;
    std::string field;
    std::function<void(json&)> apply;
  };
  const std::vector<Edit> edits = {
      {eval_line, "heads[1].layer", [](json& r) { r["heads"][1]["layer"] = "1"; }},
      {eval_line, "heads[0].induction", [](json& r) { r["heads"][0]["induction"] = json::array(); }},
      {eval_line, "in_context.ratio", [](json& r) { r["in_context"]["ratio"] = "high"; }},
      {eval_line, "heads", [](json& r) { r["heads"] = "none"; }},
      {0, "loss", [](json& r) { r["loss"] = "3.4"; }},
  };
  std::filesystem::remove(run + "/checkpoint.json");  // no checksums to refuse the edit first
  for (const Edit& e : edits) {
    CAPTURE(e.field);
    std::string edited;
    for (size_t i = 0; i < records.size(); ++i) {
      json r = records[i];
      if (i == e.line) e.apply(r);
      edited += r.dump() + "\n";
    }
    write_bytes(run + "/log.jsonl", edited);
    const std::string where = run + "/log.jsonl line " + std::to_string(e.line + 1) + ": field '" + e.field + "' is ";
    check_one_line_error(run_cli({"train", "--resume", run, "--steps", "30"}), {where});
    check_one_line_error(run_cli({"heads", "--model", run, "--html", dir.file("page.html"), "--out", dir.file("pics")}),
                         {where});
  }
  write_bytes(run + "/log.jsonl", log);
  run_ok({"train", "--resume", run, "--steps", "30"});
}
