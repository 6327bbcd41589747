// Hugging Face BertForMaskedLM folders both ways, a bert-base-sized random checkpoint, mask
// filling, and parity with an independent PyTorch BERT forward (tests/train/bert_reference.py).
#include <cstdio>
#include <fstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "scratch_dir.hpp"
#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/io/commit.hpp"
#include "tinygpt/train/bert_files.hpp"

using namespace tinygpt;
using data::MaskedLMTokenizer;

namespace {

const char* const kText = "the cat sat on the mat";

nn::BertConfig small_bert(int64_t vocab, nn::PositionEmbedding position = nn::PositionEmbedding::learned) {
  nn::BertConfig c;
  c.vocab_size = vocab;
  c.hidden_size = 16;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.intermediate_size = 24;
  c.max_position_embeddings = 32;
  c.position = position;
  return c;
}

// Weights far above BERT's 0.02, so the distributions are far from uniform.
void scramble(nn::Module& model, uint64_t seed) {
  Generator gen(seed);
  for (Tensor p : model.parameters()) p.copy_(Tensor::randn(p.shape(), gen, p.dtype(), 0.0, 0.5));
}

std::vector<double> logits_of(nn::BertForMaskedLM& model, const std::vector<int64_t>& ids) {
  model.eval();
  return model.forward(Tensor::from_ids(ids, {1, static_cast<int64_t>(ids.size())})).to_vector();
}

// The standard output of `command`, or nullopt when it fails.
std::optional<std::string> run(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string out;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  return ::pclose(pipe) == 0 ? std::optional<std::string>(out) : std::nullopt;
}

}  // namespace

TEST_CASE("save_bert writes BertForMaskedLM's names and config keys, and load_bert reads them back",
          "[train][bert]") {
  testing::ScratchDir dir;
  const MaskedLMTokenizer tok = MaskedLMTokenizer::fit(kText);
  nn::BertForMaskedLM model(small_bert(tok.vocab_size()), 1);
  scramble(model, 2);
  train::save_bert(dir.file("m"), model, tok);
  const auto config = nlohmann::json::parse(io::read_file(dir.file("m/config.json")));
  CHECK(config["model_type"] == "bert");
  CHECK(config["hidden_act"] == "gelu");
  CHECK(config["num_attention_heads"] == 4);
  CHECK(config["pad_token_id"] == 0);
  const io::SafetensorsFile file = io::load_safetensors(dir.file("m/model.safetensors"));
  CHECK(file.at("bert.encoder.layer.1.attention.self.query.weight").shape() == Shape{16, 16});
  CHECK(file.at("bert.encoder.layer.0.attention.output.dense.bias").shape() == Shape{16});
  CHECK(file.at("bert.encoder.layer.0.intermediate.dense.weight").shape() == Shape{24, 16});  // (out, in)
  CHECK(file.at("cls.predictions.bias").shape() == Shape{tok.vocab_size()});
  train::LoadedBert loaded = train::load_bert(dir.file("m"));
  CHECK(loaded.notes.empty());
  REQUIRE(loaded.tokenizer);
  const std::vector<int64_t> ids = MaskedLMTokenizer::frame(tok.encode("the c[MASK]t"));
  CHECK(logits_of(*loaded.model, ids) == logits_of(model, ids));
}

TEST_CASE("a model BERT cannot express is saved as tinygpt-encoder and read back", "[train][bert]") {
  testing::ScratchDir dir;
  const MaskedLMTokenizer tok = MaskedLMTokenizer::fit(kText);
  nn::BertConfig config = small_bert(tok.vocab_size(), nn::PositionEmbedding::alibi);
  config.pre_layer_norm = true;
  nn::BertForMaskedLM model(config, 1);
  scramble(model, 3);
  train::save_bert(dir.file("m"), model, tok);
  CHECK(nlohmann::json::parse(io::read_file(dir.file("m/config.json")))["model_type"] == "tinygpt-encoder");
  train::LoadedBert loaded = train::load_bert(dir.file("m"));
  CHECK(loaded.config.position == nn::PositionEmbedding::alibi);
  CHECK(loaded.config.pre_layer_norm);
  const std::vector<int64_t> ids = MaskedLMTokenizer::frame(tok.encode("a cat"));
  CHECK(logits_of(*loaded.model, ids) == logits_of(model, ids));
  CHECK_THROWS_WITH(train::bert_config_from_json(R"({"model_type": "bert", "vocab_size": 9, "hidden_act": "relu"})", "c"),
                    Catch::Contains("hidden_act"));
  CHECK_THROWS_WITH(train::bert_config_from_json(R"({"model_type": "bert", "vocab_size": 9, "position_embedding_type": "rope"})", "c"),
                    Catch::Contains("position_embedding_type"));
}

TEST_CASE("a random bert-base-sized checkpoint in Hugging Face's layout loads, with and without "
          "the bert. prefix, and fills masks", "[train][bert][slow]") {
  testing::ScratchDir dir;
  const MaskedLMTokenizer tok = MaskedLMTokenizer::fit(kText);
  nn::BertConfig config;  // bert-base's widths; one layer keeps the test fast
  config.vocab_size = tok.vocab_size();
  config.hidden_size = 768;
  config.num_attention_heads = 12;
  config.num_hidden_layers = 1;
  config.intermediate_size = 3072;
  config.max_position_embeddings = 512;
  nn::BertForMaskedLM reference(config, 4);
  // As Hugging Face writes it: BERT's names, plus what an MLM file may carry and not use.
  io::NamedTensors with_prefix = train::to_hugging_face_bert(reference), without_prefix;
  Generator gen(5);
  with_prefix.emplace_back("bert.pooler.dense.weight", Tensor::randn({768, 768}, gen));
  with_prefix.emplace_back("cls.predictions.decoder.weight",
                           reference.bert->embeddings->word_embeddings->weight);
  for (const auto& [name, tensor] : with_prefix) {
    std::string bare = name.rfind("bert.", 0) == 0 ? name.substr(5) : name;
    const size_t gain = bare.find("LayerNorm.weight");
    if (gain != std::string::npos) bare.replace(gain, 16, "LayerNorm.gamma");
    without_prefix.emplace_back(bare, tensor);
  }
  const std::string config_json = train::bert_config_to_json(config);
  const std::vector<int64_t> ids = tok.encode("the c[MASK]t sat on the m[MASK]t");
  std::vector<std::vector<train::MaskFill>> fills;
  for (const auto* tensors : {&with_prefix, &without_prefix}) {
    const std::string folder = dir.file(tensors == &with_prefix ? "with" : "without");
    io::commit_files(folder, {{"config.json", config_json},
                              {"model.safetensors", io::encode_safetensors(*tensors)},
                              {"tokenizer.json", tok.to_json()}});
    train::LoadedBert loaded = train::load_bert(folder);
    CHECK(loaded.model->bert->encoder->layer->size() == 1);
    CHECK((*loaded.model->bert->encoder->layer)[0].attention->self->q_proj->weight.shape() == Shape{768, 768});
    fills.push_back(train::fill_masks(*loaded.model, ids, 3));
  }
  REQUIRE(fills[0].size() == 2);
  CHECK(fills[0][0].position == 5);
  CHECK(fills[0][1].position == 20);
  for (size_t m = 0; m < 2; ++m) {
    REQUIRE(fills[0][m].top.size() == 3);
    CHECK(fills[0][m].top[0].second >= fills[0][m].top[1].second);
    for (size_t r = 0; r < 3; ++r) {
      CHECK(fills[1][m].top[r].first == fills[0][m].top[r].first);
      CHECK(fills[1][m].top[r].second == fills[0][m].top[r].second);
    }
  }
}

TEST_CASE("a folder without a tokenizer tinygpt reads loads with one note", "[train][bert]") {
  testing::ScratchDir dir;
  nn::BertForMaskedLM model(small_bert(12), 1);
  io::commit_files(dir.file("m"), {{"config.json", train::bert_config_to_json(model.config())},
                                   {"model.safetensors", io::encode_safetensors(train::to_hugging_face_bert(model))}});
  const train::LoadedBert loaded = train::load_bert(dir.file("m"));
  CHECK_FALSE(loaded.tokenizer);
  REQUIRE(loaded.notes.size() == 1);
  CHECK_THAT(loaded.notes[0], Catch::Contains("no tokenizer.json"));
}

TEST_CASE("a saved encoder gives the [MASK] probabilities of an independent PyTorch BERT forward",
          "[train][bert][torch][slow]") {
  if (!run("/usr/bin/python3 -c 'import torch' 2>/dev/null")) {
    WARN("skipped: /usr/bin/python3 has no torch");
    return;
  }
  testing::ScratchDir dir;
  const MaskedLMTokenizer tok = MaskedLMTokenizer::fit(kText);
  nn::BertForMaskedLM model(small_bert(tok.vocab_size()), 6);
  scramble(model, 7);
  train::save_bert(dir.file("m"), model, tok);
  const std::vector<int64_t> ids = tok.encode("the c[MASK]t s[MASK]t");
  const std::vector<int64_t> framed = MaskedLMTokenizer::frame(ids);
  std::string command = "/usr/bin/python3 " TINYGPT_SOURCE_DIR "/tests/train/bert_reference.py " + dir.file("m");
  for (int64_t id : framed) command += " " + std::to_string(id);
  const std::optional<std::string> out = run(command);
  REQUIRE(out);
  const auto probs = nlohmann::json::parse(*out)["probs"];
  const std::vector<train::MaskFill> fills = train::fill_masks(model, ids, tok.vocab_size());
  REQUIRE(fills.size() == 2);
  for (const train::MaskFill& fill : fills) {
    const auto& row = probs[static_cast<size_t>(fill.position + 1)];  // + 1: [CLS]
    for (const auto& [id, p] : fill.top) CHECK(p == Approx(row[static_cast<size_t>(id)].get<double>()).margin(1e-5));
  }
}
