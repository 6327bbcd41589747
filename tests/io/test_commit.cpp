// The multi-file commit (io/commit.hpp) at the file level: what a commit leaves, what readers see
// at every point a writer can die, checksums, hostile records, failed saves, and files of the
// user's that happen to look like the protocol's.
#include <sys/stat.h>

#include <filesystem>
#include <map>

#include <catch2/catch.hpp>

#include "io/file_size_limit.hpp"
#include "scratch_dir.hpp"
#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/io/commit.hpp"
#include "tinygpt/io/run_lock.hpp"
#include "tinygpt/io/safetensors.hpp"
#include "tinygpt/io/sha256.hpp"

using namespace tinygpt;
using namespace tinygpt::io;
using Catch::Matchers::Contains;
using tinygpt::testing::FileSizeLimit;
using tinygpt::testing::ScratchDir;
namespace fs = std::filesystem;

namespace {

const NamedFiles kFirst = {{"a.bin", "first a"}, {"b.json", "{\"first\": true}"}};
const NamedFiles kSecond = {{"a.bin", "second a, longer"}, {"b.json", "{\"second\": true}"}};

// Every regular file below `dir` (relative name -> bytes).
std::map<std::string, std::string> files_below(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) files[fs::relative(entry.path(), dir).string()] = read_file(entry.path().string());
  }
  return files;
}

// What a reader sees: name -> bytes, for each of `files`' names.
std::map<std::string, std::string> read_committed(const std::string& dir, const NamedFiles& files) {
  const CommittedFiles committed(dir);
  std::map<std::string, std::string> seen;
  for (const auto& [name, bytes] : files) seen[name] = committed.read(name);
  return seen;
}

std::map<std::string, std::string> as_map(const NamedFiles& files) { return {files.begin(), files.end()}; }

// The manifest kSecond's commit writes, taken from a commit into a scratch folder.
std::string manifest_of(const NamedFiles& files) {
  ScratchDir other;
  commit_files(other.file(""), files);
  return read_file(other.file(kManifest));
}

template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  FAIL("the expected exception was not thrown");
  return "";
}

}  // namespace

TEST_CASE("a commit leaves its files and a manifest of their checksums, nothing else", "[io][commit]") {
  ScratchDir dir;
  commit_files(dir.file(""), kFirst);
  CHECK(dir.entries() == std::set<std::string>{"a.bin", "b.json", kManifest});
  CHECK(read_committed(dir.file(""), kFirst) == as_map(kFirst));
  commit_files(dir.file(""), kSecond);
  CHECK(dir.entries() == std::set<std::string>{"a.bin", "b.json", kManifest});
  CHECK(read_committed(dir.file(""), kSecond) == as_map(kSecond));
  CHECK_THAT(read_file(dir.file(kManifest)), Contains("\"sha256\""));
}

TEST_CASE("a reader sees the committed files at every point a writer can die", "[io][commit]") {
  ScratchDir dir;
  commit_files(dir.file(""), kFirst);
  const std::string staging = dir.file(kStagingDir);
  fs::create_directory(staging);
  std::map<std::string, std::string> expected = as_map(kFirst);

  SECTION("while staging") {
    write_file_synced(staging + "/a.bin", "second a, half");
  }
  SECTION("while writing the staged record") {
    for (const auto& [name, bytes] : kSecond) write_file_synced(staging + "/" + name, bytes);
    write_file_synced(staging + "/" + kCommitRecord, manifest_of(kSecond).substr(0, 30));
  }
  SECTION("after the commit, before any rename") {
    for (const auto& [name, bytes] : kSecond) write_file_synced(staging + "/" + name, bytes);
    write_file_synced(dir.file(kCommitRecord), manifest_of(kSecond));
    expected = as_map(kSecond);
  }
  SECTION("after the commit and one rename") {
    for (const auto& [name, bytes] : kSecond) write_file_synced(staging + "/" + name, bytes);
    write_file_synced(dir.file(kCommitRecord), manifest_of(kSecond));
    fs::rename(staging + "/a.bin", dir.file("a.bin"));
    expected = as_map(kSecond);
  }
  SECTION("after every rename, before the record became the manifest") {
    for (const auto& [name, bytes] : kSecond) write_file_synced(dir.file(name), bytes);
    write_file_synced(dir.file(kCommitRecord), manifest_of(kSecond));
    expected = as_map(kSecond);
  }

  // Readers change nothing, however many times they read.
  const auto before = files_below(dir.file(""));
  CHECK(read_committed(dir.file(""), kFirst) == expected);
  CHECK(read_committed(dir.file(""), kFirst) == expected);
  CHECK(files_below(dir.file("")) == before);

  // The next writer completes or discards, then commits its own.
  {
    DirectoryLock lock(dir.file(""), DirectoryLock::Mode::exclusive);
    recover_commit(dir.file(""));
  }
  CHECK(dir.entries() == std::set<std::string>{"a.bin", "b.json", kManifest});
  CHECK(read_committed(dir.file(""), kFirst) == expected);
  const NamedFiles third = {{"a.bin", "third"}, {"b.json", "{}"}};
  commit_files(dir.file(""), third);
  CHECK(read_committed(dir.file(""), third) == as_map(third));
}

TEST_CASE("a flipped byte in a committed file is caught, naming the file", "[io][commit]") {
  ScratchDir dir;
  commit_files(dir.file(""), kFirst);
  std::string bytes = read_file(dir.file("a.bin"));
  bytes[3] ^= 0x01;
  write_file_synced(dir.file("a.bin"), bytes);
  const std::string message = message_of<FormatError>([&] { read_committed(dir.file(""), kFirst); });
  CHECK_THAT(message, Contains(dir.file("a.bin")) && Contains("damaged") && Contains("SHA-256"));

  write_file_synced(dir.file("a.bin"), "first");  // a truncated copy
  CHECK_THAT(message_of<FormatError>([&] { read_committed(dir.file(""), kFirst); }),
             Contains(dir.file("a.bin")) && Contains("5 bytes"));
}

TEST_CASE("a committed safetensors file is decoded as it is read, a changed one is damage first",
          "[io][commit]") {
  ScratchDir dir;
  const NamedTensors tensors = {{"w", Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f32)}};
  const std::string bytes = encode_safetensors(tensors, {{"format", "pt"}});
  commit_files(dir.file(""), {{"model.safetensors", bytes}});
  const std::string path = dir.file("model.safetensors");
  std::string sha256;
  const SafetensorsFile file = CommittedFiles(dir.file("")).read_safetensors("model.safetensors", &sha256);
  CHECK(file.at("w").to_vector() == std::vector<double>{1, 2, 3, 4, 5, 6});
  CHECK(file.source == path);
  CHECK(sha256 == sha256_hex(bytes));

  // A flipped byte of the header would be a header error; of the manifest's file it is damage.
  std::string changed = bytes;
  changed[9] ^= 0x40;
  write_file_synced(path, changed);
  CHECK_THROWS_WITH(decode_safetensors(changed), Contains("header"));
  CHECK_THAT(message_of<FormatError>([&] { CommittedFiles(dir.file("")).read_safetensors("model.safetensors"); }),
             Contains(path) && Contains("damaged") && Contains("SHA-256"));
  changed = bytes;
  changed.back() ^= 0x01;  // a weight's mantissa bit: a valid file, not the recorded one
  write_file_synced(path, changed);
  CHECK_THAT(message_of<FormatError>([&] { CommittedFiles(dir.file("")).read_safetensors("model.safetensors"); }),
             Contains(path) && Contains("damaged") && Contains("SHA-256"));
  write_file_synced(path, bytes.substr(0, bytes.size() - 4));
  CHECK_THAT(message_of<FormatError>([&] { CommittedFiles(dir.file("")).read_safetensors("model.safetensors"); }),
             Contains(path) && Contains(std::to_string(bytes.size() - 4) + " bytes"));

  // Without a manifest the file is read unchecked, and hashed only when asked.
  fs::remove(dir.file(kManifest));
  write_file_synced(path, changed);
  sha256.clear();
  CHECK(CommittedFiles(dir.file("")).read_safetensors("model.safetensors").at("w").numel() == 6);
  CommittedFiles(dir.file("")).read_safetensors("model.safetensors", &sha256);
  CHECK(sha256 == sha256_hex(changed));
}

TEST_CASE("an append-only file reads as its committed prefix, a changed prefix is damage",
          "[io][commit]") {
  ScratchDir dir;
  commit_files(dir.file(""), {{"log.jsonl", "{\"step\": 1}\n"}});
  write_file_synced(dir.file("log.jsonl"), "{\"step\": 1}\n{\"step\": 2}\n");  // logged later
  CHECK(CommittedFiles(dir.file("")).read_prefix("log.jsonl") == "{\"step\": 1}\n");
  CHECK_THROWS_AS(CommittedFiles(dir.file("")).read("log.jsonl"), FormatError);

  write_file_synced(dir.file("log.jsonl"), "{\"step\": 7}\n{\"step\": 2}\n");
  CHECK_THAT(message_of<FormatError>([&] { CommittedFiles(dir.file("")).read_prefix("log.jsonl"); }),
             Contains(dir.file("log.jsonl")) && Contains("SHA-256"));
  write_file_synced(dir.file("log.jsonl"), "{");
  CHECK_THAT(message_of<FormatError>([&] { CommittedFiles(dir.file("")).read_prefix("log.jsonl"); }),
             Contains(dir.file("log.jsonl")) && Contains("1 bytes"));
}

TEST_CASE("commit names must be plain file names of the folder", "[io][commit]") {
  ScratchDir dir;
  for (const char* name : {"../x", "/abs", "sub/file", "", ".", "..", kManifest, kCommitRecord, kStagingDir,
                           kRunLockFile}) {
    INFO(name);
    CHECK_THROWS_AS(commit_files(dir.file("ckpt"), {{name, "bytes"}}), ValueError);
  }
  CHECK_THROWS_AS(commit_files(dir.file("ckpt"), {{"a", "1"}, {"a", "2"}}), ValueError);
  CHECK(dir.entries().empty());
}

TEST_CASE("a commit record naming a file outside the folder is refused, touching nothing",
          "[io][commit]") {
  ScratchDir dir;
  const std::string ckpt = dir.file("ckpt");
  commit_files(ckpt, kFirst);
  write_file_synced(dir.file("x"), "outside");
  std::string record = manifest_of(kSecond);
  record.replace(record.find("\"a.bin\""), 7, "\"../x\"");
  write_file_synced(ckpt + "/" + kCommitRecord, record);
  const auto before = files_below(dir.file(""));

  CHECK_THAT(message_of<FormatError>([&] { CommittedFiles files(ckpt); }),
             Contains(kCommitRecord) && Contains("\"../x\"") && Contains("plain file name"));
  CHECK_THROWS_AS(commit_files(ckpt, kSecond), FormatError);
  CHECK(files_below(dir.file("")) == before);
}

TEST_CASE("a commit that fails to write deletes what it staged and keeps the previous files",
          "[io][commit]") {
  ScratchDir dir;
  commit_files(dir.file(""), kFirst);
  const auto before = files_below(dir.file(""));
  {
    FileSizeLimit limit(8);  // "second a, longer" is 16 bytes: its write fails halfway
    CHECK_THROWS_AS(commit_files(dir.file(""), kSecond), IOError);
  }
  CHECK(files_below(dir.file("")) == before);
  CHECK(dir.entries() == std::set<std::string>{"a.bin", "b.json", kManifest});
}

TEST_CASE("the user's own files beside a checkpoint are never touched", "[io][commit]") {
  ScratchDir dir;
  write_file_synced(dir.file("a.bin.partial"), "mine");
  write_file_synced(dir.file("notes.partial"), "also mine");
  commit_files(dir.file(""), kFirst);
  read_committed(dir.file(""), kFirst);
  commit_files(dir.file(""), kSecond);
  CHECK(read_file(dir.file("a.bin.partial")) == "mine");
  CHECK(read_file(dir.file("notes.partial")) == "also mine");
}

TEST_CASE("a folder without a manifest is read unchecked, a file outside the manifest is missing",
          "[io][commit]") {
  ScratchDir dir;
  write_file_synced(dir.file("a.bin"), "from another tool");
  {
    const CommittedFiles files(dir.file(""));
    CHECK_FALSE(files.checked());
    CHECK(files.read("a.bin") == "from another tool");
    CHECK_FALSE(files.contains("b.json"));
  }
  commit_files(dir.file(""), {{"b.json", "{}"}});
  const CommittedFiles files(dir.file(""));
  CHECK(files.checked());
  CHECK_FALSE(files.contains("a.bin"));
  CHECK_THAT(message_of<IOError>([&] { files.read("a.bin"); }), Contains("not one of the files"));
}

TEST_CASE("a manifest of an unknown format_version is refused", "[io][commit]") {
  ScratchDir dir;
  commit_files(dir.file(""), kFirst);
  std::string manifest = read_file(dir.file(kManifest));
  manifest.replace(manifest.find("\"format_version\": 1"), 19, "\"format_version\": 7");
  write_file_synced(dir.file(kManifest), manifest);
  CHECK_THAT(message_of<FormatError>([&] { CommittedFiles files(dir.file("")); }),
             Contains(kManifest) && Contains("format_version 7"));
}

TEST_CASE("a manifest whose fields have other JSON types is refused in tinygpt's words", "[io][commit]") {
  ScratchDir dir;
  commit_files(dir.file(""), kFirst);
  const std::string good = read_file(dir.file(kManifest));
  const std::pair<std::string, std::string> cases[] = {
      {"\"format\": 5", "not a tinygpt checkpoint manifest"},
      {"\"format\": null", "not a tinygpt checkpoint manifest"},
      {"\"format\": [\"tinygpt-checkpoint\"]", "not a tinygpt checkpoint manifest"},
      {"\"format_version\": \"1\"", "unsupported format_version \"1\""}};
  for (const auto& [field, message] : cases) {
    CAPTURE(field);
    const std::string key = field.substr(0, field.find(':') + 1);
    std::string manifest = good;
    const size_t at = manifest.find(key);
    manifest.replace(at, manifest.find_first_of(",\n", at) - at, field);
    write_file_synced(dir.file(kManifest), manifest);
    const std::string error = message_of<FormatError>([&] { CommittedFiles files(dir.file("")); });
    CHECK_THAT(error, Contains(kManifest) && Contains(message));
    CHECK_THAT(error, !Contains("json.exception"));
  }
}

TEST_CASE("an appended file the folder already holds stays in place, and another is staged",
          "[io][commit]") {
  ScratchDir dir;
  const std::string ckpt = dir.file("ckpt");
  commit_files(ckpt, {{"a.bin", "a"}, {"log", "1\n"}}, {"log"});
  const auto inode = [&](const std::string& name) {
    struct stat info {};
    REQUIRE(::stat((ckpt + "/" + name).c_str(), &info) == 0);
    return info.st_ino;
  };
  const auto log_inode = inode("log");
  write_file_synced(ckpt + "/log", "1\n2\n");  // appended by the run since
  commit_files(ckpt, {{"a.bin", "a"}, {"log", "1\n2\n"}}, {"log"});
  CHECK(inode("log") == log_inode);  // tail -f keeps following it
  CHECK(CommittedFiles(ckpt).read("log") == "1\n2\n");
  write_file_synced(ckpt + "/log", "1\n2\n3\n");  // a line after the commit: not part of it
  CHECK(CommittedFiles(ckpt).read_prefix("log") == "1\n2\n");
  commit_files(ckpt, {{"a.bin", "a"}, {"log", "other\n"}}, {"log"});  // bytes differ: replaced
  CHECK(read_file(ckpt + "/log") == "other\n");
  CHECK(CommittedFiles(ckpt).read("log") == "other\n");
}
