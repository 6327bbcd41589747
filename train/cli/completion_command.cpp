// tinygpt completion bash: a bash completion script written from the commands' own flags, so it
// cannot drift from them. `cmake --install` installs its output where bash-completion looks
// (share/bash-completion/completions/tinygpt).
#include <regex>
#include <sstream>

#include "commands.hpp"

namespace tinygpt::cli {
namespace {

// What follows a flag on the command line, as its help names it: a directory or file (complete
// paths), a fixed set of words ("TEXT:{a,b}" from an IsMember check, or "[a|b]"), or anything
// else (a number, free text: nothing to offer).
std::string value_completion(const CLI::Option& opt) {
  const std::string type = opt.get_type_name();
  if (type == "DIR") return "compopt -o filenames; COMPREPLY=($(compgen -d -- \"$cur\"))";
  if (type == "FILE") return "compopt -o filenames; COMPREPLY=($(compgen -f -- \"$cur\"))";
  std::smatch words;
  if (std::regex_search(type, words, std::regex(R"(:\{([^}]*)\}$|^\[([^\]]*\|[^\]]*)\]$)"))) {
    std::string list = words[1].matched ? words[1].str() : words[2].str();
    for (char& c : list) c = (c == ',' || c == '|') ? ' ' : c;
    return "COMPREPLY=($(compgen -W \"" + list + "\" -- \"$cur\"))";
  }
  return "COMPREPLY=()";
}

std::string bash_script(const CLI::App& app) {
  std::ostringstream commands, cases;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    commands << sub->get_name() << ' ';
    std::ostringstream flags, values;
    std::string positional;  // what the first word that is not a flag can be
    for (const CLI::Option* opt : sub->get_options()) {
      if (opt->get_positional()) {
        // help's word is a command; another's, the words of its check
        positional = sub->get_name() == "help" ? "COMPREPLY=($(compgen -W \"$commands\" -- \"$cur\"))"
                                               : value_completion(*opt);
        continue;
      }
      for (const std::string& name : opt->get_lnames()) flags << "--" << name << ' ';
      if (opt->get_items_expected_max() > 0 && !opt->get_lnames().empty()) {
        // A value that may be left out (--ablate [zero|mean]): offer the flags when none fits.
        const bool optional = opt->get_items_expected_min() == 0;
        values << "        --" << opt->get_lnames().front() << ") " << value_completion(*opt)
               << (optional ? "; [ ${#COMPREPLY[@]} -gt 0 ] && return ;;\n" : "; return ;;\n");
      }
    }
    cases << "    " << sub->get_name() << ")\n      case \"$prev\" in\n"
          << values.str() << "      esac\n";
    if (!positional.empty()) cases << "      [ \"$args\" -eq 0 ] && { " << positional << "; return; }\n";
    cases << "      COMPREPLY=($(compgen -W \"" << flags.str() << "\" -- \"$cur\")) ;;\n";
  }
  return "# bash completion for tinygpt, written by `tinygpt completion bash`.\n"
         "_tinygpt() {\n"
         "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
         "  local commands=\"" + commands.str() + "\" command=\"\" args=0 i\n"
         "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
         "    if [ -n \"$command\" ]; then\n"
         "      [[ \"${COMP_WORDS[i]}\" != -* ]] && args=$((args + 1))\n"
         "    elif [[ \" $commands \" == *\" ${COMP_WORDS[i]} \"* ]]; then\n"
         "      command=\"${COMP_WORDS[i]}\"\n"
         "    fi\n"
         "  done\n"
         "  case \"$command\" in\n"
         "    \"\") COMPREPLY=($(compgen -W \"$commands --help --version\" -- \"$cur\")) ;;\n" +
         cases.str() +
         "  esac\n"
         "}\n"
         "complete -F _tinygpt tinygpt\n";
}

}  // namespace

void add_completion_command(CLI::App& app) {
  auto shell = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "completion", "Print a completion script for a shell (installed for bash by cmake --install; "
                    "or: source <(tinygpt completion bash))");
  cmd->add_option("shell", *shell, "the shell")->required()->check(CLI::IsMember({"bash"}));
  cmd->callback([&app, shell] { fmt::print("{}", bash_script(app)); });
}

}  // namespace tinygpt::cli
