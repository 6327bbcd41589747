#pragma once
// Whole-file reads and crash-safe whole-file writes, for checkpoints and run records.
//
// A checkpoint that is half written when the process dies (or the disk fills) must never replace
// a good one, so writes go to a temporary file beside the target and are renamed over it only
// once the bytes are on disk.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "tinygpt/autograd/error.hpp"

namespace tinygpt::io {

// A file could not be read or written. The message names the operation, the path and the
// system's reason (strerror).
class IOError : public Error {
 public:
  using Error::Error;
};

// Replaces `path` with exactly `bytes`: writes a temporary file in the same directory, fsyncs it,
// renames it over `path` and fsyncs the directory. If anything fails before the rename, the
// temporary file is removed, `path` is left as it was, and IOError is thrown.
void write_file_atomic(const std::string& path, std::string_view bytes);

// Writes `bytes` to `path` (created or truncated) and fsyncs it. Not atomic: for staging files
// that a later step renames into place (see checkpoint.hpp's commit protocol).
void write_file_synced(const std::string& path, std::string_view bytes);

// Creates, syncs and deletes a hidden file named after this process in `dir`: IOError
// "cannot write in directory DIR: <reason>" when the process cannot write there (read-only, no
// permission, full disk).
void check_writable(const std::string& dir);

// IOError "<path> is a symbolic link; tinygpt does not write through links: remove it" when
// `path` is one: a file or folder a command writes in place (not by a rename, which replaces a
// link itself) must not send the bytes outside the folder it belongs to.
void refuse_symlink(const std::string& path);

// What a command will write at a path.
enum class EntryKind { file, folder };

// Before a command works for minutes to write `path` at its end: IOError "<path> is a folder where
// tinygpt writes <what> (a file): remove or rename it" when a folder is in the way of a file, or
// the same for a file (or a symbolic link, as refuse_symlink says) in the way of a folder.
void refuse_in_the_way(const std::string& path, EntryKind expected, std::string_view what);

// Creates `dir` and its missing parents; true when it created `dir`. IOError "cannot create
// <what> <dir>: <reason>" when it cannot (a file in the way, no permission), or when `dir` is there
// and is not a directory: one wording for every folder a command writes into.
bool create_directory(const std::string& dir, std::string_view what);

// What is at `path`, through links: file_type::not_found when nothing is (or a folder on the way
// is a file). A path that cannot be looked at -- a loop of links, a name too long, a folder
// without search permission -- throws IOError "cannot read <what> <path>: <reason>" instead of
// passing for a missing one or escaping as the standard library's own wording.
std::filesystem::file_type file_type_of(const std::string& path, std::string_view what);

// Removes `path` and, if it is a folder, everything in it (a link is removed, not followed).
// IOError "cannot remove <what> <path>: <reason>" when it cannot.
void remove_all(const std::string& path, std::string_view what);

// Makes the entries of `dir` (files created or renamed in it) durable.
void sync_directory(const std::string& dir);

// The most a reader takes of a file whose size no manifest records, by kind: JSON text (a config,
// a tokenizer, a run's state, a manifest) is parsed whole in memory, and a log holds a line per
// step. Weights are read as large as the file is (kNoLimit): a regular file's size is known.
inline constexpr uint64_t kMaxJsonBytes = uint64_t{64} << 20;
inline constexpr uint64_t kMaxLogBytes = uint64_t{1} << 30;
inline constexpr uint64_t kNoLimit = UINT64_MAX;

// A regular file open for reading: the one way tinygpt opens a file it reads. Anything else -- a
// FIFO (opening one would wait for a writer), a device (/dev/zero never ends), a socket, a
// directory -- is refused at once with IOError "cannot read <path>: it is a FIFO (named pipe), not
// a regular file". Links are followed: a checkpoint may be reached through one (Hugging Face's
// cache links each file of a snapshot to its blob), and what it reaches is checked all the same.
class FileReader {
 public:
  explicit FileReader(const std::string& path);
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;
  ~FileReader();

  // Its size when it was opened.
  uint64_t size() const { return size_; }
  // Its first bytes, at most `max_bytes` (fewer when it is shorter): the rest is never read.
  std::string read(uint64_t max_bytes);
  // Its bytes [offset, offset + count) into `out`; returns how many there were (fewer only where
  // the file ends). Safe to call from several threads at once: it moves no file position.
  size_t read_at(uint64_t offset, char* out, size_t count) const;

 private:
  std::string path_;
  int fd_;
  uint64_t size_ = 0;
};

// The whole content of the regular file `path` (FileReader's refusals); IOError naming its size
// and the limit, before reading it, when it holds more than `max_bytes`.
std::string read_file(const std::string& path, uint64_t max_bytes = kNoLimit);

}  // namespace tinygpt::io
