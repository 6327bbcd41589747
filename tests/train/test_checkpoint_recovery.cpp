// Checkpoints through the commit protocol (io/commit.hpp), crash by crash, with a real model: a
// save killed after its commit record loads as the new checkpoint, one killed before it as the
// previous one; loads change nothing; the next save completes or discards what it finds. Each
// test stages a save by hand and stops where a crash would have.
#include <filesystem>
#include <map>
#include <memory>

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

// The model files of the model initialised with `seed`, committed into `dir`.
void save_model(const std::string& dir, uint64_t seed) {
  const std::unique_ptr<nn::GPT> model = model_with_seed(seed);
  save_checkpoint(dir, *model, model->config_json(), tokenizer());
}

// Every regular file below the directory: relative name -> bytes.
std::map<std::string, std::string> files_in(const ScratchDir& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir.file(""))) {
    if (entry.is_regular_file()) {
      files[fs::relative(entry.path(), dir.file("")).string()] = read_file(entry.path().string());
    }
  }
  return files;
}

// The files of one save of the model initialised with `seed`.
std::map<std::string, std::string> save_of(uint64_t seed) {
  ScratchDir dir;
  save_model(dir.file(""), seed);
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

std::string staged(const ScratchDir& dir, const std::string& name) {
  return dir.file(kStagingDir) + "/" + name;
}

}  // namespace

TEST_CASE("a save has exactly its files, a manifest and no leftovers", "[checkpoint]") {
  const auto save = save_of(1);
  CHECK(save.size() == 4);
  for (const char* name : kFiles) CHECK(save.count(name) == 1);
  CHECK(save.count(kManifest) == 1);
}

TEST_CASE("a save that crashed after its commit record loads as the new checkpoint", "[checkpoint]") {
  ScratchDir dir;
  save_model(dir.file(""), 1);  // the previous checkpoint
  const auto next = save_of(2);
  fs::create_directory(dir.file(kStagingDir));
  for (const char* name : kFiles) write_file_synced(staged(dir, name), next.at(name));
  write_file_atomic(dir.file(kCommitRecord), next.at(kManifest));
  CHECK(has_checkpoint(dir.file("")));

  SECTION("before any rename") {}
  SECTION("after some of the renames") {
    fs::rename(staged(dir, "config.json"), dir.file("config.json"));
    fs::rename(staged(dir, "tokenizer.json"), dir.file("tokenizer.json"));
  }
  SECTION("after every rename, before the record became the manifest") {
    for (const char* name : kFiles) fs::rename(staged(dir, name), dir.file(name));
  }

  const auto before = files_in(dir);
  CHECK(weights_of(*load_model(dir.file("")).model) == weights_of(*model_with_seed(2)));
  CHECK(files_in(dir) == before);  // a load reads, and changes nothing
  recover_checkpoint(dir.file(""));  // what the next save does first
  CHECK(files_in(dir) == next);
  CHECK(dir.entries().count(kStagingDir) == 0);
}

TEST_CASE("a save that crashed before its commit record is discarded and the previous one loads",
          "[checkpoint]") {
  ScratchDir dir;
  save_model(dir.file(""), 1);
  const auto previous = files_in(dir);
  const auto next = save_of(2);
  fs::create_directory(dir.file(kStagingDir));

  SECTION("crashed while staging the weights") {
    const std::string& weights = next.at("model.safetensors");
    write_file_synced(staged(dir, "config.json"), next.at("config.json"));
    write_file_synced(staged(dir, "model.safetensors"), weights.substr(0, weights.size() / 3));
  }
  SECTION("crashed while writing the commit record") {
    for (const char* name : kFiles) write_file_synced(staged(dir, name), next.at(name));
    write_file_synced(staged(dir, kCommitRecord), next.at(kManifest).substr(0, 20));
  }

  CHECK(weights_of(*load_model(dir.file("")).model) == weights_of(*model_with_seed(1)));
  recover_checkpoint(dir.file(""));
  CHECK(files_in(dir) == previous);
  CHECK(dir.entries().count(kStagingDir) == 0);
}

TEST_CASE("a first save that crashed before its commit record leaves no checkpoint",
          "[checkpoint]") {
  ScratchDir dir;
  const auto first = save_of(1);
  fs::create_directory(dir.file(kStagingDir));
  for (const char* name : kFiles) write_file_synced(staged(dir, name), first.at(name));
  CHECK_FALSE(has_checkpoint(dir.file("")));  // `tinygpt train --out` may start afresh there
  recover_checkpoint(dir.file(""));
  CHECK(dir.entries().empty());
}

TEST_CASE("a save over the leftovers of a crashed one commits cleanly", "[checkpoint]") {
  ScratchDir dir;
  save_model(dir.file(""), 1);
  fs::create_directory(dir.file(kStagingDir));
  write_file_synced(staged(dir, "model.safetensors"), "half a file");
  write_file_synced(staged(dir, "optimizer.safetensors"), "stale");
  save_model(dir.file(""), 3);
  CHECK(files_in(dir) == save_of(3));
}

TEST_CASE("a flipped byte in the weights is caught on load, naming the file", "[checkpoint]") {
  ScratchDir dir;
  save_model(dir.file(""), 1);
  std::string weights = read_file(dir.file("model.safetensors"));
  weights[weights.size() - 5] ^= 0x10;  // a mantissa bit of the last weight: still a finite float
  write_file_synced(dir.file("model.safetensors"), weights);
  CHECK_THROWS_WITH(load_model(dir.file("")),
                    Catch::Matchers::Contains(dir.file("model.safetensors")) &&
                        Catch::Matchers::Contains("damaged"));
}
