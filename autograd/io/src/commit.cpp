#include "tinygpt/io/commit.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string_view>
#include <system_error>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/io/run_lock.hpp"
#include "tinygpt/io/safetensors.hpp"
#include "tinygpt/io/sha256.hpp"

namespace tinygpt::io {
namespace {

namespace fs = std::filesystem;

const volatile std::sig_atomic_t* g_wait_interrupt = nullptr;

using nlohmann::ordered_json;

constexpr int kManifestVersion = 1;
constexpr const char* kManifestFormat = "tinygpt-checkpoint";

std::string path_in(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / name).string();
}

std::string staging_of(const std::string& dir) { return path_in(dir, kStagingDir); }

// " (training run pid N holds the folder)" when a run holds the folder's run lock, else "".
std::string holder_note(const std::string& dir) {
  const std::string pid = run_lock_holder(dir);
  // None, or this process: a run waiting for its readers.
  if (pid.empty() || pid == std::to_string(::getpid())) return "";
  return fmt::format(" (training run pid {} holds the folder)", pid);
}

// Throws "<what>: <the reason errno gives>".
[[noreturn]] void fail(const std::string& what) {
  const int error = errno;
  throw IOError(fmt::format("{}: {}", what, std::error_code(error, std::generic_category()).message()));
}

void rename_or_throw(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) fail(fmt::format("cannot rename {} to {}", from, to));
}

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(path, ec));
}

using Manifest = std::vector<std::pair<std::string, FileChecksum>>;

std::string manifest_to_json(const Manifest& manifest) {
  ordered_json files = ordered_json::array();
  for (const auto& [name, sum] : manifest) {
    files.push_back({{"name", name}, {"size", sum.size}, {"sha256", sum.sha256}});
  }
  const ordered_json j = {
      {"format", kManifestFormat}, {"format_version", kManifestVersion}, {"files", files}};
  return j.dump(2) + "\n";
}

// Parses a manifest or commit record; every fault is a FormatError naming `path`. The names are
// checked, so a hostile record cannot make a reader or writer touch a file outside the folder.
Manifest manifest_from_json(const std::string& text, const std::string& path) {
  const auto bad = [&](const std::string& what) {
    return FormatError(fmt::format("{}: {}", path, what));
  };
  ordered_json j;
  try {
    j = ordered_json::parse(text);
  } catch (const ordered_json::exception& e) {
    throw bad(fmt::format("not valid JSON ({})", e.what()));
  }
  if (!j.is_object() || j.value("format", ordered_json()) != kManifestFormat) {
    throw bad(fmt::format("not a tinygpt checkpoint manifest (no \"format\": \"{}\")", kManifestFormat));
  }
  const auto version = j.find("format_version");
  if (version == j.end() || !version->is_number_integer() || *version != kManifestVersion) {
    throw bad(fmt::format("unsupported format_version {} (this tinygpt reads version {})",
                          version == j.end() ? "(missing)" : version->dump(), kManifestVersion));
  }
  const auto files = j.find("files");
  if (files == j.end() || !files->is_array()) throw bad("\"files\" must be a list");
  Manifest manifest;
  std::set<std::string> seen;
  for (const ordered_json& entry : *files) {
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
        !entry.contains("size") || !entry["size"].is_number_unsigned() ||
        !entry.contains("sha256") || !entry["sha256"].is_string()) {
      throw bad(fmt::format("bad file entry {} (expected {{\"name\", \"size\", \"sha256\"}})",
                            entry.dump().substr(0, 80)));
    }
    const std::string name = entry["name"].get<std::string>();
    if (!is_plain_file_name(name)) {
      throw bad(fmt::format("file name {} is not a plain file name of the checkpoint folder",
                            entry["name"].dump()));
    }
    if (!seen.insert(name).second) throw bad(fmt::format("file {} is listed twice", name));
    FileChecksum sum{entry["size"].get<uint64_t>(), entry["sha256"].get<std::string>()};
    if (sum.sha256.size() != 64 || sum.sha256.find_first_not_of("0123456789abcdef") != std::string::npos) {
      throw bad(fmt::format("file {}: sha256 must be 64 lowercase hex digits", name));
    }
    manifest.emplace_back(name, std::move(sum));
  }
  return manifest;
}

Manifest read_manifest(const std::string& path) {
  return manifest_from_json(read_file(path, kMaxJsonBytes), path);
}

// An open directory, closed when it goes out of scope.
class Directory {
 public:
  // `at` and `name` as openat takes them; a link at `name` is refused (ELOOP), never followed.
  Directory(int at, const std::string& name, const std::string& path)
      : fd_(::openat(at, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) {
    if (fd_ >= 0) return;
    if (errno == ELOOP || errno == ENOTDIR) {
      throw IOError(fmt::format("{} is a symbolic link or not a folder; tinygpt does not move files "
                                "out of it: remove it", path));
    }
    fail(fmt::format("cannot open {}", path));
  }
  Directory(const Directory&) = delete;
  Directory& operator=(const Directory&) = delete;
  ~Directory() { ::close(fd_); }
  int fd() const { return fd_; }

 private:
  int fd_;
};

// What `name` is inside the open folder `at`, links not followed; 0 when nothing is there.
mode_t entry_type(int at, const std::string& name, const std::string& path) {
  struct stat info {};
  if (::fstatat(at, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0) return info.st_mode & S_IFMT;
  if (errno != ENOENT) fail(fmt::format("cannot look at {}", path));
  return 0;
}

// Moves the staged files a written commit record names into place, then the record over the
// manifest. Safe to repeat after a crash at any point: a name no longer staged is in place.
// Every move is relative to the folder's own descriptors, and a record, staging folder or staged
// file that is a link is refused: a planted entry never moves a file from outside into the run.
void roll_forward(const std::string& dir) {
  const std::string record = path_in(dir, kCommitRecord);
  const Directory folder(AT_FDCWD, dir, dir);
  if (entry_type(folder.fd(), kCommitRecord, record) != S_IFREG) {
    throw FormatError(fmt::format("{} is damaged: not a regular file", record));
  }
  const Manifest manifest = read_manifest(record);
  const std::string staging = staging_of(dir);
  if (entry_type(folder.fd(), kStagingDir, staging) != 0) {
    const Directory staged(folder.fd(), kStagingDir, staging);
    for (const auto& [name, sum] : manifest) {
      const std::string from = path_in(staging, name);
      const mode_t type = entry_type(staged.fd(), name, from);
      if (type == 0) continue;  // moved before a crash
      if (type != S_IFREG) throw FormatError(fmt::format("{} is damaged: not a regular file", from));
      if (::renameat(staged.fd(), name.c_str(), folder.fd(), name.c_str()) != 0) {
        fail(fmt::format("cannot rename {} to {}", from, path_in(dir, name)));
      }
    }
  }
  sync_directory(dir);
  if (::renameat(folder.fd(), kCommitRecord, folder.fd(), kManifest) != 0) {
    fail(fmt::format("cannot rename {} to {}", record, path_in(dir, kManifest)));
  }
  sync_directory(dir);
}

// Whether `path` holds exactly `bytes`; if so it is synced, to be committed where it is.
bool holds_synced(const std::string& path, const std::string& bytes) {
  std::error_code ec;
  if (fs::is_symlink(path, ec)) return false;  // staged, so the commit replaces the link itself
  std::string current;
  try {
    current = read_file(path);
  } catch (const IOError&) {
    return false;  // missing: staged like any other file
  }
  if (current != bytes) return false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  const bool synced = fd >= 0 && ::fsync(fd) == 0;
  if (fd >= 0) ::close(fd);
  if (!synced) fail(fmt::format("cannot fsync {}", path));
  return true;
}

// The most a load reads of `name` when no manifest records its size: weights as large as they
// are, JSON text and logs up to their caps (atomic_file.hpp).
uint64_t unrecorded_limit(const std::string& name) {
  const auto ends_with = [&](std::string_view tail) {
    return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  if (ends_with(".safetensors")) return kNoLimit;
  return ends_with(".jsonl") ? kMaxLogBytes : kMaxJsonBytes;
}

// Deletes the staging folder; errors are ignored (a later writer retries).
void remove_staging(const std::string& dir) {
  std::error_code ec;
  fs::remove_all(staging_of(dir), ec);
}

}  // namespace

double lock_wait_seconds() {
  const char* text = std::getenv("TINYGPT_LOCK_TIMEOUT");
  if (text == nullptr) return 60.0;
  char* end = nullptr;
  errno = 0;
  const double seconds = std::strtod(text, &end);
  // Waiting 60 s, or for ever, in place of a value with a typo in it would hide the typo.
  if (end == text || *end != '\0' || errno == ERANGE || !std::isfinite(seconds) || seconds <= 0.0) {
    throw ValueError(fmt::format("TINYGPT_LOCK_TIMEOUT='{}' is not a number of seconds above 0 "
                                 "(unset it to wait the default 60 s)", text));
  }
  return seconds;
}

void set_wait_interrupt(const volatile std::sig_atomic_t* flag) { g_wait_interrupt = flag; }

int interrupt_signal() { return g_wait_interrupt != nullptr ? *g_wait_interrupt : 0; }

DirectoryLock::DirectoryLock(const std::string& dir, Mode mode)
    : fd_(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
  if (fd_ < 0) fail(fmt::format("cannot open checkpoint directory {} to lock it", dir));
  const auto start = std::chrono::steady_clock::now();
  const double limit = lock_wait_seconds();
  bool said = false;
  const auto give_up = [&](const std::string& why) {
    ::close(fd_);
    throw IOError(fmt::format("{} {}; nothing was read or changed", dir, why));
  };
  while (::flock(fd_, (mode == Mode::shared ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) {
      const int error = errno;
      ::close(fd_);
      errno = error;
      fail(fmt::format("cannot lock checkpoint directory {}", dir));
    }
    if (interrupt_signal() != 0) give_up("was still locked when a signal came");
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (waited >= limit) {
      give_up(fmt::format("stayed locked for {:g} s by another tinygpt process{} that is saving or "
                          "reading it and does not finish (stopped?); try again once it has",
                          limit, holder_note(dir)));
    }
    if (!said && waited >= 1.0) {
      fmt::print(stderr, "tinygpt: waiting for {}: another tinygpt process{} is saving or reading it "
                         "(giving up after {:g} s)\n", dir, holder_note(dir), limit);
      said = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

DirectoryLock::~DirectoryLock() { ::close(fd_); }  // closing the last descriptor releases the lock

bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of(std::string("/\0", 2)) == std::string::npos && name != kStagingDir &&
         name != kCommitRecord && name != kManifest && name != kRunLockFile;
}

void recover_commit(const std::string& dir) {
  if (exists(path_in(dir, kCommitRecord))) roll_forward(dir);
  if (exists(staging_of(dir))) {
    remove_all(staging_of(dir), "an unfinished commit's staging folder");  // it never wrote its record
    sync_directory(dir);
  }
}

void commit_files(const std::string& dir, const NamedFiles& files,
                  const std::set<std::string>& appended) {
  std::set<std::string> names;
  for (const auto& [name, bytes] : files) {
    if (!is_plain_file_name(name)) {
      throw ValueError(Operation("commit_files"), fmt::format("'{}' is not a plain file name, or is reserved "
                                   "by the commit protocol", name));
    }
    if (!names.insert(name).second) {
      throw ValueError(Operation("commit_files"), fmt::format("file '{}' given twice", name));
    }
  }
  create_directory(dir, "checkpoint directory");
  const DirectoryLock lock(dir, DirectoryLock::Mode::exclusive);
  recover_commit(dir);
  const std::string staging = staging_of(dir);
  try {
    if (::mkdir(staging.c_str(), 0777) != 0) fail(fmt::format("cannot create {}", staging));
    Manifest manifest;
    for (const auto& [name, bytes] : files) {
      if (appended.count(name) == 0 || !holds_synced(path_in(dir, name), bytes)) {
        write_file_synced(path_in(staging, name), bytes);
      }
      manifest.emplace_back(name, FileChecksum{bytes.size(), sha256_hex(bytes)});
    }
    const std::string staged_record = path_in(staging, kCommitRecord);
    write_file_synced(staged_record, manifest_to_json(manifest));
    sync_directory(staging);
    rename_or_throw(staged_record, path_in(dir, kCommitRecord));  // the commit
  } catch (...) {
    remove_staging(dir);  // a full disk gets its space back; the old files were never touched
    throw;
  }
  sync_directory(dir);
  roll_forward(dir);
  remove_staging(dir);
}

bool has_commit(const std::string& dir) {
  return exists(path_in(dir, kManifest)) || exists(path_in(dir, kCommitRecord));
}

CommittedFiles::CommittedFiles(const std::string& dir)
    : dir_(dir), lock_(dir, DirectoryLock::Mode::shared) {
  const std::string record = path_in(dir, kCommitRecord);
  const std::string manifest = path_in(dir, kManifest);
  rolling_forward_ = exists(record);
  manifest_path_ = rolling_forward_ ? record : exists(manifest) ? manifest : "";
  if (manifest_path_.empty()) return;
  manifest_.emplace();
  for (auto& [name, sum] : read_manifest(manifest_path_)) manifest_->emplace(name, std::move(sum));
}

bool CommittedFiles::contains(const std::string& name) const {
  return manifest_ ? manifest_->count(name) > 0 : exists(path_in(dir_, name));
}

std::string CommittedFiles::path_of(const std::string& name) const {
  if (rolling_forward_ && manifest_->count(name) > 0) {
    const std::string staged = path_in(staging_of(dir_), name);
    if (exists(staged)) return staged;
  }
  return path_in(dir_, name);
}

std::string CommittedFiles::read(const std::string& name) const {
  return read_checked(name, /*appended_after_commit=*/false);
}

std::string CommittedFiles::read_prefix(const std::string& name) const {
  return read_checked(name, /*appended_after_commit=*/true);
}

std::string CommittedFiles::committed_path(const std::string& name) const {
  if (!contains(name)) {
    throw IOError(fmt::format(
        "{} is missing{}", path_in(dir_, name),
        manifest_ ? fmt::format(" (it is not one of the files {} lists)", manifest_path_) : ""));
  }
  return path_of(name);
}

FormatError CommittedFiles::damaged(const std::string& name, uint64_t size) const {
  return FormatError(fmt::format("{} is damaged: {} bytes, but {} records {}", path_of(name), size,
                                 manifest_path_, manifest_->at(name).size));
}

FormatError CommittedFiles::hash_differs(const std::string& name) const {
  return FormatError(fmt::format("{} is damaged: its SHA-256 differs from the one {} records",
                                 path_of(name), manifest_path_));
}

std::string CommittedFiles::read_checked(const std::string& name, bool appended_after_commit) const {
  const std::string path = committed_path(name);
  if (!manifest_) return read_file(path, unrecorded_limit(name));
  const FileChecksum& expected = manifest_->at(name);
  FileReader file(path);
  // Longer than recorded is damage already (but for lines appended since): refused unread.
  if (file.size() < expected.size || (file.size() > expected.size && !appended_after_commit)) {
    throw damaged(name, file.size());
  }
  std::string bytes = file.read(expected.size);
  if (bytes.size() != expected.size) throw damaged(name, bytes.size());  // cut short while it was read
  if (sha256_hex(bytes) != expected.sha256) throw hash_differs(name);
  return bytes;
}

SafetensorsFile CommittedFiles::read_safetensors(const std::string& name, std::string* sha256) const {
  const std::string path = committed_path(name);
  const FileReader file(path);
  if (manifest_ && file.size() != manifest_->at(name).size) throw damaged(name, file.size());
  Sha256 hash;
  const bool hashed = manifest_ || sha256 != nullptr;
  SafetensorsFile decoded;
  try {
    decoded = io::read_safetensors(file, path, hashed ? &hash : nullptr);
  } catch (const FormatError&) {
    // A file that is not the one recorded is damaged, whatever else is wrong with it: read() says
    // so when its checksum differs.
    if (manifest_) (void)read(name);
    throw;
  }
  std::string digest = hashed ? hash.hex_digest() : "";
  if (manifest_ && digest != manifest_->at(name).sha256) throw hash_differs(name);
  if (sha256 != nullptr) *sha256 = std::move(digest);
  return decoded;
}

}  // namespace tinygpt::io
