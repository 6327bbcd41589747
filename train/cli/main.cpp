// tinygpt: train a toy GPT, sample from it, evaluate it, and look at its attention heads.
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

std::string subcommand_names(CLI::App& app) {
  std::string names;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  return names;
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
  // CLI11 reports a missing or unknown subcommand as "A subcommand is required", which names
  // neither the word it did not know nor the ones it would have.
  if (argc < 2 || argv[1][0] != '-') {
    const std::string word = argc < 2 ? "" : argv[1];
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      known = known || sub->check_name(word);
    }
    if (!known) {
      fmt::print(stderr, "tinygpt: error: {} (expected one of: {}; see --help)\n",
                 word.empty() ? "no subcommand given" : one_line(fmt::format("unknown subcommand '{}'", word)),
                 subcommand_names(app));
      return 2;
    }
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
