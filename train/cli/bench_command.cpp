// tinygpt bench: times real training steps of a GPT or an encoder-decoder (train/bench.hpp) and
// prints the report as a table or as JSON.
#include <memory>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "families.hpp"
#include "tinygpt/autograd/threads.hpp"
#include "tinygpt/data/data_source.hpp"
#include "tinygpt/train/bench.hpp"

namespace tinygpt::cli {
namespace {

struct BenchFlags {
  std::string arch = default_family().arch;
  ModelFlags model;
  train::BenchSettings settings;
  int64_t vocab = 65;
  int threads = 0;
  std::string data;
  bool json = false;
  std::string generate;  // a saved model whose generation bench times instead of steps
  train::GenerationSettings generation;
};

// What --generate times comes from the folder: the step flags would go unused, and the
// generation flags go unused without it.
void check_generate_flags(const BenchFlags& f, const CLI::App& cmd) {
  const std::set<std::string> generation = {"--generate", "--prompt-tokens", "--new-tokens", "--top-k"};
  const std::set<std::string> shared = {"--threads", "--seed", "--json", "--help", "--precision"};
  for (const CLI::Option* opt : cmd.get_options()) {
    const std::string name = opt->get_name();
    if (opt->count() == 0 || shared.count(name) > 0) continue;
    if (f.generate.empty() && generation.count(name) > 0) {
      throw UsageError(fmt::format("{}: only with --generate DIR (it times a model's generation)", name));
    }
    if (!f.generate.empty() && generation.count(name) == 0) {
      throw UsageError(fmt::format("{}: --generate times the folder's model as it is; it takes no "
                                   "training-step flags", name));
    }
  }
}

void run_generation_bench(const BenchFlags& f) {
  set_num_threads(f.threads);
  train::GenerationSettings settings = f.generation;
  settings.seed = f.settings.seed;
  settings.precision = parse_precision(f.settings.precision);
  const train::BenchReport report = train::bench_generation(f.generate, settings);
  fmt::print("{}", f.json ? report.json.dump() + "\n" : report.text);
}

// The flags that size bench's model: the synthetic tokens' vocabulary too (a text's is its own).
constexpr const char* kBenchModelFlags = "--layers/--d-model/--vocab";

// What the command line alone shows to be wrong for --arch, in the words train uses.
void check_bench_flags(const BenchFlags& f, const CLI::App& cmd) {
  const Family& family = cli::family(f.arch);
  family.check(f.model, cmd);
  if (!family.bench_data_instead.empty() && cmd.count("--data") > 0) {
    throw UsageError(fmt::format("--data: --arch {} times {}; it takes no text", f.arch, family.bench_data_instead));
  }
  if (f.model.block < family.bench_min_block) {
    throw UsageError(fmt::format("--block: {} needs at least {} positions", family.noun, family.bench_min_block));
  }
  if (!family.reports_mfu && cmd.count("--peak-size") > 0) {
    throw UsageError(fmt::format("--peak-size: --arch {} reports no MFU, so it measures no product rate", f.arch));
  }
  if (cmd.count("--data") > 0 && cmd.count("--vocab") > 0) {
    throw UsageError("--vocab: --data sets the vocabulary, to the text's characters");
  }
  try {  // bf16 where it cannot run is refused as train refuses it
    f.settings.train_options().validate();
  } catch (const ValueError& e) {
    throw UsageError(in_flag_terms(e));
  }
}

// The task bench times: --data's characters, or random tokens or pairs of --vocab; `source`
// names its data. A step the machine cannot hold is refused by its size, in the flags' words.
std::unique_ptr<train::Task> bench_task(const BenchFlags& f, std::string& source) {
  const train::TrainOptions options = f.settings.train_options();
  const std::string text = f.data.empty() ? "" : data::load_text(f.data);
  const train::ModelConfig config = family(f.arch).model_config(f.model, f.settings.seed);
  try {
    if (!f.data.empty()) {
      source = data::absolute_source(f.data);
      return train::new_task(config, train::TaskSource{text, source, 0.1, options, options.batch});
    }
    source = "synthetic random tokens";
    return train::random_task(config, f.vocab, options);
  } catch (const train::MemoryError& e) {
    throw ValueError(e.message(kActivationFlags, f.data.empty() ? kBenchModelFlags : kModelFlags));
  } catch (const ValueError& e) {
    throw ValueError(in_flag_terms(e));
  }
}

void run_bench(const BenchFlags& f, const CLI::App& cmd) {
  check_generate_flags(f, cmd);
  if (!f.generate.empty()) return run_generation_bench(f);
  check_bench_flags(f, cmd);
  set_num_threads(f.threads);
  std::string source;
  const std::unique_ptr<train::Task> task = bench_task(f, source);
  const train::BenchReport report = [&] {
    try {
      return train::bench(*task, f.settings, source);
    } catch (const ValueError& e) {
      throw ValueError(in_flag_terms(e));
    }
  }();
  fmt::print("{}", f.json ? report.json.dump() + "\n" : report.text);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Time full training steps (forward, backward, grad clip, AdamW) and report ms/step, "
      "tokens/s, GFLOP/s, MFU against the machine's measured peak, peak RSS and allocator stats");
  cmd->footer(
      "Model FLOPs per token are nanoGPT's estimate, 6 N + 12 L C T (N: parameters without the "
      "position embedding; L layers, C width, T context); MFU is that rate over the machine's f32 "
      "peak, measured by multiply-adds on registers on every thread (no library's kernel choice "
      "can lower it). The f32 products' own rate is measured on --peak-size square matrices "
      "through the same OpenMP-split matmul; a line says so when it is below half the peak.");
  set_memory_advice(*cmd, fmt::format("lower {} (activations), {} (model) or --peak-size (the "
                                      "product probe)", kActivationFlags, kBenchModelFlags));
  std::vector<std::string> arch_help;
  for (const Family& family : families()) arch_help.push_back(family.bench_help);
  cmd->add_option("--arch", flags->arch, fmt::format("{}", fmt::join(arch_help, "; ")))
      ->check(CLI::IsMember(family_names()))->capture_default_str();
  flags->model.add_to(*cmd);
  cmd->add_option("--batch", flags->settings.batch, "sequences per step")->check(CLI::Range(int64_t{1}, int64_t{1} << 20))->capture_default_str();
  cmd->add_option("--vocab", flags->vocab, "vocabulary of the synthetic tokens (65: Shakespeare's)")->check(CLI::Range(int64_t{1}, int64_t{1} << 24))->capture_default_str();
  cmd->add_option("--steps", flags->settings.steps, "timed steps")->check(CLI::Range(int64_t{1}, int64_t{1} << 20))->capture_default_str();
  cmd->add_option("--warmup", flags->settings.warmup, "untimed steps first (caches, allocator)")->check(CLI::Range(int64_t{0}, int64_t{1} << 20))->capture_default_str();
  add_threads_flag(*cmd, flags->threads);
  cmd->add_option("--data", flags->data, "train on this UTF-8 text file's characters instead of synthetic tokens (sets the vocabulary)")->type_name("FILE");
  cmd->add_option("--seed", flags->settings.seed, "seed for initialisation and batches")->check(seed_value())->capture_default_str();
  cmd->add_option("--peak-size", flags->settings.peak_size, "side of the square f32 product whose rate is measured through matmul (0: skip; gpt only)")->check(CLI::Range(int64_t{0}, int64_t{16384}))->capture_default_str();
  cmd->add_option("--precision", flags->settings.precision,
                  "precision of the products: f32, or bf16 (bf16 inputs, f32 accumulation; all "
                  "else f32, as torch.autocast); MFU is against the peak of the units that run the "
                  "products: the bf16 dot products, or the f32 FMAs where those are faster "
                  "(TINYGPT_BF16_PRODUCTS); with --generate, as sample --precision (a GPT's weight "
                  "matrices kept in bf16)")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->capture_default_str();
  cmd->add_flag("--profile", flags->settings.profile, "also print the time per op (forward and backward) of the timed steps");
  cmd->add_option("--generate", flags->generate,
                  "time generation from this saved GPT instead of training steps, as sample runs it "
                  "(KV cache, batch 1): load time, time to the first token, decode tokens/s, peak "
                  "RSS, and the bound the machine's read bandwidth puts on decoding")
      ->type_name("DIR");
  cmd->add_option("--prompt-tokens", flags->generation.prompt_tokens, "with --generate: the prompt's length (ids 0, 1, 2, ...)")->check(CLI::Range(int64_t{1}, int64_t{1} << 20))->capture_default_str();
  cmd->add_option("--new-tokens", flags->generation.new_tokens, "with --generate: tokens to generate")->check(CLI::Range(int64_t{2}, int64_t{1} << 20))->capture_default_str();
  cmd->add_option("--top-k", flags->generation.top_k, "with --generate: sample among the k likeliest at temperature 1 (0: greedy)")->check(CLI::Range(int64_t{0}, int64_t{1} << 24))->capture_default_str();
  cmd->add_flag("--json", flags->json, "print one JSON object instead of the table");
  cmd->callback([flags, cmd] { run_bench(*flags, *cmd); });
}

}  // namespace tinygpt::cli
