// tinygpt help [COMMAND]: the help of the program or of one subcommand, as --help prints it.
#include "commands.hpp"

namespace tinygpt::cli {

void add_help_command(CLI::App& app) {
  auto command = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("help", "Print the help of tinygpt or of one of its commands");
  cmd->add_option("command", *command, "the command (default: tinygpt itself)");
  cmd->callback([&app, command] {
    if (command->empty()) {  // app.help() would describe the selected subcommand: help itself
      fmt::print("{}", app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal));
      return;
    }
    for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      if (sub->get_name() == *command) {
        fmt::print("{}", sub->help(app.get_name()));
        return;
      }
    }
    throw CLI::ValidationError("help", fmt::format("no command '{}'", *command));
  });
}

}  // namespace tinygpt::cli
