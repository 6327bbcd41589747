// The process around a command: its standard descriptors, its OpenMP environment, and whether
// its standard output took what the command wrote.
#include "process.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "tinygpt/autograd/threads.hpp"

namespace tinygpt::cli {
namespace {

// The most OpenMP threads tinygpt runs per core. More only queue for the cores, each with a
// stack of its own and a place at every barrier, and a count in the tens of thousands runs the
// process out of memory for those stacks before it has done anything.
constexpr int kThreadsPerCore = 4;

void note(const std::string& text) { say("tinygpt: note: " + text); }

// OMP_NUM_THREADS as tinygpt runs it: a count above kThreadsPerCore x the cores is lowered to
// that, and a value that is no count (abc, 0, -3, empty; see omp_num_threads_from_env) is
// dropped, as libgomp ignores it too (set_num_threads then takes one thread per core). Each
// change is said in one note.
void settle_thread_count() {
  const char* text = std::getenv("OMP_NUM_THREADS");
  if (text == nullptr) return;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int most = kThreadsPerCore * cores;
  const int count = omp_num_threads_from_env();
  if (count == 0) {
    note(fmt::format("OMP_NUM_THREADS='{}' is not a thread count from 1 to 999999; ignored: one "
                     "thread per core ({})", text, cores));
    ::unsetenv("OMP_NUM_THREADS");
  } else if (count > most) {
    note(fmt::format("OMP_NUM_THREADS={} is more than {}x the {} cores; using {}", text,
                     kThreadsPerCore, cores, most));
    ::setenv("OMP_NUM_THREADS", std::to_string(most).c_str(), 1);
  }
}

}  // namespace

void say(const std::string& line) { std::fputs((line + "\n").c_str(), stderr); }

void hold_closed_standard_descriptors() {
  for (const int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    // open takes the lowest free descriptor: this one, as those below it are open by now.
    ::open("/dev/null", fd == STDOUT_FILENO ? O_RDONLY : O_RDWR);
  }
}

// How long an idle OpenMP thread spins before it sleeps. libgomp's default (neither
// OMP_WAIT_POLICY nor GOMP_SPINCOUNT set) is 300,000 spins, milliseconds on these CPUs, at every
// barrier: when the cores are shared with other processes, each parallel region then waits for a
// descheduled partner while the finished thread burns the core it needs, and a small model's
// step slows many times over (docs/PERFORMANCE.md, Threads). libgomp reads the variables once as
// it loads, before main, so tinygpt sets a short spin and re-executes itself once. Setting either variable (OMP_WAIT_POLICY=active for libgomp's default) skips this.
// The thread count is settled first, so that libgomp in the re-executed process reads a sane one
// (and warns of nothing the first process's libgomp already warned of).
void settle_openmp_environment(char** argv) {
  settle_thread_count();
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  if (::setenv("GOMP_SPINCOUNT", "1000", 1) != 0) return;
  ::execv("/proc/self/exe", argv);  // returns only if it failed: carry on with the defaults
}

void flush_stdout() {
  if (std::fflush(stdout) != 0) {
    throw std::system_error(errno, std::generic_category(), "cannot write to standard output");
  }
}

std::string stdout_failure(int error) {
  const bool flushed = std::fflush(stdout) == 0;
  if (!flushed) error = errno;
  std::cout.flush();  // CLI11 prints --help and --version through std::cout
  if (flushed && std::ferror(stdout) == 0 && std::cout) return "";
  return error == 0 ? "cannot write to standard output"
                    : fmt::format("cannot write to standard output: {}", std::strerror(error));
}

}  // namespace tinygpt::cli
