// tinygpt: train a toy GPT, sample from it, evaluate it, look at its attention heads, and time
// its training step.
#include <fmt/format.h>

#include "commands.hpp"
#include "tinygpt/autograd/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Train a small character-level GPT and watch its attention heads specialise.",
               "tinygpt"};
  app.require_subcommand(1);
  // Every failure is one line on stderr.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("tinygpt: error: {} (see --help)\n", e.what());
  });
  tinygpt::cli::add_train_command(app);
  tinygpt::cli::add_sample_command(app);
  tinygpt::cli::add_eval_command(app);
  tinygpt::cli::add_heads_command(app);
  tinygpt::cli::add_bench_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tinygpt: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
