// --precision bf16 through the real binary: recorded in the checkpoint, kept on resume unless
// --force, refused in one line where oneDNN has no bf16 kernels; bench's MFU against the bf16
// peak; train --verbose's line on the products.
#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"
#include "tinygpt/autograd/precision.hpp"
#include "tinygpt/train/machine_peak.hpp"

using namespace tinygpt::testing;
using nlohmann::json;

namespace {

// An environment variable for the children this scope starts.
class EnvScope {
 public:
  EnvScope(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~EnvScope() { ::unsetenv(name_); }
  EnvScope(const EnvScope&) = delete;
  EnvScope& operator=(const EnvScope&) = delete;

 private:
  const char* name_;
};

json options_of(const std::string& dir) {
  return json::parse(read_bytes(committed_path(dir, "trainer_state.json")))["options"];
}

json config_of(const std::string& dir) {
  return json::parse(read_bytes(committed_path(dir, "config.json")));
}

bool bf16_here() { return tinygpt::bf16_unsupported_reason().empty(); }

}  // namespace

TEST_CASE("train --precision bf16 is recorded and kept on resume unless --force", "[cli][bf16]") {
  if (!bf16_here()) return;
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run, {"--precision", "bf16"});
  CHECK(options_of(run)["precision"] == "bf16");
  CHECK(config_of(run)["tinygpt_training_precision"] == "bf16");
  CHECK(config_of(run)["torch_dtype"] == "float32");  // the weights themselves are f32
  run_ok({"sample", "--model", run, "--tokens", "20"});  // loads in the default f32

  // Resumed without the flag: still bf16.
  run_ok({"train", "--resume", run, "--steps", "30"});
  CHECK(options_of(run)["precision"] == "bf16");

  // Another precision without --force: one line, nothing touched.
  const DirSnapshot before = snapshot(run);
  const CliResult refused = run_cli({"train", "--resume", run, "--steps", "40", "--precision", "f32"});
  check_one_line_error(refused, {"--precision f32", "bf16", "--force"});
  CHECK(refused.exited_with(2));
  CHECK(snapshot(run) == before);

  // With --force it changes, and the checkpoint says so.
  run_ok({"train", "--resume", run, "--steps", "40", "--precision", "f32", "--force"});
  CHECK(options_of(run)["precision"] == "f32");
  CHECK(config_of(run)["tinygpt_training_precision"] == "f32");
  CHECK(saved_step(run) == 40);
}

TEST_CASE("a run without --precision is f32", "[cli][bf16]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run);
  CHECK(options_of(run)["precision"] == "f32");
  CHECK(config_of(run)["tinygpt_training_precision"] == "f32");

  // A state naming no precision tinygpt has is refused in one line naming the key.
  std::filesystem::remove(run + "/checkpoint.json");  // no checksums: the parser meets the value
  json state = json::parse(read_bytes(run + "/trainer_state.json"));
  state["options"]["precision"] = "fp8";
  write_bytes(run + "/trainer_state.json", state.dump());
  const CliResult refused = run_cli({"train", "--resume", run, "--steps", "30"});
  check_one_line_error(refused, {"trainer_state.json", "options.precision", "fp8"});
}

TEST_CASE("bf16 where oneDNN has no bf16 kernels is refused in one line naming the instructions",
          "[cli][bf16]") {
  // oneDNN's own cap stands in for a CPU without avx512_bf16.
  const EnvScope cap("ONEDNN_MAX_CPU_ISA", "AVX512_CORE");
  ScratchDir dir;
  const std::string out = dir.file("out");
  const CliResult train = run_cli(tiny_train_args(out, {"--precision", "bf16"}));
  check_one_line_error(train, {"--precision 'bf16' cannot run here", "avx512_bf16", "ONEDNN_MAX_CPU_ISA=AVX512_CORE"});
  CHECK(train.exited_with(2));
  CHECK_FALSE(std::filesystem::exists(out));
  const CliResult bench = run_cli({"bench", "--precision", "bf16", "--steps", "1"});
  check_one_line_error(bench, {"--precision 'bf16' cannot run here", "avx512_bf16"});
  CHECK(bench.exited_with(2));
  const CliResult f32 = run_cli(tiny_train_args(out));  // f32 runs as ever
  CHECK(f32.exited_with(0));
}

TEST_CASE("bench --json reports both peaks, the backend, and MFU against the precision's peak",
          "[cli][bf16][bench]") {
  const std::vector<std::string> tiny = {"bench", "--layers", "1", "--heads", "2", "--d-model",
                                         "16", "--block", "8", "--batch", "2", "--steps", "2",
                                         "--warmup", "1", "--peak-size", "64", "--json"};
  const json f32 = json::parse(run_ok(tiny).out);
  CHECK(f32["precision"] == "f32");
  CHECK(f32["peak_gflops_f32"].get<double>() > 0.0);
  CHECK(f32["peak_gflops"] == f32["peak_gflops_f32"]);
  // Probed before and after the steps; the higher reading is the peak.
  const auto probes = f32["peak_gflops_f32_probes"].get<std::vector<double>>();
  REQUIRE(probes.size() == 2);
  CHECK(f32["peak_gflops_f32"].get<double>() == std::max(probes[0], probes[1]));
  CHECK(f32["peak_kernel_f32"].get<std::string>().find("f32") != std::string::npos);
  CHECK(f32["gemm_backend"].get<std::string>().rfind("oneDNN ", 0) == 0);
  CHECK_FALSE(f32["gemm_kernel"].get<std::string>().empty());
  CHECK(f32["gemm_gflops"].get<double>() > 0.0);
  CHECK(f32["mfu"].get<double>() ==
        Approx(f32["gflops"].get<double>() / f32["peak_gflops_f32"].get<double>()).epsilon(1e-9));
  if (!bf16_here()) {
    CHECK(f32["peak_gflops_bf16"].is_null());
    CHECK(f32["peak_gflops_bf16_probes"].is_null());
    return;
  }
  const auto bf16_probes = f32["peak_gflops_bf16_probes"].get<std::vector<double>>();
  REQUIRE(bf16_probes.size() == 2);
  CHECK(f32["peak_gflops_bf16"].get<double>() == std::max(bf16_probes[0], bf16_probes[1]));
  CHECK(f32["bf16_products"].is_null());
  // bf16 on each kernel of its products: MFU against the peak of the units that run them.
  for (const tinygpt::Bf16Products each : tinygpt::available_bf16_products()) {
    const std::string units = tinygpt::bf16_products_name(each);
    const EnvScope env("TINYGPT_BF16_PRODUCTS", units.c_str());
    const json bf16 = json::parse(run_ok(concat(tiny, {"--precision", "bf16"})).out);
    INFO(units);
    CHECK(bf16["precision"] == "bf16");
    CHECK(bf16["bf16_products"] == units);
    CHECK(bf16["peak_gflops_bf16"].get<double>() > 0.0);
    // The bf16 peak is the fastest bf16 unit's: AMX's tiles where Linux grants them.
    CHECK(bf16["peak_kernel_bf16"] == (tinygpt::train::amx_usable() ? "amx_bf16 tdpbf16ps" : "avx512_bf16 vdpbf16ps"));
    const std::string peak = units == "f32_fma" ? "peak_gflops_f32" : "peak_gflops_bf16";
    CHECK(bf16["peak_gflops"] == bf16[peak]);
    // The timed steps did run in bf16: same seed and batches, another loss.
    CHECK(bf16["final_loss"] != f32["final_loss"]);
    CHECK(bf16["mfu"].get<double>() ==
          Approx(bf16["gflops"].get<double>() / bf16[peak].get<double>()).epsilon(1e-9));
    CHECK(bf16["mfu"].get<double>() < 1.0);  // a peak the products outran would be no peak
  }
}

TEST_CASE("TINYGPT_BF16_PRODUCTS other than dot_pairs, f32_fma or amx, or amx without AMX, is "
          "refused in one line", "[cli][bf16]") {
  if (!bf16_here()) return;
  // AMX out of oneDNN's reach: capped to the bf16 dot products, on any CPU that has them.
  const EnvScope cap("ONEDNN_MAX_CPU_ISA", "AVX512_CORE_BF16");
  for (const auto& [units, error] :
       {std::pair<std::string, std::string>{"tiles", "TINYGPT_BF16_PRODUCTS: 'tiles' is not one of dot_pairs, f32_fma, amx"},
        {"amx", "TINYGPT_BF16_PRODUCTS: amx needs the AMX tiles, which oneDNN does not use on this CPU"}}) {
    CAPTURE(units);
    ScratchDir dir;
    const EnvScope env("TINYGPT_BF16_PRODUCTS", units.c_str());
    const CliResult train = run_cli(tiny_train_args(dir.file("out"), {"--precision", "bf16"}));
    const CliResult bench = run_cli({"bench", "--precision", "bf16", "--steps", "1"});
    for (const CliResult& r : {train, bench}) {
      CHECK(r.exited_with(2));
      CHECK_THAT(r.err, Catch::Matchers::Contains(error));
      CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
    CHECK_FALSE(std::filesystem::exists(dir.file("out")));
  }
}

TEST_CASE("train --verbose says what runs the products and how fast against the peak",
          "[cli][bench]") {
  ScratchDir dir;
  const CliResult r = run_ok(tiny_train_args(dir.file("out"), {"--verbose"}));
  CHECK_THAT(r.err, Catch::Matchers::Contains("f32 products on oneDNN"));
  CHECK_THAT(r.err, Catch::Matchers::Contains("of the machine's f32 peak"));
}
