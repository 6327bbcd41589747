// tinygpt memory: the bytes of a shape's parameters, activations, attention scores and KV cache,
// the source texts' worked figures as presets, the same formulas as the training memory estimate,
// and the usual one-line refusals.
#include "cli/cli_helpers.hpp"
#include "tinygpt/train/checkpoint.hpp"
#include "tinygpt/train/memory_estimate.hpp"

using namespace tinygpt::testing;
using nlohmann::json;

namespace {

json memory_json(std::vector<std::string> args) {
  args.insert(args.begin(), "memory");
  args.push_back("--json");
  return json::parse(run_ok(args).out);
}

double bytes(const json& j, const char* what) { return j["bytes"][what].get<double>(); }

// A decoder-only transformer's parameters, written out: L (12 C^2 + 13 C) + V C + T C + 2 C.
double gpt_parameters(double layers, double width, double vocab, double positions) {
  return layers * (12 * width * width + 13 * width) + vocab * width + positions * width + 2 * width;
}

}  // namespace

TEST_CASE("memory presets give the source texts' figures, corrected", "[cli][memory]") {
  // GPT-3 175B, f16, 2,048 tokens: 2 x 96 layers x 96 heads x 128 x 2,048 x 2 bytes = 9.66 GB.
  const json gpt3 = memory_json({"--preset", "gpt3-kv"});
  CHECK(bytes(gpt3, "kv_cache") == 2.0 * 96 * 96 * 128 * 2048 * 2);
  CHECK(bytes(gpt3, "kv_cache") == 9663676416.0);
  CHECK(gpt3["parameters"].get<double>() == gpt_parameters(96, 12288, 50257, 2048));
  CHECK(gpt3["shape"]["dtype"] == "f16");
  const std::string text = run_ok({"memory", "--preset", "gpt3-kv"}).out;
  CHECK_THAT(text, Catch::Matchers::Contains("9663676416 bytes         9.66 GB         9.00 GiB"));
  CHECK_THAT(text, Catch::Matchers::Contains("KV cache         = 2 x B x L x KV x dh x T x bytes"));
  // Twice the context, twice the cache; a flag given with a preset changes its shape.
  CHECK(bytes(memory_json({"--preset", "gpt3-kv", "--block", "4096"}), "kv_cache") == 2 * 9663676416.0);
  CHECK(bytes(memory_json({"--preset", "gpt3-kv", "--kv-heads", "8"}), "kv_cache") == 9663676416.0 / 12);

  // BERT-base, f32, 512 tokens: 12 layers x 12 heads x 512^2 x 4 bytes = 151 MB of scores.
  const json bert = memory_json({"--preset", "bert-base-scores"});
  CHECK(bytes(bert, "attention_scores") == 12.0 * 12 * 512 * 512 * 4);
  // One head at 128K tokens, f16: 131,072^2 x 2 bytes = 34.4 GB (32 GiB); f32 doubles it.
  CHECK(bytes(memory_json({"--preset", "128k-head"}), "attention_scores") == 131072.0 * 131072 * 2);
  CHECK(bytes(memory_json({"--preset", "128k-head", "--dtype", "f32"}), "attention_scores") ==
        131072.0 * 131072 * 4);
  const std::string help = run_ok({"memory", "--help"}).out;
  for (const char* preset : {"gpt3-kv", "bert-base-scores", "128k-head"}) CHECK_THAT(help, Catch::Matchers::Contains(preset));
}

TEST_CASE("memory and the training memory estimate are one formula", "[cli][memory]") {
  tinygpt::nn::GPTConfig c;
  c.n_layer = 2;
  c.n_head = 8;
  c.n_embd = 64;
  c.block_size = 64;
  c.vocab_size = 65;
  const json j = memory_json({"--layers", "2", "--heads", "8", "--d-model", "64", "--block", "64",
                              "--batch", "16", "--vocab", "65"});
  // The flags' shape has no learned position table; the estimate's GPT has one of T x C.
  CHECK(j["parameters"].get<int64_t>() + 64 * 64 == tinygpt::train::parameter_count(c));
  CHECK(j["parameters"].get<double>() == gpt_parameters(2, 64, 65, 0));
  const tinygpt::train::MemoryEstimate estimate = tinygpt::train::estimate_training_memory(c, 16, "adamw");
  CHECK(bytes(j, "activations") == estimate.activation_bytes);
  CHECK(bytes(j, "activations") == 4.0 * 16 * 64 * (2 * 20 * 64 + 3 * 65));
  CHECK(bytes(j, "attention_scores") == 4.0 * 16 * 2 * 8 * 64 * 64);
  CHECK(bytes(j, "kv_cache") == 4.0 * 2 * 16 * 2 * 8 * 8 * 64);
  c.dropout = 0.1;  // the unfused attention keeps four maps of scores a head
  CHECK(tinygpt::train::estimate_training_memory(c, 16, "adamw").activation_bytes ==
        bytes(j, "activations") + 4 * bytes(j, "attention_scores"));

  // A checkpoint's config.json: its shape, learned positions and all, one sequence.
  ScratchDir dir;
  c.n_kv_head = 2;
  write_bytes(dir.file("config.json"), tinygpt::train::config_to_json(c));
  const json from_model = memory_json({"--model", dir.file("")});
  CHECK(from_model["parameters"].get<int64_t>() == tinygpt::nn::GPT(c, 0).num_parameters());
  CHECK(from_model["shape"]["kv_heads"] == 2);
  CHECK(bytes(from_model, "kv_cache") == 4.0 * 2 * 1 * 2 * 2 * 8 * 64);
  CHECK(dir.entries() == std::set<std::string>{"config.json"});
}

TEST_CASE("memory refuses a shape no model has, in one line naming the flags", "[cli][memory]") {
  check_one_line_error(run_cli({"memory", "--heads", "8", "--kv-heads", "3"}), {"--kv-heads 3", "--heads 8"});
  CHECK(run_cli({"memory", "--heads", "8", "--kv-heads", "3"}).exited_with(2));
  const CliResult uneven = run_cli({"memory", "--d-model", "10", "--heads", "3"});
  CHECK(uneven.exited_with(2));
  check_one_line_error(uneven, {"--d-model 10", "--heads 3", "--d-head"});
  CHECK(run_ok({"memory", "--d-model", "10", "--heads", "3", "--d-head", "4"}).out.find("dh 4 d_head") != std::string::npos);
  CHECK(run_cli({"memory", "--dtype", "f64"}).exited_with(2));
  CHECK(run_cli({"memory", "--preset", "gpt3-kv", "--model", "somewhere"}).exited_with(2));
  CHECK(run_cli({"memory", "--preset", "gpt4"}).exited_with(2));
  const CliResult missing = run_cli({"memory", "--model", "no/such/dir"});
  CHECK(missing.exited_with(1));
  check_one_line_error(missing, {"no/such/dir/config.json"});
}
