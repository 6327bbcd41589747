// The masked LM's tokenizer (BERT's specials, tokenizer.json with a [CLS] $A [SEP] template) and
// BERT's 80/10/10 masking.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/data/masked_lm.hpp"

using namespace tinygpt;
using data::MaskedLMTokenizer;

TEST_CASE("MaskedLMTokenizer: specials first, written-out specials and unknown characters",
          "[data][masked_lm]") {
  const MaskedLMTokenizer tok = MaskedLMTokenizer::fit("the cat sat");
  CHECK(tok.vocab_size() == 5 + 7);  // ' ', a, c, e, h, s, t
  CHECK(tok.token(MaskedLMTokenizer::kMask) == "[MASK]");
  const std::vector<int64_t> ids = tok.encode("c[MASK]t!");
  REQUIRE(ids.size() == 4);
  CHECK(ids[1] == MaskedLMTokenizer::kMask);
  CHECK(ids[3] == MaskedLMTokenizer::kUnk);
  CHECK(tok.decode(ids) == "c[MASK]t[UNK]");
  CHECK(MaskedLMTokenizer::frame({7, 8}) == std::vector<int64_t>{2, 7, 8, 3});
}

TEST_CASE("MaskedLMTokenizer's tokenizer.json: added tokens, unk_token and the template, read back",
          "[data][masked_lm]") {
  const MaskedLMTokenizer tok = MaskedLMTokenizer::fit("hello world");
  const auto j = nlohmann::json::parse(tok.to_json());
  CHECK(j["added_tokens"].size() == 5);
  CHECK(j["added_tokens"][4]["content"] == "[MASK]");
  CHECK(j["model"]["unk_token"] == "[UNK]");
  CHECK(j["post_processor"]["type"] == "TemplateProcessing");
  CHECK(j["post_processor"]["single"][0]["SpecialToken"]["id"] == "[CLS]");
  CHECK(j["post_processor"]["single"][2]["SpecialToken"]["id"] == "[SEP]");
  const MaskedLMTokenizer back = MaskedLMTokenizer::from_json(tok.to_json());
  CHECK(back.to_json() == tok.to_json());
  auto broken = j;
  broken.erase("post_processor");
  CHECK_THROWS_WITH(MaskedLMTokenizer::from_json(broken.dump()), Catch::Contains("post_processor"));
}

TEST_CASE("mask_tokens: 15% chosen, 80/10/10, specials never, seeded", "[data][masked_lm]") {
  const int64_t rows = 64, cols = 66, vocab = 30;
  std::vector<int64_t> ids;
  Generator fill(1);
  for (int64_t r = 0; r < rows; ++r) {
    ids.push_back(MaskedLMTokenizer::kCls);
    for (int64_t c = 1; c + 1 < cols; ++c) ids.push_back(5 + fill.randint(vocab - 5));
    ids.push_back(MaskedLMTokenizer::kSep);
  }
  const Tensor tokens = Tensor::from_ids(ids, {rows, cols});
  data::Masking masking;
  masking.vocab_size = vocab;
  Generator gen(7);
  const data::MaskedBatch batch = data::mask_tokens(tokens, masking, gen);
  const int64_t* in = batch.inputs.data<int64_t>();
  const int64_t* labels = batch.labels.data<int64_t>();
  int64_t chosen = 0, masked = 0, kept = 0;
  for (int64_t i = 0; i < rows * cols; ++i) {
    const bool special = ids[static_cast<size_t>(i)] < 5;
    if (special) CHECK((labels[i] == -100 && in[i] == ids[static_cast<size_t>(i)]));
    if (labels[i] < 0) {
      CHECK(in[i] == ids[static_cast<size_t>(i)]);
      continue;
    }
    ++chosen;
    CHECK(labels[i] == ids[static_cast<size_t>(i)]);
    masked += in[i] == MaskedLMTokenizer::kMask ? 1 : 0;
    kept += in[i] == labels[i] ? 1 : 0;
    CHECK(in[i] >= 4);  // [MASK] or a character
  }
  CHECK(batch.chosen == chosen);
  const double share = static_cast<double>(chosen) / static_cast<double>(rows * (cols - 2));
  CHECK(share == Approx(0.15).margin(0.02));
  CHECK(static_cast<double>(masked) / static_cast<double>(chosen) == Approx(0.8).margin(0.05));
  CHECK(static_cast<double>(kept) / static_cast<double>(chosen) > 0.08);  // 10% + random hits
  // Resuming from the generator's state masks the same; three draws per position always.
  Generator again(7);
  CHECK(data::mask_tokens(tokens, masking, again).inputs.to_vector() == batch.inputs.to_vector());
  CHECK(again.state() == gen.state());
}

TEST_CASE("mask_tokens predicts something in every row and refuses a bad probability",
          "[data][masked_lm]") {
  data::Masking masking;
  masking.vocab_size = 10;
  masking.probability = 1e-9;
  Generator gen(3);
  const data::MaskedBatch batch =
      data::mask_tokens(Tensor::from_ids({2, 6, 7, 3, 2, 8, 9, 3}, {2, 4}), masking, gen);
  CHECK(batch.chosen == 2);
  masking.probability = 0.0;
  try {
    data::mask_tokens(Tensor::from_ids({2, 6, 3}, {1, 3}), masking, gen);
    FAIL("no error");
  } catch (const SettingError& e) {
    CHECK(e.setting() == "mask_probability");
  }
}
