// The checkpoint commit protocol (checkpoint.hpp), crash by crash: files are staged as
// "<name>.partial", a commit record naming them is renamed into place, then the files are. A
// crash after the record is rolled forward by the next load; one before it is discarded and the
// previous checkpoint loads as it was. Each test stages a save by hand and stops where a crash
// would have.
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include <catch2/catch.hpp>

#include "nn/nn_helpers.hpp"
#include "scratch_dir.hpp"
#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/io/commit.hpp"
#include "tinygpt/train/checkpoint.hpp"

using namespace tinygpt;
using namespace tinygpt::train;
using namespace tinygpt::io;
using tinygpt::testing::ScratchDir;
namespace fs = std::filesystem;

namespace {

const char* const kFiles[] = {"model.safetensors", "config.json", "tokenizer.json"};

std::unique_ptr<nn::GPT> model_with_seed(uint64_t seed) {
  nn::GPTConfig config = testing::tiny_config(/*layers=*/1);
  config.vocab_size = 5;
  return std::make_unique<nn::GPT>(config, seed);
}

const data::CharTokenizer& tokenizer() {
  static const data::CharTokenizer t = data::CharTokenizer::fit("abcde");
  return t;
}

// Every file in the directory: name -> bytes.
std::map<std::string, std::string> files_in(const ScratchDir& dir) {
  std::map<std::string, std::string> files;
  for (const std::string& name : dir.entries()) files[name] = read_file(dir.file(name));
  return files;
}

// The files of one save of the model initialised with `seed`.
std::map<std::string, std::string> save_of(uint64_t seed) {
  ScratchDir dir;
  save_checkpoint(dir.file(""), *model_with_seed(seed), tokenizer());
  return files_in(dir);
}

std::vector<double> weights_of(const nn::GPT& model) {
  std::vector<double> all;
  for (const auto& [name, tensor] : model.state_dict()) {
    const std::vector<double> values = tensor.to_vector();
    all.insert(all.end(), values.begin(), values.end());
  }
  return all;
}

// The commit record naming every file of a save, as the protocol writes it.
std::string record_of_files() { return R"(["model.safetensors","config.json","tokenizer.json"])"; }

}  // namespace

TEST_CASE("a save has exactly its files and no leftovers", "[checkpoint]") {
  const auto save = save_of(1);
  CHECK(save.size() == 3);
  for (const char* name : kFiles) CHECK(save.count(name) == 1);
}

TEST_CASE("load_model rolls forward a save that crashed after its commit record", "[checkpoint]") {
  ScratchDir dir;
  save_checkpoint(dir.file(""), *model_with_seed(1), tokenizer());  // the previous checkpoint
  const auto next = save_of(2);
  for (const char* name : kFiles) write_file_synced(dir.file(name) + kStagedSuffix, next.at(name));
  write_file_atomic(dir.file(kCommitRecord), record_of_files());
  CHECK(has_checkpoint(dir.file("")));

  SECTION("before any rename") {}
  SECTION("after some of the renames") {
    fs::rename(dir.file("config.json") + kStagedSuffix, dir.file("config.json"));
    fs::rename(dir.file("tokenizer.json") + kStagedSuffix, dir.file("tokenizer.json"));
  }
  SECTION("after every rename, before the record was removed") {
    for (const char* name : kFiles) {
      fs::rename(dir.file(name) + kStagedSuffix, dir.file(name));
    }
  }

  const LoadedModel loaded = load_model(dir.file(""));
  CHECK(weights_of(*loaded.model) == weights_of(*model_with_seed(2)));
  CHECK(files_in(dir) == next);  // no record, no staged file left
}

TEST_CASE("a save that crashed before its commit record is discarded and the previous one loads",
          "[checkpoint]") {
  ScratchDir dir;
  save_checkpoint(dir.file(""), *model_with_seed(1), tokenizer());
  const auto previous = files_in(dir);
  const auto next = save_of(2);

  SECTION("crashed while staging the weights") {
    const std::string& weights = next.at("model.safetensors");
    write_file_synced(dir.file("config.json") + kStagedSuffix, next.at("config.json"));
    write_file_synced(dir.file("model.safetensors") + kStagedSuffix,
                      weights.substr(0, weights.size() / 3));
  }
  SECTION("crashed while writing the commit record") {
    for (const char* name : kFiles) {
      write_file_synced(dir.file(name) + kStagedSuffix, next.at(name));
    }
    write_file_synced(dir.file(kCommitRecord) + kStagedSuffix,
                      record_of_files().substr(0, 20));
  }

  const LoadedModel loaded = load_model(dir.file(""));
  CHECK(weights_of(*loaded.model) == weights_of(*model_with_seed(1)));
  CHECK(files_in(dir) == previous);
}

TEST_CASE("a first save that crashed before its commit record leaves no checkpoint",
          "[checkpoint]") {
  ScratchDir dir;
  const auto first = save_of(1);
  for (const char* name : kFiles) {
    write_file_synced(dir.file(name) + kStagedSuffix, first.at(name));
  }
  CHECK_FALSE(has_checkpoint(dir.file("")));  // `tinygpt train --out` may start afresh there
  recover_checkpoint(dir.file(""));
  CHECK(dir.entries().empty());
}

TEST_CASE("a save over the leftovers of a crashed one commits cleanly", "[checkpoint]") {
  ScratchDir dir;
  save_checkpoint(dir.file(""), *model_with_seed(1), tokenizer());
  write_file_synced(dir.file("model.safetensors") + kStagedSuffix, "half a file");
  write_file_synced(dir.file("optimizer.safetensors") + kStagedSuffix, "stale");
  save_checkpoint(dir.file(""), *model_with_seed(3), tokenizer());
  CHECK(files_in(dir) == save_of(3));
}
