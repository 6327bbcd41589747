#include "tinygpt/io/commit.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/io/safetensors.hpp"

namespace tinygpt::io {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string path_in(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / name).string();
}

// Throws "<what>: <the reason errno gives>".
[[noreturn]] void fail(const std::string& what) {
  const int error = errno;
  throw IOError(fmt::format("{}: {}", what, std::error_code(error, std::generic_category()).message()));
}

bool is_staged(const std::string& name) {
  const size_t n = std::strlen(kStagedSuffix);
  return name.size() > n && name.compare(name.size() - n, std::string::npos, kStagedSuffix) == 0;
}

}  // namespace

DirectoryLock::DirectoryLock(const std::string& dir)
    : fd_(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
  if (fd_ < 0) fail(fmt::format("cannot open checkpoint directory {} to lock it", dir));
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) {
      const int error = errno;
      ::close(fd_);
      errno = error;
      fail(fmt::format("cannot lock checkpoint directory {}", dir));
    }
  }
}

DirectoryLock::~DirectoryLock() { ::close(fd_); }  // closing the last descriptor releases the lock

void recover_commit(const std::string& dir) {
  const std::string record = path_in(dir, kCommitRecord);
  if (fs::exists(record)) {  // committed: roll forward
    json names;
    try {
      names = json::parse(read_file(record));
    } catch (const json::exception& e) {
      throw FormatError(fmt::format("{}: not valid JSON ({})", record, e.what()));
    }
    for (const auto& name : names) {
      const std::string target = path_in(dir, name.get<std::string>());
      if (fs::exists(target + kStagedSuffix)) fs::rename(target + kStagedSuffix, target);
    }
    sync_directory(dir);
    fs::remove(record);
    sync_directory(dir);
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {  // never committed: discard
    if (is_staged(entry.path().filename().string())) fs::remove(entry.path());
  }
}

void commit_files(const std::string& dir, const NamedFiles& files) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw IOError(fmt::format("cannot create checkpoint directory {}: {}", dir, ec.message()));
  const DirectoryLock lock(dir);
  recover_commit(dir);
  json names = json::array();
  for (const auto& [name, bytes] : files) {
    write_file_synced(path_in(dir, name + kStagedSuffix), bytes);
    names.push_back(name);
  }
  // The record is staged like the files, so a commit killed while writing it leaves only staged
  // files, which the next recovery discards; renaming it into place commits.
  const std::string record = path_in(dir, kCommitRecord);
  write_file_synced(record + kStagedSuffix, names.dump());
  fs::rename(record + kStagedSuffix, record);
  sync_directory(dir);
  recover_commit(dir);
}

bool has_commit_record(const std::string& dir) { return fs::exists(path_in(dir, kCommitRecord)); }

}  // namespace tinygpt::io
