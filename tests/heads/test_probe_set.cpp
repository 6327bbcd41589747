// The head probes a run is analysed on (heads/probe_set.hpp): its own validation windows.
#include <catch2/catch.hpp>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/data/bpe.hpp"
#include "tinygpt/data/data_source.hpp"
#include "tinygpt/data/toy_corpus.hpp"
#include "tinygpt/heads/probe_set.hpp"

using namespace tinygpt;

namespace {

std::vector<int64_t> ids_of(const data::Batch& batch) {
  return {batch.inputs.data<int64_t>(), batch.inputs.data<int64_t>() + batch.inputs.numel()};
}

}  // namespace

TEST_CASE("probes are evenly spread windows of the run's own validation split", "[heads][probes]") {
  const std::string text = data::generate_toy_corpus(3, 20000);
  const data::CharTokenizer tokenizer = data::CharTokenizer::fit(text);
  for (double val_fraction : {0.1, 0.3}) {
    const data::TextDataset dataset(tokenizer.encode(text), 32, val_fraction);
    const heads::ProbeSet set = heads::dataset_probes(dataset, tokenizer, "a.txt");
    const int64_t windows = dataset.num_windows(data::Split::val);
    REQUIRE(set.probes.texts.size() == 16);
    const int64_t stride = windows / 16;
    for (size_t i = 0; i < set.probes.texts.size(); ++i) {
      CHECK(set.probes.texts[i] ==
            ids_of(dataset.window_batch(data::Split::val, static_cast<int64_t>(i) * stride, 1)));
    }
    CHECK(set.picture == set.probes.texts[0]);  // not the toy corpus: its first window
    CHECK(set.probes.alphabet.size() == 26);     // the letters
  }
}

TEST_CASE("on subword tokens the random sequences are word pieces the run's text holds, never a "
          "byte it has not seen", "[heads][probes]") {
  const std::string text = data::generate_toy_corpus(3, 20000);
  const data::BpeTokenizer tokenizer = data::train_bpe(text, 300);
  const data::TextDataset dataset(tokenizer.encode(text), 32, 0.1);
  const heads::ProbeSet set = heads::dataset_probes(dataset, tokenizer, data::kToyCorpus);
  const std::vector<bool> occurs = dataset.occurring_ids(tokenizer.vocab_size());
  bool subword = false;
  for (const int64_t id : set.probes.alphabet) {
    const std::string token = tokenizer.token(id);
    CHECK(occurs[static_cast<size_t>(id)]);
    CHECK(token.find_first_not_of("abcdefghijklmnopqrstuvwxyz") == std::string::npos);  // no A-Z, 0-9
    subword = subword || token.size() > 1;
  }
  CHECK(subword);
  CHECK(set.probes.alphabet.size() >= 26);  // every letter occurs in the corpus
}

TEST_CASE("a run without a validation split is probed on its training windows, and the toy corpus "
          "shows one of its documents", "[heads][probes]") {
  const std::string text = data::generate_toy_corpus(3, 2000);
  const data::CharTokenizer tokenizer(std::vector<char32_t>(data::kToyAlphabet.begin(), data::kToyAlphabet.end()));
  const data::TextDataset dataset(tokenizer.encode(text), 16, 0.0);
  const heads::ProbeSet set = heads::dataset_probes(dataset, tokenizer, data::kToyCorpus);
  CHECK(set.probes.texts[0] == ids_of(dataset.window_batch(data::Split::train, 0, 1)));
  CHECK(tokenizer.decode(set.picture) == data::toy_probe_text(1).substr(0, 16));  // the context
}

TEST_CASE("text probes are cut to the context, and too short a text or model is refused",
          "[heads][probes]") {
  const data::CharTokenizer tokenizer = data::CharTokenizer::fit("abcdefghij");
  const heads::ProbeSet set = heads::text_probes(tokenizer.encode("abcdefghij"), tokenizer, 4);
  CHECK(set.picture == tokenizer.encode("abcd"));
  CHECK(set.probes.alphabet.size() == 10);
  try {
    heads::text_probes(tokenizer.encode("a"), tokenizer, 4);
    FAIL("a one-token text was accepted");
  } catch (const SettingError& e) {  // named as data, so a program calls it by its own name
    CHECK(e.setting() == "text");
    CHECK(std::string(e.what()).find("has 1 token") != std::string::npos);
  }

  nn::GPTConfig config;
  config.vocab_size = 1;
  CHECK(heads::probe_obstacle(config).find("vocabulary of 1") != std::string::npos);
  config.vocab_size = 30;
  config.block_size = 3;
  CHECK(heads::probe_obstacle(config).find("context of 3") != std::string::npos);
  config.block_size = 4;
  CHECK(heads::probe_obstacle(config).empty());
}
