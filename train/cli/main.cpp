// tinygpt: train a toy GPT, sample from it, evaluate it, look at its attention heads, and time
// its training step.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <new>

#include "commands.hpp"
#include "tinygpt/autograd/error.hpp"
#include "tinygpt/autograd/threads.hpp"
#include "tinygpt/version.hpp"
#include "tinygpt/distributed/communicator.hpp"
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
std::string shown(const std::string& message) {
  std::string text = tinygpt::cli::in_user_terms(message);
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

// How long an idle OpenMP thread spins before it sleeps. libgomp's default (neither
// OMP_WAIT_POLICY nor GOMP_SPINCOUNT set) is 300,000 spins, milliseconds on these CPUs, at every
// barrier: when the cores are shared with other processes, each parallel region then waits for a
// descheduled partner while the finished thread burns the core it needs: with the other cores'
// owners busy, a small-model step took 600-900 ms instead of 55-60 ms with 1,000 spins (see
// docs/PERFORMANCE.md). libgomp reads the
// variables once as it loads, before main, so tinygpt sets a short spin and re-executes itself
// once. Setting either variable (OMP_WAIT_POLICY=active for libgomp's default) skips this.
void settle_openmp_waiting(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  if (setenv("GOMP_SPINCOUNT", "1000", 1) != 0) return;
  execv("/proc/self/exe", argv);  // returns only if it failed: carry on with the defaults
}

int report_usage_error(const std::string& message, const char* command) {
  fmt::print(stderr, "tinygpt: error: {} (see 'tinygpt {} --help')\n", shown(message), command);
  return 2;
}

}  // namespace

// An error under mpirun. One every rank raised together (a collective setup or save, a divergence
// seen in the summed numbers) is reported once, by rank 0, and every rank exits; one only this
// rank has seen is reported with its rank and ends the whole run (the others would wait forever).
int report_failure(const std::exception& e) {
  tinygpt::distributed::Communicator& world = tinygpt::distributed::world();
  const bool shared = dynamic_cast<const tinygpt::distributed::CollectiveError*>(&e) != nullptr ||
                      dynamic_cast<const tinygpt::train::DivergedError*>(&e) != nullptr;
  if (world.size() == 1 || (shared && world.is_root())) {
    fmt::print(stderr, "tinygpt: error: {}\n", shown(e.what()));
  } else if (!shared) {
    fmt::print(stderr, "tinygpt: error: rank {}: {}\n", world.rank(), shown(e.what()));
    std::fflush(stderr);
    world.abort(1);
  }
  return 1;
}

int main(int argc, char** argv) {
  settle_openmp_waiting(argv);
  tinygpt::set_flush_denormals(true);  // see threads.hpp: sharp attention makes many subnormals
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
  tinygpt::cli::add_heads_command(app);
  tinygpt::cli::add_bench_command(app);
  tinygpt::cli::add_prune_command(app);
  tinygpt::cli::add_help_command(app);
  tinygpt::cli::add_completion_command(app);
  const std::string problem = first_argument_problem(app, argc < 2 ? "" : argv[1]);
  if (!problem.empty()) {
    fmt::print(stderr, "tinygpt: error: {} (see --help)\n", one_line(problem));
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // A usage error: exit status 2, as for a missing or unknown subcommand above, whatever
    // CLI11's own code for the kind of error (105 for a value out of range, 109 for an unknown
    // flag, ...), and the help of the subcommand it concerns.
    return report_usage_error(e.what(), argv[1]);
  } catch (const tinygpt::cli::UsageError& e) {
    return report_usage_error(e.what(), argv[1]);  // the same, found by the command itself
  } catch (const tinygpt::cli::Interrupted& stop) {
    return 128 + stop.signal;  // 130 for SIGINT, 143 for SIGTERM, as a shell reports them
  } catch (const std::bad_alloc&) {
    // A shape beyond the memory estimate's reach (it refuses the absurd before allocating).
    return report_failure(tinygpt::Error(fmt::format(
        "out of memory: a buffer could not be allocated; lower {} (activations) or {} (model)",
        tinygpt::cli::kActivationFlags, tinygpt::cli::kModelFlags)));
  } catch (const std::exception& e) {
    return report_failure(e);
  }
  for (const tinygpt::cli::InputNote& note : tinygpt::cli::input_notes()) {
    fmt::print(stderr, "tinygpt: note: {}: {}\n", note.fact, note.consequence);
  }
  return 0;
}
