#pragma once
// Runs the real build/tinygpt binary from a test: arguments go straight to posix_spawn (no shell,
// so no quoting), stdout and stderr are captured separately, and the result says whether the
// process exited (with which code), was killed by a signal, or overran its time limit.
//
//   const CliResult r = run_cli({"eval", "--model", dir, "--data", "builtin:toy", "--json"});
//   CHECK(r.exited_with(0));
//
// CliProcess is the same, started in the background: the crash tests kill it while it works.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace tinygpt::testing {

inline std::string tinygpt_binary() { return TINYGPT_BINARY_DIR "/tinygpt"; }

struct CliOptions {
  std::string cwd;            // working directory of the child; empty: the test's own
  bool close_stdin = false;   // true: fd 0 is closed; false: stdin reads /dev/null
  std::chrono::milliseconds timeout{60'000};  // then SIGKILL, and timed_out is set
  bool close_stdout = false;  // true: fd 1 is closed (and nothing is captured)
  std::string stdout_path{};  // non-empty: fd 1 writes to this file (/dev/full), not captured
  std::vector<std::string> env{};  // "NAME=value" entries added to the child's environment
  std::string program{};  // the executable to run; empty: build/tinygpt
};

struct CliResult {
  std::vector<std::string> args;
  int exit_code = -1;  // when the process exited
  int signal = 0;      // when a signal ended it (including the timeout's SIGKILL)
  bool timed_out = false;
  std::string out;
  std::string err;

  bool exited() const { return signal == 0 && !timed_out; }
  bool exited_with(int code) const { return exited() && exit_code == code; }
  // stderr split at '\n' (a final newline ends the last line, it does not start another).
  std::vector<std::string> err_lines() const {
    std::vector<std::string> lines;
    std::string line;
    std::istringstream in(err);
    while (std::getline(in, line)) lines.push_back(line);
    return lines;
  }
  // The command and how it ended, for INFO/CAPTURE in a failing test.
  std::string describe() const {
    std::string text = "tinygpt";
    for (const auto& a : args) text += " '" + a + "'";
    if (timed_out) {
      text += "\n  timed out";
    } else if (signal != 0) {
      text += "\n  killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
    } else {
      text += "\n  exit code " + std::to_string(exit_code);
    }
    return text + "\n  stdout: " + out.substr(0, 2000) + "\n  stderr: " + err.substr(0, 2000);
  }
};

class CliProcess {
 public:
  explicit CliProcess(std::vector<std::string> args, const CliOptions& options = {})
      : options_(options) {
    result_.args = std::move(args);
    int out_pipe[2], err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) fail("pipe2");
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
      close_both(out_pipe);
      fail("pipe2");
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (options.close_stdin) {
      posix_spawn_file_actions_addclose(&actions, STDIN_FILENO);
    } else {
      posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    }
    // dup2 clears O_CLOEXEC on the copies, so the child keeps exactly fds 1 and 2.
    if (options.close_stdout) {
      posix_spawn_file_actions_addclose(&actions, STDOUT_FILENO);
    } else if (!options.stdout_path.empty()) {
      posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, options.stdout_path.c_str(),
                                       O_WRONLY | O_CREAT | O_TRUNC, 0644);
    } else {
      posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
    }
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
    if (!options.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str());

    const std::string binary = options.program.empty() ? tinygpt_binary() : options.program;
    std::vector<char*> argv{const_cast<char*>(binary.c_str())};
    for (auto& a : result_.args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> variables = child_environment(options.env);
    std::vector<char*> envp;
    for (auto& v : variables) envp.push_back(v.data());
    envp.push_back(nullptr);
    const int status = ::posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    out_fd_ = out_pipe[0];
    err_fd_ = err_pipe[0];
    if (status != 0) {
      pid_ = -1;
      close_reads();
      errno = status;
      fail("posix_spawn " + binary);
    }
    deadline_ = Clock::now() + options.timeout;
  }
  CliProcess(const CliProcess&) = delete;
  CliProcess& operator=(const CliProcess&) = delete;
  ~CliProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    close_reads();
  }

  pid_t pid() const { return pid_; }

  // Collects output until the process closes its stdout and stderr (it has ended) or `limit`
  // passes; true if it ended. The time limit of the options still applies.
  bool wait_for(std::chrono::milliseconds limit) {
    const auto until = std::min(deadline_, Clock::now() + limit);
    while (out_fd_ >= 0 || err_fd_ >= 0) {
      // Rounded up, and polled at least once: an end already there counts even at the limit.
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now());
      pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};  // fd -1 is ignored
      const int ready = ::poll(fds, 2, static_cast<int>(std::max<int64_t>(0, left.count())));
      if (ready < 0 && errno != EINTR) fail("poll");
      if (ready > 0) {
        drain(fds[0], out_fd_, result_.out);
        drain(fds[1], err_fd_, result_.err);
      } else if (Clock::now() >= until) {
        return false;
      }
    }
    return true;
  }

  void send_signal(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
  }

  // Waits for the end (killing the process once the time limit passes) and reaps it.
  CliResult finish() {
    if (pid_ > 0 && !wait_for(std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline_ - Clock::now()))) {
      result_.timed_out = true;
      ::kill(pid_, SIGKILL);
      wait_for(std::chrono::milliseconds(5'000));  // what it wrote before it died
    }
    close_reads();
    if (pid_ > 0) {
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0) {
        if (errno != EINTR) fail("waitpid");
      }
      pid_ = -1;
      if (WIFEXITED(status)) result_.exit_code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) result_.signal = WTERMSIG(status);
    }
    return result_;
  }

 private:
  using Clock = std::chrono::steady_clock;

  [[noreturn]] static void fail(const std::string& what) {
    throw std::runtime_error("run_cli: " + what + ": " + std::strerror(errno));
  }
  // This process's environment with `changes` ("NAME=value") in place of the same names.
  static std::vector<std::string> child_environment(const std::vector<std::string>& changes) {
    const auto name_of = [](const std::string& v) { return v.substr(0, v.find('=')); };
    std::vector<std::string> variables;
    for (char** v = environ; *v != nullptr; ++v) {
      const std::string variable = *v;
      const bool changed = std::any_of(changes.begin(), changes.end(), [&](const std::string& c) {
        return name_of(c) == name_of(variable);
      });
      if (!changed) variables.push_back(variable);
    }
    variables.insert(variables.end(), changes.begin(), changes.end());
    return variables;
  }
  static void close_both(int fds[2]) {
    ::close(fds[0]);
    ::close(fds[1]);
  }
  void close_reads() {
    if (out_fd_ >= 0) ::close(out_fd_);
    if (err_fd_ >= 0) ::close(err_fd_);
    out_fd_ = err_fd_ = -1;
  }
  // Reads what is ready on one pipe; closes it at end of file.
  static void drain(const pollfd& p, int& fd, std::string& into) {
    if (fd < 0 || (p.revents & (POLLIN | POLLHUP | POLLERR)) == 0) return;
    char buffer[1 << 14];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      into.append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      ::close(fd);
      fd = -1;
    }
  }

  CliOptions options_;
  CliResult result_;
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  Clock::time_point deadline_;
};

// Runs tinygpt with `args` to its end.
inline CliResult run_cli(std::vector<std::string> args, const CliOptions& options = {}) {
  return CliProcess(std::move(args), options).finish();
}

}  // namespace tinygpt::testing
