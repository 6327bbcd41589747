#include "tinygpt/io/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "tinygpt/autograd/file_kind.hpp"
#include "tinygpt/autograd/memory.hpp"

namespace tinygpt::io {
namespace {

// Throws IOError "<operation>: <what the format says>: <strerror of the current errno>" (no
// operation when it is empty). errno is read before anything else runs; std::error_code's message
// is thread-safe, unlike std::strerror's buffer.
template <class... Args>
[[noreturn]] void fail_in(Operation operation, fmt::format_string<Args...> what, Args&&... args) {
  const int error = errno;
  throw IOError(std::move(operation),
                fmt::format("{}: {}", fmt::format(what, std::forward<Args>(args)...),
                            std::error_code(error, std::generic_category()).message()));
}

template <class... Args>
[[noreturn]] void fail(fmt::format_string<Args...> what, Args&&... args) {
  fail_in(Operation(""), what, std::forward<Args>(args)...);
}

// Closes the descriptor it owns; close errors after a successful write are checked explicitly.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  // Closes now and reports whether close succeeded (NFS and friends report write errors here).
  bool close() { return ::close(std::exchange(fd_, -1)) == 0; }

 private:
  int fd_;
};

// Removes the temporary file unless the rename consumed it.
class TemporaryFile {
 public:
  explicit TemporaryFile(std::string path) : path_(std::move(path)) {}
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  ~TemporaryFile() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }
  void release() { path_.clear(); }

 private:
  std::string path_;
};

// Creates a fresh file beside the target, named after it and hidden. O_EXCL guarantees it is
// ours; the mode 0666 goes through the umask like any ordinary file the process creates.
std::pair<std::string, int> create_temporary(const std::filesystem::path& target) {
  static std::atomic<unsigned> counter{0};
  // A target name of up to NAME_MAX (255) bytes leaves no room for the dot and the suffix (up
  // to 24 bytes): the start of the name is enough to tell whose temporary copy it is.
  constexpr size_t kNameBytesKept = 200;
  const std::string named_after = target.filename().string().substr(0, kNameBytesKept);
  const std::filesystem::path dir = target.parent_path();
  for (int attempt = 0;; ++attempt) {
    const std::string name = fmt::format(".{}.tmp-{}-{}", named_after, ::getpid(), counter.fetch_add(1));
    const std::string path = (dir / name).string();
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return {path, fd};
    // A leftover of a crashed process with the same pid: try the next name.
    if (errno != EEXIST || attempt == 100) {
      fail_in(Operation("write_file_atomic"), "cannot create a temporary file beside '{}'", target.string());
    }
  }
}

void write_all(int fd, std::string_view bytes, const std::string& what) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot write {}", what);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

// Writes, fsyncs and closes `file`; `what` names it in errors.
void write_sync_close(FileDescriptor& file, std::string_view bytes, const std::string& what) {
  write_all(file.get(), bytes, what);
  if (::fsync(file.get()) != 0) fail("cannot fsync {}", what);
  if (!file.close()) fail("cannot close {}", what);
}

std::string parent_of(const std::filesystem::path& target) {
  return target.has_parent_path() ? target.parent_path().string() : ".";
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view bytes) {
  const std::filesystem::path target(path);
  if (target.filename().empty()) {
    throw IOError(Operation("write_file_atomic"), fmt::format("'{}' names a directory, not a file", path));
  }
  auto [temporary_path, fd] = create_temporary(target);
  TemporaryFile temporary(temporary_path);
  FileDescriptor file(fd);
  write_sync_close(file, bytes,
                   fmt::format("'{}' (through its temporary copy '{}')", path, temporary.path()));
  if (::rename(temporary.path().c_str(), path.c_str()) != 0) {
    fail_in(Operation("write_file_atomic"), "cannot rename '{}' over '{}'", temporary.path(), path);
  }
  temporary.release();
  sync_directory(parent_of(target));  // the rename is durable only once the entry is on disk
}

void write_file_synced(const std::string& path, std::string_view bytes) {
  // Never through a symbolic link: a link planted in a folder must not redirect the write.
  FileDescriptor file(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666));
  if (file.get() < 0) fail_in(Operation("write_file_synced"), "cannot create '{}'", path);
  write_sync_close(file, bytes, fmt::format("'{}'", path));
}

void check_writable(const std::string& dir) {
  // An unnamed file (O_TMPFILE) first: a kill during the test then leaves no name behind. A file
  // system without it gets a named probe, removed at once.
  {
    FileDescriptor unnamed(::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600));
    if (unnamed.get() >= 0) {
      write_sync_close(unnamed, "", fmt::format("an unnamed write test of directory '{}'", dir));
      return;
    }
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) fail("cannot write in directory {}", dir);
  }
  const std::string path =
      (std::filesystem::path(dir) / fmt::format(".tinygpt-write-test-{}", ::getpid())).string();
  FileDescriptor file(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
  if (file.get() < 0) fail("cannot write in directory {}", dir);
  TemporaryFile probe(path);
  write_sync_close(file, "", fmt::format("'{}' (a write test of the directory)", path));
}

void refuse_symlink(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_symlink(path, ec)) {
    throw IOError(fmt::format("{} is a symbolic link; tinygpt does not write through links: "
                              "remove it", path));
  }
}

void refuse_in_the_way(const std::string& path, EntryKind expected, std::string_view what) {
  if (expected == EntryKind::folder) refuse_symlink(path);  // a file's link is replaced by its rename
  std::error_code ec;
  const std::filesystem::file_type type = std::filesystem::symlink_status(path, ec).type();
  // A path that cannot be looked at (a loop of links on the way, no search permission) is the
  // run folder's problem, which the command names with its reason when it opens that folder.
  if (ec || type == std::filesystem::file_type::not_found) return;
  const bool folder = type == std::filesystem::file_type::directory;
  if (folder != (expected == EntryKind::folder)) {
    throw IOError(fmt::format("{} is {} where tinygpt writes {} (a {}): remove or rename it", path,
                              folder ? "a folder" : "a file", what, folder ? "file" : "folder"));
  }
}

bool create_directory(const std::string& dir, std::string_view what) {
  std::error_code ec;
  const bool created = std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw IOError(fmt::format("cannot create {} {}: {}", what, dir, ec ? ec.message() : "not a directory"));
  }
  return created;
}

std::filesystem::file_type file_type_of(const std::string& path, std::string_view what) {
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  // status() reports a missing path (or a file where a folder should be) as not_found, no error.
  if (ec && status.type() != std::filesystem::file_type::not_found) {
    throw IOError(fmt::format("cannot read {} {}: {}", what, path, ec.message()));
  }
  return status.type();
}

void remove_all(const std::string& path, std::string_view what) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) throw IOError(fmt::format("cannot remove {} {}: {}", what, path, ec.message()));
}

void sync_directory(const std::string& dir) {
  FileDescriptor directory(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (directory.get() < 0 || ::fsync(directory.get()) != 0) {
    fail("cannot fsync directory '{}', so its latest changes may not survive a crash", dir);
  }
}

FileReader::FileReader(const std::string& path)
    : path_(path), fd_(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)) {
  struct stat info {};
  // A socket cannot be opened at all (ENXIO): its kind, not "no such device", says why.
  if (fd_ < 0 && !(errno == ENXIO && ::stat(path.c_str(), &info) == 0 && S_ISSOCK(info.st_mode))) {
    fail("cannot open {}", path);
  }
  if (fd_ >= 0 && ::fstat(fd_, &info) != 0) {
    const int error = errno;
    ::close(fd_);
    errno = error;
    fail("cannot stat {}", path);
  }
  if (!S_ISREG(info.st_mode)) {
    if (fd_ >= 0) ::close(fd_);
    throw IOError(fmt::format("cannot read {}: it is {}, not a regular file", path, file_kind(info.st_mode)));
  }
  // Blocking again, as reads of a regular file are anyway; only the open had to be spared.
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  size_ = static_cast<uint64_t>(info.st_size);
}

FileReader::~FileReader() { ::close(fd_); }

std::string FileReader::read(uint64_t max_bytes) {
  // The size it was opened with straight into the string (a model's half gigabyte copied once),
  // then whatever it has grown by since, a chunk at a time.
  std::string bytes;
  bytes.reserve(static_cast<size_t>(std::min(size_, max_bytes)));
  advise_huge_pages(bytes.data(), bytes.capacity());  // before the zeros below touch its pages
  bytes.resize(static_cast<size_t>(std::min(size_, max_bytes)));
  bytes.resize(read_at(0, bytes.data(), bytes.size()));
  if (bytes.size() < size_ || bytes.size() == max_bytes) return bytes;  // cut short, or all that was asked
  char chunk[1 << 16];
  while (bytes.size() < max_bytes) {
    const size_t n = read_at(bytes.size(), chunk, static_cast<size_t>(std::min<uint64_t>(sizeof chunk, max_bytes - bytes.size())));
    if (n == 0) break;
    bytes.append(chunk, n);
  }
  return bytes;
}

size_t FileReader::read_at(uint64_t offset, char* out, size_t count) const {
  size_t filled = 0;
  while (filled < count) {
    const ssize_t n = ::pread(fd_, out + filled, count - filled, static_cast<off_t>(offset + filled));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot read {}", path_);
    }
    filled += static_cast<size_t>(n);
  }
  return filled;
}

std::string read_file(const std::string& path, uint64_t max_bytes) {
  FileReader file(path);
  const auto too_large = [&](uint64_t bytes) {
    return IOError(fmt::format("cannot read {}: it holds {} bytes or more, beyond the limit of {} "
                               "for such a file", path, bytes, max_bytes));
  };
  if (file.size() > max_bytes) throw too_large(file.size());
  // One byte past the limit tells a file that grew while it was read from one that fits.
  std::string bytes = file.read(max_bytes == kNoLimit ? kNoLimit : max_bytes + 1);
  if (bytes.size() > max_bytes) throw too_large(bytes.size());
  return bytes;
}

}  // namespace tinygpt::io
