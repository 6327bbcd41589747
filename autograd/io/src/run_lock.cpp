#include "tinygpt/io/run_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <limits>
#include <string>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "tinygpt/io/atomic_file.hpp"

namespace tinygpt::io {
namespace {

constexpr std::chrono::milliseconds kUnnamedHolderWait{200};

std::string reason(int error) { return std::error_code(error, std::generic_category()).message(); }

// Signal 0 checks without sending; EPERM: it exists, as another user's. 0 and values beyond pid_t
// would ask about process groups.
bool process_exists(long long pid) {
  return pid > 0 && pid <= std::numeric_limits<pid_t>::max() &&
         (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

// The process id the holder wrote into the lock file, "" when it has not written it yet or the
// process is gone (the file names the holder that died, and the lock is someone else's).
std::string holder_of(int fd) {
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  const std::string pid = pid_in_lock_text(n > 0 ? std::string(text, static_cast<size_t>(n)) : "");
  return !pid.empty() && process_exists(std::stoll(pid)) ? pid : "";
}

}  // namespace

std::string pid_in_lock_text(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  const bool pid = !text.empty() && text.size() <= 10 && text.find_first_not_of("0123456789") == std::string::npos;
  return pid ? text : "";
}

std::string run_lock_holder(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / kRunLockFile).string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return "";
  // A shared lock granted at once: no run holds the file, whatever pid it still names.
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  const std::string pid = held ? holder_of(fd) : "";
  ::close(fd);
  return pid;
}

RunLock::RunLock(const std::string& dir)
    : path_((std::filesystem::path(dir) / kRunLockFile).string()),
      fd_(::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666)) {
  created_ = fd_ >= 0;
  // Not through a symbolic link: the lock writes its holder's pid into the file.
  if (fd_ < 0 && errno == EEXIST) {
    refuse_symlink(path_);
    fd_ = ::open(path_.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  }
  if (fd_ < 0) {
    throw IOError(fmt::format("cannot create the run lock {}: {}", path_, reason(errno)));
  }
  // A holder that names no live process is either a run between its lock and its pid or another
  // command asking run_lock_holder for a moment: both let go or name themselves at once.
  const auto start = std::chrono::steady_clock::now();
  while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    if (error == EINTR) continue;
    const std::string pid = error == EWOULDBLOCK ? holder_of(fd_) : "";
    if (error == EWOULDBLOCK && pid.empty() &&
        std::chrono::steady_clock::now() - start < kUnnamedHolderWait) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    ::close(fd_);
    if (error == EWOULDBLOCK) {
      throw IOError(fmt::format(
          "{} is in use by another training run{}; wait for it to end or stop it "
          "(tinygpt sample/eval/heads may read it meanwhile)",
          dir, pid.empty() ? "" : " (pid " + pid + ")"));
    }
    throw IOError(fmt::format("cannot lock {}: {}", path_, reason(error)));
  }
  const std::string pid = fmt::format("{}\n", ::getpid());
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const int error = errno;
    ::close(fd_);
    throw IOError(fmt::format("cannot write the run lock {}: {}", path_, reason(error)));
  }
}

RunLock::~RunLock() {
  if (fd_ < 0) return;
  // Empty again at rest, so a run that was refused leaves the file as it found it; a holder that
  // died leaves its pid, which the next one overwrites.
  const int emptied = ::ftruncate(fd_, 0);  // if it fails, a stale pid is only informational
  static_cast<void>(emptied);
  ::close(fd_);  // closing the descriptor releases the lock
}

void RunLock::remove() {
  ::unlink(path_.c_str());  // while still locked: no other run holds it meanwhile
  ::close(fd_);
  fd_ = -1;
}

}  // namespace tinygpt::io
