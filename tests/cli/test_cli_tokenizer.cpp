// tinygpt tokenizer train|encode|decode: a trained vocabulary round-trips any text, GPT-2's files
// and a run's character tokenizer are read, and every mistake is one line.
#include "cli/cli_helpers.hpp"
#include "tinygpt/data/bpe.hpp"

using namespace tinygpt::testing;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kText =
    "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n"
    "First Citizen:\nYou are all resolved rather to die than to famish? We're 100% sure it's so.\n";

std::vector<int64_t> ids_of(const std::string& out) {
  std::istringstream words(out);
  return {std::istream_iterator<int64_t>(words), std::istream_iterator<int64_t>()};
}

// A tokenizer trained by the command on kText, in `dir`.
std::string trained(const ScratchDir& dir, const std::string& vocab_size = "300") {
  write_bytes(dir.file("text.txt"), kText);
  const std::string out = dir.file("tok.json");
  run_ok({"tokenizer", "train", "--data", dir.file("text.txt"), "--vocab-size", vocab_size, "--out", out});
  return out;
}

}  // namespace

TEST_CASE("tokenizer train writes the same tokenizer.json every time, and encode/decode round-trip",
          "[cli][tokenizer]") {
  ScratchDir dir;
  const std::string tok = trained(dir);
  const std::string first = read_bytes(tok);
  const CliResult again = run_ok({"tokenizer", "train", "--data", dir.file("text.txt"), "--vocab-size", "300", "--out", tok});
  CHECK_THAT(again.out, Catch::Matchers::Contains("300 tokens (256 bytes, 44 merges)"));
  CHECK(read_bytes(tok) == first);
  CHECK(json::parse(first)["pre_tokenizer"]["type"] == "ByteLevel");
  CHECK(dir.entries() == std::set<std::string>{"text.txt", "tok.json"});  // no temporary file left

  const std::string text = "We're all resolved: speak, \xC3\xA9t\xC3\xA9 \xF0\x9F\x98\x80!";
  const std::vector<int64_t> ids = ids_of(run_ok({"tokenizer", "encode", "--tokenizer", tok, "--text", text}).out);
  CHECK(ids == tinygpt::data::BpeTokenizer::from_json(first).encode(text));
  const json as_json = json::parse(run_ok({"tokenizer", "encode", "--tokenizer", tok, "--text", text, "--json"}).out);
  CHECK(as_json["ids"].get<std::vector<int64_t>>() == ids);
  std::string listed;
  for (const int64_t id : ids) listed += std::to_string(id) + " ";
  CHECK(run_ok({"tokenizer", "decode", "--tokenizer", tok, "--text", listed}).out == text);
  CHECK(json::parse(run_ok({"tokenizer", "decode", "--tokenizer", tok, "--text", as_json["ids"].dump(), "--json"}).out)["text"] == text);
}

TEST_CASE("tokenizer encode and decode keep bytes that are not UTF-8", "[cli][tokenizer]") {
  ScratchDir dir;
  const std::string tok = trained(dir);
  const std::string bytes = std::string("ab\xFF\xFE speak\xE6\x97", 11) + std::string(1, '\0') + "\n";
  write_bytes(dir.file("bytes.bin"), bytes);
  const std::string ids = run_ok({"tokenizer", "encode", "--tokenizer", tok, "--data", dir.file("bytes.bin")}).out;
  write_bytes(dir.file("ids.txt"), ids);
  CHECK(run_ok({"tokenizer", "decode", "--tokenizer", tok, "--data", dir.file("ids.txt")}).out == bytes);
}

TEST_CASE("tokenizer encode reads GPT-2's vocab.json and merges.txt from a folder, and a run's tokenizer.json",
          "[cli][tokenizer]") {
  ScratchDir dir;
  fs::create_directories(dir.file("gpt2"));
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[tinygpt::data::byte_level_chars()[b]] = b;
  vocab["\xC4\xA0t"] = 256;
  vocab["he"] = 257;
  vocab["\xC4\xA0the"] = 258;
  write_bytes(dir.file("gpt2/vocab.json"), vocab.dump());
  write_bytes(dir.file("gpt2/merges.txt"), "#version: 0.2\n\xC4\xA0 t\nh e\n\xC4\xA0t he\n");
  CHECK(run_ok({"tokenizer", "encode", "--tokenizer", dir.file("gpt2"), "--text", "a the"}).out == "97 258\n");

  const std::string model = dir.file("run");
  train_tiny_model(model);
  const std::string ids = run_ok({"tokenizer", "encode", "--tokenizer", model + "/tokenizer.json", "--text", "the"}).out;
  CHECK(ids_of(ids).size() == 3);  // one per character
  CHECK(run_ok({"tokenizer", "decode", "--tokenizer", model, "--text", ids}).out == "the");
}

TEST_CASE("tokenizer refuses to write over a checkpoint's file or its own text", "[cli][tokenizer]") {
  ScratchDir dir;
  write_bytes(dir.file("text.txt"), kText);
  const std::string model = dir.file("run");
  train_tiny_model(model);
  const DirSnapshot before = snapshot(model);
  check_one_line_error(run_cli({"tokenizer", "train", "--data", dir.file("text.txt"), "--vocab-size", "300",
                                "--out", model + "/tokenizer.json"}),
                       {"--out", "is a file of the checkpoint"});
  CHECK(snapshot(model) == before);
  check_one_line_error(run_cli({"tokenizer", "train", "--data", dir.file("text.txt"), "--vocab-size", "300",
                                "--out", dir.file("text.txt")}),
                       {"--out", "is the --data text"});
  CHECK(read_bytes(dir.file("text.txt")) == kText);
}

TEST_CASE("tokenizer's mistakes are one line each", "[cli][tokenizer]") {
  ScratchDir dir;
  const std::string tok = trained(dir);
  const CliResult small = run_cli({"tokenizer", "train", "--data", dir.file("text.txt"), "--vocab-size", "100", "--out", dir.file("x.json")});
  check_one_line_error(small, {"--vocab-size"});
  CHECK(small.exit_code == 2);
  check_one_line_error(run_cli({"tokenizer", "encode", "--text", "x"}), {"--tokenizer"});
  check_one_line_error(run_cli({"tokenizer", "encode", "--tokenizer", tok}), {"--text", "--data"});
  check_one_line_error(run_cli({"tokenizer", "split", "--tokenizer", tok}), {"split"});
  check_one_line_error(run_cli({"tokenizer", "decode", "--tokenizer", tok, "--text", "1 x"}), {"--text", "'x'"});
  check_one_line_error(run_cli({"tokenizer", "decode", "--tokenizer", tok, "--text", "1 300"}), {"id 300", "[0, 300)"});
  check_one_line_error(run_cli({"tokenizer", "encode", "--tokenizer", dir.file("missing.json"), "--text", "x"}),
                       {"--tokenizer", "missing.json"});
  write_bytes(dir.file("broken.json"), "{\"model\": {\"type\": \"BPE\"}, \"pre_tokenizer\": {\"type\": \"Whitespace\"}}");
  check_one_line_error(run_cli({"tokenizer", "encode", "--tokenizer", dir.file("broken.json"), "--text", "x"}),
                       {"pre_tokenizer", "ByteLevel"});
  CHECK(!fs::exists(dir.file("x.json")));
}
