// tinygpt train --pos / --kv-heads write the variant into config.json (and wpe only for learned
// positions); eval --block runs past the training context for every scheme but learned, which
// it refuses in one clear line; sample --verbose reports the KV cache size.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;
using nlohmann::json;

TEST_CASE("train --pos and --kv-heads: config.json, longer eval windows, KV cache size",
          "[cli][position][gqa]") {
  ScratchDir dir;
  for (const std::string pos : {"learned", "sinusoidal", "rope", "alibi", "none"}) {
    CAPTURE(pos);
    const std::string model = dir.file("model_" + pos);
    train_tiny_model(model, {"--pos", pos, "--kv-heads", "1"});
    const json config = json::parse(read_bytes(model + "/config.json"));
    CHECK(config.at("position_embedding_type") == pos);
    CHECK(config.at("num_key_value_heads") == 1);
    CHECK(config.at("rope_theta") == 10000.0);
    CHECK((read_bytes(model + "/model.safetensors").find("transformer.wpe.weight") != std::string::npos) ==
          (pos == "learned"));
    const std::vector<std::string> eval = {"eval", "--model", model, "--data", "builtin:toy",
                                           "--block", "32", "--json", "--threads", "1"};
    if (pos == "learned") {
      check_one_line_error(run_cli(eval), {"--block 32", "context 16", "learned"});
    } else {
      CHECK(json::parse(run_ok(eval).out).at("loss").get<double>() > 0);
    }
    const CliResult sample = run_ok({"sample", "--model", model, "--tokens", "40", "--verbose"});
    // 2 x 1 layer x 1 kv head x 16 positions x head width 8 x 4 bytes
    CHECK_THAT(sample.err, Catch::Matchers::Contains("KV cache: 1024 bytes"));
  }
  check_one_line_error(run_cli(tiny_train_args(dir.file("bad"), {"--kv-heads", "3"})),
                       {"--kv-heads 3", "--heads 2"});
}
