// tinygpt: train a toy GPT, sample from it, evaluate it, look at its attention heads, and time
// its training step.
#include <fmt/format.h>

#include "commands.hpp"
#include "tinygpt/autograd/error.hpp"

namespace {

// Every failure is one line on stderr: line breaks inside a message (a path or a parser's text
// can hold them) are written as the two characters \n.
std::string one_line(std::string text) {
  for (size_t at = text.find_first_of("\r\n"); at != std::string::npos;
       at = text.find_first_of("\r\n", at + 2)) {
    text.replace(at, 1, text[at] == '\n' ? "\\n" : "\\r");
  }
  return text;
}

// CLI11 reports a missing or unknown subcommand, or an unknown flag before it, as "A subcommand
// is required", which names neither the word it did not know nor the ones it would have. This
// says what is wrong with the first argument, or returns "" if it is a subcommand or --help.
std::string first_argument_problem(CLI::App& app, const std::string& first) {
  if (first == "-h" || first == "--help") return "";
  if (first.size() > 1 && first[0] == '-') {
    return fmt::format("unknown flag '{}' before the subcommand", first);
  }
  std::string names;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    if (sub->check_name(first)) return "";
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  return fmt::format("{} (expected one of: {})",
                     first.empty() ? "no subcommand given" : fmt::format("unknown subcommand '{}'", first),
                     names);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train a small character-level GPT and watch its attention heads specialise.",
               "tinygpt"};
  app.require_subcommand(1);
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("tinygpt: error: {} (see --help)\n", one_line(e.what()));
  });
  tinygpt::cli::add_train_command(app);
  tinygpt::cli::add_sample_command(app);
  tinygpt::cli::add_eval_command(app);
  tinygpt::cli::add_heads_command(app);
  tinygpt::cli::add_bench_command(app);
  const std::string problem = first_argument_problem(app, argc < 2 ? "" : argv[1]);
  if (!problem.empty()) {
    fmt::print(stderr, "tinygpt: error: {} (see --help)\n", one_line(problem));
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tinygpt: error: {}\n", one_line(e.what()));
    return 1;
  }
  return 0;
}
