#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <catch2/catch.hpp>

#include "data/message_contains.hpp"
#include "data/temp_dir.hpp"
#include "tinygpt/autograd/error.hpp"
#include "tinygpt/autograd/generator.hpp"
#include "tinygpt/data/text_file.hpp"

using namespace tinygpt;
using namespace tinygpt::data;
using tinygpt::testing::MessageContains;

TEST_CASE("read_text_file returns the bytes of a UTF-8 file unchanged", "[data][text_file]") {
  const testing::TempDir dir;
  const std::string text = "line one\r\nline two caf\xC3\xA9 \xF0\x9F\x98\x80\n";
  CHECK(read_text_file(dir.write("ok.txt", text)) == text);
}

TEST_CASE("read_text_file drops a byte-order mark at the start, and only there", "[data][text_file]") {
  const testing::TempDir dir;
  const std::string bom = "\xEF\xBB\xBF";
  CHECK(read_text_file(dir.write("bom.txt", bom + "ab" + bom + "c\r\n")) == "ab" + bom + "c\r\n");
  CHECK_THROWS_MATCHES(read_text_file(dir.write("only-bom.txt", bom)), ValueError,
                       MessageContains("is empty"));
}

TEST_CASE("read_text_file names the path of a missing file", "[data][text_file]") {
  const testing::TempDir dir;
  const std::string path = dir.file("missing.txt");
  CHECK_THROWS_MATCHES(read_text_file(path), ValueError,
                       MessageContains("'" + path + "' does not exist"));
}

TEST_CASE("read_text_file names the path of a directory", "[data][text_file]") {
  const testing::TempDir dir;
  CHECK_THROWS_MATCHES(read_text_file(dir.str()), ValueError,
                       MessageContains("'" + dir.str() + "' is a directory"));
}

TEST_CASE("read_text_file refuses endless streams and FIFOs without reading them",
          "[data][text_file]") {
  CHECK_THROWS_MATCHES(read_text_file("/dev/zero"), ValueError,
                       MessageContains("'/dev/zero' is a character device, not a text file"));
  const testing::TempDir dir;
  const std::string fifo = dir.file("pipe");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // No writer ever opens it: a reader that waited for one would hang here.
  CHECK_THROWS_MATCHES(read_text_file(fifo), ValueError,
                       MessageContains("'" + fifo + "' is a FIFO (named pipe), not a text file"));
}

TEST_CASE("read_text_file refuses a file larger than its limit", "[data][text_file]") {
  const testing::TempDir dir;
  const std::string path = dir.write("big.txt", std::string(100, 'a'));
  CHECK(read_text_file(path, 100).size() == 100);
  CHECK_THROWS_MATCHES(read_text_file(path, 99), ValueError,
                       MessageContains("'" + path + "' holds 100 bytes or more, beyond the limit of 99"));
}

TEST_CASE("read_text_file names the path of an empty file", "[data][text_file]") {
  const testing::TempDir dir;
  const std::string path = dir.write("empty.txt", "");
  CHECK_THROWS_MATCHES(read_text_file(path), ValueError,
                       MessageContains("'" + path + "' is empty"));
}

TEST_CASE("read_text_file names the path and offset for random bytes", "[data][text_file]") {
  const testing::TempDir dir;
  Generator gen(7);
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(gen.randint(256)));
  const std::string path = dir.write("random.bin", bytes);
  CHECK_THROWS_MATCHES(
      read_text_file(path), ValueError,
      MessageContains("'" + path + "' is not UTF-8 text") && MessageContains("at byte offset"));
}

TEST_CASE("read_text_file names the path of an unreadable file", "[data][text_file]") {
  if (::geteuid() == 0) {
    WARN("skipped: root can read a file without read permission");
    return;
  }
  const testing::TempDir dir;
  const std::string path = dir.write("secret.txt", "hidden");
  std::filesystem::permissions(path, std::filesystem::perms::none);
  CHECK_THROWS_MATCHES(read_text_file(path), ValueError,
                       MessageContains("'" + path + "' cannot be opened"));
}
