#pragma once
// Several files of one directory replaced together, or not at all, and a lock that keeps
// readers from seeing a commit half done.
//
// The protocol: each file is staged as "<name>.partial" and synced, then a commit record listing
// the names is written atomically, then the staged files are renamed into place and the record
// removed. A writer killed before the record leaves the previous files untouched (the next
// recovery discards the staged ones); one killed after it is completed by the next recovery.
#include <string>
#include <utility>
#include <vector>

namespace tinygpt::io {

inline constexpr const char* kCommitRecord = ".checkpoint-commit";
inline constexpr const char* kStagedSuffix = ".partial";

// An exclusive flock on a directory, held while a commit stages and renames its files and while
// a reader recovers and reads them. Without it a reader (tinygpt sample during training) would
// discard files a writer had staged, taking them for a crashed commit's. The kernel drops the
// lock when its holder dies. Throws IOError naming the directory.
class DirectoryLock {
 public:
  explicit DirectoryLock(const std::string& dir);
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;
  ~DirectoryLock();

 private:
  int fd_;
};

using NamedFiles = std::vector<std::pair<std::string, std::string>>;  // {file name, bytes}

// Writes `files` into `dir` (created if missing) as one commit, under the directory's lock.
void commit_files(const std::string& dir, const NamedFiles& files);

// Completes a commit whose record was written, and discards staged files of one that was not.
// The caller holds `dir`'s DirectoryLock.
void recover_commit(const std::string& dir);

// True when `dir` holds a commit record, i.e. a commit the next recovery completes.
bool has_commit_record(const std::string& dir);

}  // namespace tinygpt::io
