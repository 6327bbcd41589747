#pragma once
// A fresh, empty directory under the system's temporary directory (or under `parent`, created if
// need be), removed with its content when the test ends.
#include <cstdlib>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>

namespace tinygpt::testing {

class ScratchDir {
 public:
  explicit ScratchDir(const std::filesystem::path& parent = std::filesystem::temp_directory_path()) {
    std::filesystem::create_directories(parent);
    std::string pattern = (parent / "tinygpt-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }

  std::string file(const std::string& name) const { return (path_ / name).string(); }

  // Names of everything in the directory, to check that nothing (a temporary file) is left over.
  std::set<std::string> entries() const {
    std::set<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(path_)) {
      names.insert(entry.path().filename().string());
    }
    return names;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace tinygpt::testing
