#pragma once
// Several files of one directory replaced together, or not at all; a manifest of their
// checksums; a lock that keeps readers from seeing a commit half done.
//
// The protocol, for a directory D:
//   1. every file is written and synced into the staging folder D/.tinygpt-staging/ (hidden, so
//      no file of the user's can collide with a staged one), with the commit record
//      {names, sizes, SHA-256} beside them;
//   2. the record is renamed to D/.tinygpt-commit.json: this is the commit;
//   3. each staged file is renamed into D, the record is renamed over D/checkpoint.json (the
//      manifest of the committed files, kept for the checksums) and the staging folder removed.
// A writer killed before step 2 leaves D's files untouched (the next writer deletes the staging
// folder); one killed after it is completed by the next writer. A save that fails (a full disk)
// deletes its staging folder before it reports the error.
//
// Readers never change D: they read the committed state as it is, taking each file the record
// names from the staging folder if it is still there, and check every file against its
// checksum. They need no write permission.
#include <csignal>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tinygpt/io/safetensors.hpp"

namespace tinygpt::io {

inline constexpr const char* kStagingDir = ".tinygpt-staging";
inline constexpr const char* kCommitRecord = ".tinygpt-commit.json";
inline constexpr const char* kManifest = "checkpoint.json";

// A flock on a directory: exclusive while a commit stages and renames its files, shared while a
// reader reads them. Without it a reader (tinygpt sample during training) could read a file
// renamed away under it. The kernel drops the lock when its holder dies. Opening the directory
// read-only is enough, so a read-only user can take the shared lock. Throws IOError naming the
// directory.
// Waiting never lasts for ever: after a second it says once on stderr who holds the folder (the
// training run's pid, when one does), and it gives up with IOError after lock_wait_seconds(), or
// as soon as the flag given to set_wait_interrupt is set (a signal handler's).
class DirectoryLock {
 public:
  enum class Mode { shared, exclusive };
  DirectoryLock(const std::string& dir, Mode mode);
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;
  ~DirectoryLock();

 private:
  int fd_;
};

// How long a DirectoryLock waits: $TINYGPT_LOCK_TIMEOUT seconds if set, else 60. Throws ValueError
// naming the variable when it is set to anything but a finite number above 0.
double lock_wait_seconds();
// A flag (set by a signal handler) that ends a DirectoryLock's wait at once; nullptr: none.
void set_wait_interrupt(const volatile std::sig_atomic_t* flag);
// The signal that flag holds, 0 for none (or no flag): other long work (drawing pictures) asks it
// between its parts.
int interrupt_signal();

using NamedFiles = std::vector<std::pair<std::string, std::string>>;  // {file name, bytes}

// True for a name a commit may hold: a plain file name of the directory (not empty, ".", "..",
// no '/' or NUL) and not one of the protocol's own names above, nor the run lock (run_lock.hpp).
bool is_plain_file_name(const std::string& name);

// Writes `files` into `dir` (created if missing) as one commit, under the exclusive lock.
// Throws ValueError for a name that is_plain_file_name refuses or given twice, IOError when a
// write fails (the staged files are deleted then, and `dir`'s files are as they were).
// A file named in `appended` (a log written a line at a time) whose bytes `dir` already holds
// exactly stays in place: synced and recorded, not staged and renamed, so a reader following it
// (tail -f) keeps following it. Since loads read such a file as its committed prefix
// (read_prefix), lines appended after a commit never damage it.
void commit_files(const std::string& dir, const NamedFiles& files,
                  const std::set<std::string>& appended = {});

// Completes a commit whose record was written and deletes the staging folder of one that was
// not. The caller holds `dir`'s exclusive DirectoryLock.
void recover_commit(const std::string& dir);

// True when `dir` holds a committed state: a manifest or a commit record.
bool has_commit(const std::string& dir);

// The size and SHA-256 of a committed file, as the manifest records them.
struct FileChecksum {
  uint64_t size = 0;
  std::string sha256;
};

// A read-only view of the committed files of a directory, holding its shared lock for as long
// as it lives. A directory with neither manifest nor record (a checkpoint written by another
// tool) is read as it is, unchecked.
class CommittedFiles {
 public:
  explicit CommittedFiles(const std::string& dir);

  const std::string& dir() const { return dir_; }
  // Whether the committed files carry checksums (a manifest or record exists).
  bool checked() const { return manifest_.has_value(); }
  // Whether `name` is part of the committed state (without a manifest: whether it exists).
  bool contains(const std::string& name) const;
  // Where the committed `name` is now (inside the staging folder during a roll-forward).
  std::string path_of(const std::string& name) const;
  // The bytes of `name`, checked against the manifest's size and SHA-256. Throws IOError when it
  // is missing or unreadable, FormatError naming the file when it does not match its checksum.
  std::string read(const std::string& name) const;
  // The committed bytes of an append-only file (a log): its first bytes, as many as the manifest
  // records, checked as read() does. Lines appended after the commit are not part of it.
  std::string read_prefix(const std::string& name) const;
  // The safetensors file `name` decoded as it is read (read_safetensors: no copy of the whole
  // file), checked as read() checks it: one that does not match its checksum is refused as
  // damaged, whatever else is wrong with it, and none of its tensors is returned. `sha256`, when
  // given, receives the file's SHA-256, computed as it is read (also where no manifest records it).
  SafetensorsFile read_safetensors(const std::string& name, std::string* sha256 = nullptr) const;

 private:
  std::string read_checked(const std::string& name, bool appended_after_commit) const;
  // The path of the committed `name`; IOError when the committed state has no such file.
  std::string committed_path(const std::string& name) const;
  // "<path> is damaged" errors: a size other than the manifest's, a different SHA-256.
  FormatError damaged(const std::string& name, uint64_t size) const;
  FormatError hash_differs(const std::string& name) const;

  std::string dir_;
  DirectoryLock lock_;
  bool rolling_forward_ = false;  // a commit record exists: staged files may still be pending
  std::optional<std::map<std::string, FileChecksum>> manifest_;
  std::string manifest_path_;
};

}  // namespace tinygpt::io
