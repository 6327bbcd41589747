// tinygpt bench, run as a user would: a tiny model, two timed steps, the JSON report.
#include <array>
#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

namespace {

struct Run {
  int status = -1;
  std::string out;
};

// Runs build/tinygpt with `args` (stderr joined to stdout), behind `prefix` (e.g. an env call).
Run run_tinygpt_env(const std::string& prefix, const std::string& args) {
  const std::string command =
      prefix + " " + std::string(TINYGPT_BINARY_DIR) + "/tinygpt " + args + " 2>&1";
  Run run;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) run.out.append(buffer.data(), n);
  run.status = pclose(pipe);
  return run;
}

Run run_tinygpt(const std::string& args) { return run_tinygpt_env("", args); }

const char* const kTiny =
    "bench --layers 1 --heads 2 --d-model 16 --block 8 --batch 2 --steps 2 --warmup 1 "
    "--peak-size 64 --threads 1";

}  // namespace

TEST_CASE("bench --json reports the step time, throughput, MFU and memory") {
  const Run run = run_tinygpt(std::string(kTiny) + " --json");
  INFO(run.out);
  REQUIRE(run.status == 0);
  const auto j = nlohmann::json::parse(run.out);
  for (const char* key :
       {"ms_per_step", "tokens_per_s", "gflops", "peak_gflops", "mfu", "peak_rss_mb"}) {
    INFO(key);
    REQUIRE(j.contains(key));
    CHECK(j[key].is_number());
    CHECK(j[key].get<double>() > 0.0);
  }
  CHECK(j["steps"] == 2);
  CHECK(j["config"]["block"] == 8);
  CHECK(j["config"]["vocab"] == 65);
  // tokens/s is B T over the median step time.
  CHECK(j["tokens_per_s"].get<double>() ==
        Approx(2 * 8 / (j["ms_per_step"].get<double>() / 1000.0)).epsilon(1e-9));
  CHECK(j["mfu"].get<double>() ==
        Approx(j["gflops"].get<double>() / j["peak_gflops"].get<double>()).epsilon(1e-9));
  // Once warm, the training step takes every buffer from the caching allocator.
  CHECK(j["allocator"]["system_allocations_timed_steps"] == 0);
}

TEST_CASE("bench prints a table, a per-op profile on request, and --help") {
  const Run table = run_tinygpt(std::string(kTiny) + " --profile");
  INFO(table.out);
  REQUIRE(table.status == 0);
  for (const char* text : {"ms/step", "tokens/s", "MFU", "peak RSS", "allocator", "matmul"}) {
    CHECK(table.out.find(text) != std::string::npos);
  }
  const Run help = run_tinygpt("bench --help");
  REQUIRE(help.status == 0);
  CHECK(help.out.find("--steps") != std::string::npos);
  CHECK(help.out.find("--json") != std::string::npos);
}

TEST_CASE("tinygpt limits OpenMP's idle spinning unless the environment chooses", "[cli]") {
  const Run unset = run_tinygpt_env("env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT",
                                    std::string(kTiny) + " --json");
  INFO(unset.out);
  REQUIRE(unset.status == 0);
  CHECK(nlohmann::json::parse(unset.out)["gomp_spincount"] == "1000");
  const Run chosen = run_tinygpt_env("env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=active",
                                     std::string(kTiny) + " --json");
  INFO(chosen.out);
  REQUIRE(chosen.status == 0);
  const auto j = nlohmann::json::parse(chosen.out);
  CHECK(j["gomp_spincount"] == "");
  CHECK(j["omp_wait_policy"] == "active");
}

TEST_CASE("tinygpt's --threads 0 takes OMP_NUM_THREADS's count where it is set, else every core",
          "[cli]") {
  const std::string bench =
      "bench --layers 1 --heads 2 --d-model 16 --block 8 --batch 2 --steps 1 --warmup 0 "
      "--peak-size 64 --json";
  const auto threads_of = [](const Run& run) {
    INFO(run.out);
    REQUIRE(run.status == 0);
    return nlohmann::json::parse(run.out)["threads"].get<int>();
  };
  // CTest runs this with OMP_NUM_THREADS=1; two such programs on two cores must not run four.
  CHECK(threads_of(run_tinygpt_env("env OMP_NUM_THREADS=1", bench)) == 1);
  CHECK(threads_of(run_tinygpt_env("env OMP_NUM_THREADS=3", bench)) == 3);
  CHECK(threads_of(run_tinygpt_env("env OMP_NUM_THREADS=3", bench + " --threads 2")) == 2);
  CHECK(threads_of(run_tinygpt_env("env -u OMP_NUM_THREADS", bench)) >= 1);
  // train says how many it runs with --verbose.
  for (const auto& [env, said] : {std::pair{"1", "tinygpt: 1 thread;"}, {"3", "tinygpt: 3 threads;"}}) {
    tinygpt::testing::ScratchDir dir;
    const Run train = run_tinygpt_env(
        std::string("env OMP_NUM_THREADS=") + env,
        "train --out " + dir.file("run") +
            " --layers 1 --heads 2 --d-model 16 --block 16 --batch 4 --steps 1 --eval-iters 1 "
            "--verbose");
    INFO(train.out);
    REQUIRE(train.status == 0);
    CHECK(train.out.find(said) != std::string::npos);
  }
}

TEST_CASE("tinygpt runs with subnormal floats flushed to zero, and bench says so", "[cli]") {
  const Run json = run_tinygpt(std::string(kTiny) + " --json");
  INFO(json.out);
  REQUIRE(json.status == 0);
  CHECK(nlohmann::json::parse(json.out)["flush_denormals"] == true);
  const Run seq2seq = run_tinygpt(
      "bench --arch encoder-decoder --layers 1 --heads 2 --d-model 16 --block 8 --batch 2 "
      "--steps 1 --warmup 0 --json");
  INFO(seq2seq.out);
  REQUIRE(seq2seq.status == 0);
  CHECK(nlohmann::json::parse(seq2seq.out)["flush_denormals"] == true);
  const Run table = run_tinygpt(kTiny);
  REQUIRE(table.status == 0);
  CHECK(table.out.find("subnormals flushed to zero") != std::string::npos);
}

TEST_CASE("bench reports how the steps ran, and a per-op profile, in the same words for both architectures", "[cli]") {
  const std::string seq2seq =
      "bench --arch encoder-decoder --layers 1 --heads 2 --d-model 16 --block 8 --batch 2 "
      "--steps 2 --warmup 0";
  for (const std::string& command : {std::string(kTiny), seq2seq}) {
    const Run json = run_tinygpt_env("env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=77", command + " --json --profile");
    INFO(json.out);
    REQUIRE(json.status == 0);
    const auto j = nlohmann::json::parse(json.out);
    REQUIRE(j["profile"].is_array());
    CHECK_FALSE(j["profile"].empty());
    for (const auto& op : j["profile"]) CHECK(op["forward_ms_per_step"].get<double>() >= 0.0);
    REQUIRE(j["products"].is_array());
    CHECK_FALSE(j["products"].empty());
    for (const auto& product : j["products"]) {
      for (const char* key : {"op", "pass", "form", "batch", "m", "n", "k", "calls_per_step",
                              "ms_per_step", "gflops", "gflops_alone", "gflops_alone_cold",
                              "peak_fraction", "peak_fraction_alone", "peak_fraction_alone_cold"}) {
        CHECK(product.contains(key));
      }
    }
    for (const char* key : {"ms_per_step", "ms_min", "ms_max", "threads", "flush_denormals",
                            "precision", "bf16_products", "gemm_backend", "gemm_kernel", "own_loops"}) {
      CHECK(j.contains(key));
    }
    CHECK(j["gomp_spincount"] == "77");
    CHECK(j["omp_wait_policy"] == "");
    // Which CPU the figures came from, as /proc/cpuinfo names it.
    CHECK(j["cpu"]["family"].get<int>() > 0);
    CHECK_FALSE(j["cpu"]["vendor"].get<std::string>().empty());
    CHECK(j["ms_min"].get<double>() <= j["ms_per_step"].get<double>());
    CHECK(j["ms_per_step"].get<double>() <= j["ms_max"].get<double>());
    const Run table = run_tinygpt_env("env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=77", command + " --profile");
    INFO(table.out);
    REQUIRE(table.status == 0);
    for (const char* text : {"GOMP_SPINCOUNT=77", "OMP_WAIT_POLICY=unset", "products        f32",
                             "ms/step", "median (min", "per-op time, ms per step",
                             "per-product time"}) {
      CHECK(table.out.find(text) != std::string::npos);
    }
  }
}

// bench builds its model from the flags train takes, and refuses what train refuses: in the same
// words, with the same usage exit status, before it times anything.
TEST_CASE("bench refuses the model shapes train refuses, in the same words, and flags it would ignore", "[cli][errors]") {
  using namespace tinygpt::testing;
  ScratchDir dir;
  const std::vector<std::vector<std::string>> shapes = {
      {"--d-model", "10", "--heads", "4"},
      {"--heads", "4", "--kv-heads", "3"},
      {"--attention", "window"},
      {"--window", "4"},
      {"--stride", "3"},
      {"--block-size", "4"},
      {"--attention", "bigbird", "--window", "4", "--random-blocks", "1"},
      {"--arch", "encoder-decoder", "--d-model", "10", "--heads", "4"},
      {"--arch", "encoder-decoder", "--pos", "rope"},
      {"--arch", "encoder-decoder", "--attention", "linear"},
      {"--arch", "encoder-decoder", "--kv-heads", "2"}};
  const auto without_help = [](std::string err) { return err.substr(0, err.find(" (see 'tinygpt ")); };
  for (const auto& shape : shapes) {
    CAPTURE(shape);
    const CliResult bench = run_cli(concat({"bench", "--steps", "1", "--peak-size", "0"}, shape));
    const CliResult train = run_cli(concat({"train", "--out", dir.file("run"), "--steps", "1"}, shape));
    check_one_line_error(bench, {"(see 'tinygpt bench --help')"});
    CHECK(bench.exit_code == 2);
    CHECK(train.exit_code == 2);
    CHECK(without_help(bench.err) == without_help(train.err));
  }
  // A flag bench would silently ignore is refused: a text for an encoder-decoder (its steps run
  // on random pairs), --vocab with a text, a product probe with no MFU to report.
  const CliResult text = run_cli({"bench", "--arch", "encoder-decoder", "--data", "builtin:toy", "--steps", "1"});
  check_one_line_error(text, {"--data: --arch encoder-decoder times random pairs"});
  CHECK(text.exit_code == 2);
  const CliResult vocab = run_cli({"bench", "--data", "builtin:toy", "--vocab", "50", "--steps", "1"});
  check_one_line_error(vocab, {"--vocab: --data sets the vocabulary"});
  CHECK(vocab.exit_code == 2);
  const CliResult peak = run_cli({"bench", "--arch", "encoder-decoder", "--peak-size", "64", "--steps", "1"});
  check_one_line_error(peak, {"--peak-size: --arch encoder-decoder reports no MFU"});
  CHECK(peak.exit_code == 2);
}

TEST_CASE("bench --generate times a saved GPT's generation: load, first token, decode, the bandwidth bound", "[cli][sample]") {
  using namespace tinygpt::testing;
  ScratchDir dir;
  const std::string model = dir.file("tiny");
  train_tiny_model(model);
  const CliResult r = run_ok({"bench", "--generate", model, "--prompt-tokens", "5", "--new-tokens", "4",
                              "--top-k", "3", "--threads", "1", "--json"});
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["mode"] == "generate");
  CHECK(j["prompt_tokens"] == 5);
  CHECK(j["new_tokens"] == 4);
  CHECK(j["top_k"] == 3);
  CHECK(j["threads"] == 1);
  for (const char* key : {"load_s", "first_token_s", "decode_tokens_per_s", "decode_ms_per_token", "peak_rss_mb",
                          "weight_bytes_per_token", "kv_cache_bytes_per_token", "read_bandwidth_gb_s",
                          "bandwidth_bound_tokens_per_s", "fraction_of_bound"}) {
    INFO(key);
    CHECK(j[key].get<double>() > 0.0);
  }
  // The same keys on every host (docs/PERFORMANCE.md lists them): none depends on the CPU.
  std::set<std::string> keys;
  for (const auto& item : j.items()) keys.insert(item.key());
  CHECK(keys == std::set<std::string>{"mode", "model", "threads", "prompt_tokens", "new_tokens", "top_k", "precision", "seed",
                                      "load_s", "first_token_s", "decode_tokens_per_s", "decode_ms_per_token",
                                      "peak_rss_mb", "weight_bytes_per_token", "kv_cache_bytes_per_token",
                                      "read_bandwidth_gb_s", "bandwidth_bound_tokens_per_s", "fraction_of_bound"});
  const CliResult table = run_ok({"bench", "--generate", model, "--new-tokens", "2", "--threads", "1"});
  CHECK(table.out.find("bandwidth bound") != std::string::npos);
  // In bf16 the weight matrices are read as bf16: half their bytes per token; the other key
  // values keep their meaning. The portable products run where the CPU lacks avx512_bf16.
  const nlohmann::json bf16 = nlohmann::json::parse(
      run_ok({"bench", "--generate", model, "--new-tokens", "3", "--threads", "1", "--precision", "bf16", "--json"}).out);
  CHECK(j["precision"] == "f32");
  CHECK(bf16["precision"] == "bf16");
  CHECK(bf16["weight_bytes_per_token"].get<double>() < 0.6 * j["weight_bytes_per_token"].get<double>());

  // The step flags and the generation ones do not mix.
  check_one_line_error(run_cli({"bench", "--generate", model, "--batch", "2"}), {"--batch", "--generate"});
  check_one_line_error(run_cli({"bench", "--top-k", "2"}), {"--top-k", "--generate"});
}
