#include <filesystem>

#include <catch2/catch.hpp>

#include "io/file_size_limit.hpp"
#include "scratch_dir.hpp"
#include "tinygpt/io/atomic_file.hpp"

using namespace tinygpt::io;
using Catch::Matchers::Contains;
using tinygpt::testing::FileSizeLimit;
using tinygpt::testing::ScratchDir;

namespace {

// The message of the IOError `f` throws; fails the test if it throws nothing or something else.
template <class F>
std::string io_error_of(F&& f) {
  try {
    f();
  } catch (const IOError& e) {
    return e.what();
  }
  FAIL("no IOError was thrown");
  return "";
}

}  // namespace

TEST_CASE("write_file_atomic creates the file with exactly the bytes given", "[io]") {
  ScratchDir dir;
  const std::string bytes("binary\0data\xff", 12);
  write_file_atomic(dir.file("out.bin"), bytes);
  CHECK(read_file(dir.file("out.bin")) == bytes);
  CHECK(dir.entries() == std::set<std::string>{"out.bin"});
}

TEST_CASE("write_file_atomic replaces an existing file and leaves no temporary file", "[io]") {
  ScratchDir dir;
  write_file_atomic(dir.file("ckpt"), "old content that is longer");
  write_file_atomic(dir.file("ckpt"), "new");
  CHECK(read_file(dir.file("ckpt")) == "new");
  CHECK(dir.entries() == std::set<std::string>{"ckpt"});
}

TEST_CASE("write_file_atomic writes an empty file", "[io]") {
  ScratchDir dir;
  write_file_atomic(dir.file("empty"), "");
  CHECK(read_file(dir.file("empty")).empty());
}

TEST_CASE("write_file_atomic keeps the old file when a write fails halfway", "[io]") {
  ScratchDir dir;
  write_file_atomic(dir.file("ckpt"), "the good old checkpoint");
  std::string message;
  {
    FileSizeLimit limit(4);
    message = io_error_of([&] { write_file_atomic(dir.file("ckpt"), std::string(100000, 'x')); });
  }
  CHECK_THAT(message, Contains(dir.file("ckpt")) && Contains("File too large"));
  CHECK(read_file(dir.file("ckpt")) == "the good old checkpoint");
  CHECK(dir.entries() == std::set<std::string>{"ckpt"});
}

TEST_CASE("write_file_atomic over a directory fails, keeps it and leaves no temporary file",
          "[io]") {
  ScratchDir dir;
  std::filesystem::create_directory(dir.file("taken"));
  write_file_atomic(dir.file("taken/inside"), "keep me");
  const std::string message = io_error_of([&] { write_file_atomic(dir.file("taken"), "data"); });
  CHECK_THAT(message, Contains("rename") && Contains(dir.file("taken")) &&
                          Contains("Is a directory"));
  CHECK(std::filesystem::is_directory(dir.file("taken")));
  CHECK(read_file(dir.file("taken/inside")) == "keep me");
  CHECK(dir.entries() == std::set<std::string>{"taken"});
}

TEST_CASE("write_file_atomic into a missing directory names the path and the reason", "[io]") {
  ScratchDir dir;
  const std::string path = dir.file("no/such/dir/ckpt");
  const std::string message = io_error_of([&] { write_file_atomic(path, "data"); });
  CHECK_THAT(message, Contains(path) && Contains("No such file or directory"));
  CHECK(dir.entries().empty());
}

TEST_CASE("write_file_atomic refuses a path that names a directory", "[io]") {
  ScratchDir dir;
  const std::string message = io_error_of([&] { write_file_atomic(dir.file("sub/"), "data"); });
  CHECK_THAT(message, Contains("names a directory"));
}

TEST_CASE("write_file_atomic writes to a path relative to the working directory", "[io]") {
  ScratchDir dir;
  const auto previous = std::filesystem::current_path();
  std::filesystem::current_path(dir.file(""));
  write_file_atomic("relative.txt", "here");
  std::filesystem::current_path(previous);
  CHECK(read_file(dir.file("relative.txt")) == "here");
}

TEST_CASE("read_file of a missing file names the path and the reason", "[io]") {
  ScratchDir dir;
  const std::string message = io_error_of([&] { read_file(dir.file("missing")); });
  CHECK_THAT(message, Contains(dir.file("missing")) && Contains("No such file or directory"));
}

TEST_CASE("read_file of a directory says it is a directory", "[io]") {
  ScratchDir dir;
  const std::string message = io_error_of([&] { read_file(dir.file("")); });
  CHECK_THAT(message, Contains("is a directory"));
}

TEST_CASE("create_directory makes a folder and its parents, and names the one it cannot make", "[io]") {
  ScratchDir dir;
  CHECK(create_directory(dir.file("a/b/c"), "picture directory"));
  CHECK(std::filesystem::is_directory(dir.file("a/b/c")));
  CHECK_FALSE(create_directory(dir.file("a/b/c"), "picture directory"));  // already there: nothing to do
  write_file_atomic(dir.file("f"), "kept");
  for (const std::string& path : {dir.file("f"), dir.file("f/sub")}) {
    CAPTURE(path);
    CHECK(io_error_of([&] { create_directory(path, "picture directory"); }) ==
          "cannot create picture directory " + path + ": Not a directory");
  }
  CHECK(read_file(dir.file("f")) == "kept");
}

TEST_CASE("file_type_of and remove_all name a path they cannot look at, with the system's reason", "[io]") {
  namespace fs = std::filesystem;
  ScratchDir dir;
  write_file_atomic(dir.file("f"), "kept");
  CHECK(file_type_of(dir.file("f"), "data file") == fs::file_type::regular);
  CHECK(file_type_of(dir.file("."), "run directory") == fs::file_type::directory);
  // Nothing there, or a file where a folder should be: missing, not an error.
  CHECK(file_type_of(dir.file("none"), "run directory") == fs::file_type::not_found);
  CHECK(file_type_of(dir.file("f/sub"), "run directory") == fs::file_type::not_found);
  fs::create_directory_symlink("loop", dir.file("loop"));
  const std::string too_long = dir.file(std::string(300, 'a'));
  for (const auto& [looked_at, reason] :
       {std::pair{dir.file("loop/x"), "Too many levels of symbolic links"},
        std::pair{too_long, "File name too long"}}) {
    const std::string path = looked_at;  // C++17 lambdas cannot capture a structured binding
    CAPTURE(path);
    CHECK(io_error_of([&] { file_type_of(path, "run directory"); }) ==
          "cannot read run directory " + path + ": " + reason);
  }
  CHECK(io_error_of([&] { remove_all(too_long + "/x", "the stale best checkpoint"); }) ==
        "cannot remove the stale best checkpoint " + too_long + "/x: File name too long");
  fs::create_directories(dir.file("tree/a/b"));
  write_file_atomic(dir.file("tree/a/b/c"), "gone");
  remove_all(dir.file("tree"), "a folder");
  CHECK_FALSE(fs::exists(dir.file("tree")));
  remove_all(dir.file("loop"), "a link");  // the link itself goes, nothing it points at
  CHECK_FALSE(fs::exists(fs::symlink_status(dir.file("loop"))));
  CHECK(read_file(dir.file("f")) == "kept");
}
