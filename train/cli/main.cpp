// tinygpt: train a toy GPT, sample from it, evaluate it, look at its attention heads, and time
// its training step.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <new>
#include <system_error>

#include "commands.hpp"
#include "process.hpp"
#include "tinygpt/autograd/error.hpp"
#include "tinygpt/autograd/threads.hpp"
#include "tinygpt/version.hpp"
#include "tinygpt/distributed/communicator.hpp"
#include "tinygpt/io/commit.hpp"
#include "tinygpt/train/trainer.hpp"

namespace {

// Every failure is one short line on stderr: line breaks inside a message (a path or a parser's
// text can hold them) are written as the two characters \n, and a message that quotes a huge
// value somewhere keeps its start and its end around a note of what was left out.
std::string one_line(std::string text) {
  constexpr size_t kHead = 700, kTail = 300;
  if (text.size() > kHead + kTail + 100) {
    text = text.substr(0, kHead) + fmt::format(" [... {} bytes left out ...] ", text.size() - kHead - kTail) +
           text.substr(text.size() - kTail);
  }
  for (size_t at = text.find_first_of("\r\n"); at != std::string::npos;
       at = text.find_first_of("\r\n", at + 2)) {
    text.replace(at, 1, text[at] == '\n' ? "\\n" : "\\r");
  }
  return text;
}

// An error's message as the user reads it: in the command line's terms, with the facts about its
// input that may explain it, on one line.
std::string shown(const std::exception& e) {
  std::string text = tinygpt::cli::in_user_terms(e);
  for (const tinygpt::cli::InputNote& note : tinygpt::cli::input_notes()) text += "; " + note.fact;
  return one_line(text);
}

// CLI11 reports a missing or unknown subcommand, or an unknown flag before it, as "A subcommand
// is required", which names neither the word it did not know nor the ones it would have. This
// says what is wrong with the first argument, or returns "" if it is a subcommand or --help.
std::string first_argument_problem(CLI::App& app, const std::string& first) {
  if (first == "-h" || first == "--help" || first == "--version") return "";
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

// The one line of an error only this process has met, and its exit status. Under mpirun with more
// than one rank the line names the rank and the whole job ends (MPI_Abort): the other ranks would
// wait for this one in their next collective for ever.
int report_alone(const std::string& line, int status) {
  tinygpt::distributed::Communicator& world = tinygpt::distributed::world();
  if (world.size() == 1) {
    tinygpt::cli::say("tinygpt: error: " + line);
    return status;
  }
  tinygpt::cli::say(fmt::format("tinygpt: error: rank {}: {}", world.rank(), line));
  std::fflush(stderr);
  world.abort(status);
}

int report_usage_error(const std::exception& e, const char* command) {
  return report_alone(fmt::format("{} (see 'tinygpt {} --help')", shown(e), command), 2);
}

// An error under mpirun. One every rank raised together (a collective setup or save, a divergence
// seen in the summed numbers) is reported once, by rank 0, and every rank exits; one only this
// rank has seen is reported with its rank and ends the whole run (the others would wait forever).
int report_failure(const std::exception& e) {
  tinygpt::distributed::Communicator& world = tinygpt::distributed::world();
  const bool shared = dynamic_cast<const tinygpt::distributed::CollectiveError*>(&e) != nullptr ||
                      dynamic_cast<const tinygpt::train::DivergedError*>(&e) != nullptr;
  if (!shared) return report_alone(shown(e), 1);
  if (world.is_root()) tinygpt::cli::say("tinygpt: error: " + shown(e));
  return 1;
}

// Exit status 0 when standard output took everything the command sent it, else 1 after one line
// saying why (a write to a closed pipe does not get here: SIGPIPE ends the process quietly first,
// as it does other Unix tools). `error` as stdout_failure takes it.
int report_stdout_failure(int error) {
  const std::string failure = tinygpt::cli::stdout_failure(error);
  return failure.empty() ? 0 : report_failure(tinygpt::Error(failure));
}

}  // namespace

int main(int argc, char** argv) {
  tinygpt::cli::hold_closed_standard_descriptors();
  tinygpt::cli::settle_openmp_environment(argv);
  // FTZ and DAZ on this thread now (see threads.hpp: sharp attention makes many subnormals); each
  // command's set_num_threads carries them to its team, so one that does no parallel work
  // (--version, help) starts no OpenMP thread.
  tinygpt::set_num_threads(1);
  tinygpt::set_flush_denormals(true);
  const tinygpt::distributed::Session mpi(argc, argv);
  CLI::App app{"Train a small character-level GPT and watch its attention heads specialise.",
               "tinygpt"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tinygpt " TINYGPT_VERSION);
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("tinygpt: error: {} (see --help)\n", one_line(e.what()));
  });
  tinygpt::cli::add_train_command(app);
  tinygpt::cli::add_sample_command(app);
  tinygpt::cli::add_eval_command(app);
  tinygpt::cli::add_fill_command(app);
  tinygpt::cli::add_heads_command(app);
  tinygpt::cli::add_bench_command(app);
  tinygpt::cli::add_tokenizer_command(app);
  tinygpt::cli::add_prune_command(app);
  tinygpt::cli::add_memory_command(app);
  tinygpt::cli::add_help_command(app);
  tinygpt::cli::add_completion_command(app);
  tinygpt::cli::apply_flag_rules(app);
  const std::string problem = first_argument_problem(app, argc < 2 ? "" : argv[1]);
  if (!problem.empty()) return report_alone(fmt::format("{} (see --help)", one_line(problem)), 2);
  try {
    tinygpt::io::lock_wait_seconds();  // a malformed TINYGPT_LOCK_TIMEOUT: before any command runs
  } catch (const tinygpt::ValueError& e) {
    return report_alone(shown(e), 2);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help, --version
      app.exit(e);
      return report_stdout_failure(errno);
    }
    // A usage error: exit status 2, as for a missing or unknown subcommand above, whatever
    // CLI11's own code for the kind of error (105 for a value out of range, 109 for an unknown
    // flag, ...), and the help of the subcommand it concerns.
    return report_usage_error(e, argv[1]);
  } catch (const tinygpt::cli::UsageError& e) {
    return report_usage_error(e, argv[1]);  // the same, found by the command itself
  } catch (const tinygpt::cli::Interrupted& stop) {
    return 128 + stop.signal;  // 130 for SIGINT, 143 for SIGTERM, as a shell reports them
  } catch (const std::bad_alloc&) {
    // A shape beyond the memory estimate's reach (it refuses the absurd before allocating).
    return report_failure(tinygpt::Error(tinygpt::cli::out_of_memory_message(app)));
  } catch (const std::exception& e) {
    if (std::ferror(stdout) == 0) return report_failure(e);
    // fmt::print throws std::system_error with the errno of the write that failed.
    const auto* system = dynamic_cast<const std::system_error*>(&e);
    return report_stdout_failure(system != nullptr ? system->code().value() : 0);
  }
  for (const tinygpt::cli::InputNote& note : tinygpt::cli::input_notes()) {
    tinygpt::cli::say(fmt::format("tinygpt: note: {}: {}", note.fact, note.consequence));
  }
  return report_stdout_failure(0);
}
