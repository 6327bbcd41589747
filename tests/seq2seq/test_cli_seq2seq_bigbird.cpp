// train --arch encoder-decoder --attention bigbird: the encoder's bidirectional BigBird in
// config.json (its blocks drawn from the whole source), a resumed run byte-identical to an
// uninterrupted one, eval, sample and heads (pictures included) on it, and the refusals.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli/cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;
using nlohmann::json;

namespace {

const std::vector<std::string> kBigBird = {"--attention", "bigbird", "--window", "3", "--global-tokens", "1",
                                           "--random-blocks", "1", "--block-size", "5",
                                           "--eval-every", "4", "--lr-decay-steps", "8"};

}  // namespace

TEST_CASE("an encoder-decoder's encoder runs BigBird: config.json, resumed byte-identical, "
          "heads drawn", "[cli][seq2seq][bigbird][slow]") {
  ScratchDir dir;
  const std::string resumed = dir.file("resumed"), straight = dir.file("straight");
  run_ok(tiny_seq2seq_args(resumed, concat(kBigBird, {"--steps", "4"})));
  run_ok({"train", "--resume", resumed, "--steps", "8", "--threads", "1"});
  const CliResult trained = run_ok(tiny_seq2seq_args(straight, concat(kBigBird, {"--steps", "8"})));
  CHECK_THAT(trained.err, Catch::Contains("encoder bidirectional bigbird: window 3 + 1 global tokens + "
                                          "1 random blocks of 5"));
  for (const char* file : {"model.safetensors", "optimizer.safetensors", "config.json"}) {
    INFO(file);
    CHECK(read_bytes(committed_path(resumed, file)) == read_bytes(committed_path(straight, file)));
  }
  const json config = json::parse(read_bytes(committed_path(straight, "config.json")));
  const json& attention = config.at("tinygpt_encoder_attention");
  const json want = {{"attention_type", "bigbird"}, {"sliding_window", 3}, {"global_tokens", 1},
                     {"bigbird_block_size", 5}, {"bigbird_random_blocks", 1},
                     {"bigbird_seed", 1337}};  // the run's --seed
  for (const auto& item : want.items()) CHECK(attention.at(item.key()) == item.value());
  const json& blocks = attention.at("bigbird_random_key_blocks");  // 4 blocks of 5 in --block 20
  REQUIRE(blocks.size() == 4);
  for (const json& drawn : blocks) {
    REQUIRE(drawn.size() == 1);
    CHECK((drawn[0] >= 0 && drawn[0] < 4));
  }

  CHECK(json::parse(run_ok({"eval", "--model", straight, "--json"}).out).contains("exact_match"));
  CHECK_FALSE(run_ok({"sample", "--model", straight, "--source", "abcdefgh"}).out.empty());
  run_ok({"heads", "--model", straight, "--pairs", "10"});
  CHECK(std::filesystem::exists(straight + "/heads/encoder_layer0.png"));
  CHECK(std::filesystem::exists(straight + "/heads/cross_layer0.png"));
  check_one_line_error(run_cli({"train", "--resume", straight, "--steps", "12", "--window", "4"}),
                       {"--window 4 differs from the run's 3"});

  // A config.json whose listed blocks are not the seed's draw is refused by name.
  std::filesystem::remove(straight + "/checkpoint.json");
  json bad = config;
  bad["tinygpt_encoder_attention"]["bigbird_random_key_blocks"] = json::array({{9}, {9}, {9}, {9}});
  write_bytes(straight + "/config.json", bad.dump(2));
  check_one_line_error(run_cli({"sample", "--model", straight, "--source", "abc"}),
                       {"config.json", "bigbird_random_key_blocks differ"});
}

TEST_CASE("an encoder-decoder refuses attention patterns its encoder does not run",
          "[cli][seq2seq][bigbird][errors]") {
  ScratchDir dir;
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> refusals = {
      {{"--attention", "window", "--window", "4"},
       {"--attention window", "--arch encoder-decoder does not take it", "full or bigbird"}},
      {{"--attention", "bigbird", "--window", "3", "--block-size", "3"}, {"--block-size 3", "--block 20"}},
      {{"--attention", "bigbird", "--window", "3", "--block-size", "5", "--random-blocks", "5"},
       {"--random-blocks 5", "4 blocks"}},
      {{"--attention", "strided", "--stride", "2"}, {"--stride is a GPT's flag"}}};
  for (size_t i = 0; i < refusals.size(); ++i) {
    INFO(i);
    const std::string out = dir.file("bad" + std::to_string(i));
    const CliResult r = run_cli(tiny_seq2seq_args(out, refusals[i].first));
    CHECK(r.exited_with(2));
    check_one_line_error(r, refusals[i].second);
    CHECK_FALSE(std::filesystem::exists(out));
  }
  const CliResult encoder = run_cli({"train", "--arch", "encoder", "--out", dir.file("e"), "--attention",
                                     "bigbird", "--window", "3", "--block-size", "4", "--steps", "1"});
  CHECK(encoder.exited_with(2));
  // --arch encoder takes BigBird too, its blocks tiling the window's characters, [CLS] and [SEP].
  check_one_line_error(encoder, {"--block-size 4 does not divide the encoder's 66 positions"});
}
