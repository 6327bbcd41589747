#pragma once
// A fresh directory for file tests, removed with its contents when the test ends.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

namespace tinygpt::testing {

class TempDir {
 public:
  TempDir() {
    static int counter = 0;  // CTest runs tests as separate processes, so pid + counter is unique
    path_ = std::filesystem::temp_directory_path() /
            fmt::format("tinygpt-data-test-{}-{}", ::getpid(), counter++);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // The path of `name` inside the directory (the file need not exist).
  std::string file(const std::string& name) const { return (path_ / name).string(); }

  // Writes `bytes` unchanged to `name` and returns its path.
  std::string write(const std::string& name, const std::string& bytes) const {
    const std::string p = file(name);
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }

  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace tinygpt::testing
