#pragma once
// The lock of a whole training run on its directory: one writer at a time.
//
// A training run (start, --force or --resume) holds an exclusive, non-blocking flock on
// DIR/.tinygpt-run.lock from its first moment to its end, so a second run into the same
// directory fails at once instead of mixing its checkpoints with the first's. It is a lock
// file, not the directory itself, so it never conflicts with the commit's DirectoryLock
// (commit.hpp): readers (tinygpt sample while a run trains) keep taking that one shared.
// The holder writes its pid into the file and empties it when it lets go. The kernel drops the
// lock when its holder dies; the file stays (removing a lock file that another process may have
// opened would let two runs hold "the" lock).
#include <string>

namespace tinygpt::io {

inline constexpr const char* kRunLockFile = ".tinygpt-run.lock";

// The process id a lock file's text holds ("4242\n"), or "" when it holds none (empty at rest,
// not yet written, or not a pid).
std::string pid_in_lock_text(std::string text);

// The pid of the training run that holds DIR's run lock now, or "" when no run holds it (whatever
// pid the file still names) or its holder names no live process.
std::string run_lock_holder(const std::string& dir);

class RunLock {
 public:
  // Creates (if missing) and locks DIR/.tinygpt-run.lock, writing this process's id into it.
  // Throws IOError "DIR is in use by another training run (pid N); ..." when another process
  // holds it (without the pid when the file names no live process), and IOError naming the file
  // when it cannot be created or locked.
  explicit RunLock(const std::string& dir);
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  ~RunLock();

  // Whether this lock created the file (it was not there before).
  bool created() const { return created_; }
  // Unlocks and deletes the lock file, for a run that created its directory and is refused
  // before writing anything else there (it leaves nothing).
  void remove();

 private:
  std::string path_;
  int fd_;
  bool created_ = false;
};

}  // namespace tinygpt::io
