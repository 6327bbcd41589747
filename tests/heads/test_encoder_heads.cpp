// An encoder's head roles (encoder_heads.hpp): the echo probes, the scores' arithmetic on heads
// whose attention is known (flat: every query and key alike), and ablation that leaves the
// model as it was.
#include <algorithm>
#include <memory>
#include <set>

#include <catch2/catch.hpp>

#include "tinygpt/data/masked_lm.hpp"
#include "tinygpt/heads/encoder_heads.hpp"

using namespace tinygpt;
using namespace tinygpt::heads;

namespace {

std::vector<int64_t> letters(int64_t n) {
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back(10 + i);
  return ids;
}

// A small BERT whose queries and keys are all zero: every head attends evenly to every key.
std::unique_ptr<nn::BertForMaskedLM> flat_bert() {
  nn::BertConfig c;
  c.vocab_size = 40;
  c.hidden_size = 16;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.intermediate_size = 32;
  c.max_position_embeddings = 24;
  auto model = std::make_unique<nn::BertForMaskedLM>(c, 3);
  for (auto& layer : *model->bert->encoder->layer) {
    for (auto* proj : {layer->attention->self->q_proj.get(), layer->attention->self->k_proj.get()}) {
      for (Tensor& p : proj->parameters()) p.fill_(0.0);
    }
  }
  return model;
}

}  // namespace

TEST_CASE("echo probes say a span of distinct characters twice, framed, the same every time", "[heads][encoder]") {
  const std::vector<EchoProbe> echoes = echo_probes(letters(26), 7, 40);
  REQUIRE(echoes.size() == 16);
  CHECK(echo_probes(letters(26), 7, 40)[3].ids == echoes[3].ids);
  for (const EchoProbe& e : echoes) {
    CHECK(e.span == 16);  // (40 - 3) / 2 would allow 18; 16 at most
    CHECK(e.period == 17);
    REQUIRE(static_cast<int64_t>(e.ids.size()) == 2 + 2 * e.span + 1);
    CHECK(e.ids.front() == data::MaskedLMTokenizer::kCls);
    CHECK(e.ids.back() == data::MaskedLMTokenizer::kSep);
    CHECK(e.ids[static_cast<size_t>(1 + e.span)] == 7);
    std::set<int64_t> distinct;
    for (int64_t i = 1; i <= e.span; ++i) {
      distinct.insert(e.ids[static_cast<size_t>(i)]);
      CHECK(e.ids[static_cast<size_t>(i)] == e.ids[static_cast<size_t>(i + e.period)]);
    }
    CHECK(static_cast<int64_t>(distinct.size()) == e.span);
  }
  // No separator, and a context that fits only short spans; none when 2 characters do not fit.
  const std::vector<EchoProbe> short_ones = echo_probes(letters(26), -1, 9);
  REQUIRE_FALSE(short_ones.empty());
  CHECK(short_ones[0].span == 3);
  CHECK(short_ones[0].period == 3);
  CHECK(echo_probes(letters(26), 7, 6).empty());
  CHECK(echo_probes(letters(1), 7, 40).empty());
}

TEST_CASE("a head attending evenly scores 1/T on each single key, sink 2/T, copy 1/T, and is broad",
          "[heads][encoder]") {
  const std::unique_ptr<nn::BertForMaskedLM> owner = flat_bert();
  nn::BertForMaskedLM& model = *owner;
  EncoderProbes probes;
  probes.texts = {data::MaskedLMTokenizer::frame(letters(10))};  // T = 12
  probes.echoes = echo_probes(letters(20), 5, 24);                // T = 2 + 2 * 10 + 1 = 23
  REQUIRE(probes.echoes[0].span == 10);
  const std::vector<EncoderHeadScores> scores = score_encoder_heads(model, probes);
  REQUIRE(scores.size() == 4);
  CHECK(scores[3].layer == 1);
  CHECK(scores[3].head == 1);
  for (const EncoderHeadScores& s : scores) {
    CHECK(s.previous_token == Approx(1.0 / 12).epsilon(1e-4));
    CHECK(s.next_token == Approx(1.0 / 12).epsilon(1e-4));
    CHECK(s.self == Approx(1.0 / 12).epsilon(1e-4));
    CHECK(s.sink == Approx(2.0 / 12).epsilon(1e-4));
    CHECK(s.copy_forward == Approx(1.0 / 23).epsilon(1e-4));
    CHECK(s.copy_backward == Approx(1.0 / 23).epsilon(1e-4));
    CHECK(s.copy == std::max(s.copy_forward, s.copy_backward));
    CHECK(s.entropy == Approx(1.0).epsilon(1e-4));
    CHECK(s.role == "broad");
  }
  const nlohmann::json j = encoder_heads_json(scores);
  for (const char* key : {"role", "previous_token", "next_token", "self", "sink", "copy", "copy_forward",
                          "copy_backward", "local", "entropy", "role_score"}) {
    INFO(key);
    CHECK(j[0].contains(key));
  }
}

TEST_CASE("ablating heads for the second-copy accuracy leaves the model as it was", "[heads][encoder]") {
  const std::unique_ptr<nn::BertForMaskedLM> owner = flat_bert();
  nn::BertForMaskedLM& model = *owner;
  const std::vector<EchoProbe> echoes = echo_probes(letters(20), 5, 24);
  const double intact = second_copy_accuracy(model, echoes);
  CHECK(intact >= 0.0);
  CHECK(intact <= 1.0);
  second_copy_accuracy(model, echoes, {{0, 1}, {1, 0}});
  CHECK(second_copy_accuracy(model, echoes) == intact);

  EncoderProbes probes;
  probes.texts = {data::MaskedLMTokenizer::frame(letters(10))};
  probes.echoes = echoes;
  const std::vector<EncoderHeadScores> scores = score_encoder_heads(model, probes);
  const CopyAblation a = ablate_copy_heads(model, echoes, scores, true);
  CHECK(a.accuracy == intact);
  CHECK(a.without_head.size() == 4);
  REQUIRE(a.copy_heads.size() == 1);  // no head is a copy head: the best copier stands for them
  REQUIRE(a.other_heads.size() == 1);
  CHECK_FALSE(a.other_heads[0] == a.copy_heads[0]);
  CHECK(copy_ablation_json(a).at("copy_heads").get<std::string>().size() == 3);
  CHECK(ablate_copy_heads(model, echoes, scores).without_head.empty());
}

TEST_CASE("the [MASK] view's rows are each head's row from each mask, and a picture without masks gets some",
          "[heads][encoder]") {
  using data::MaskedLMTokenizer;
  const std::vector<int64_t> text = MaskedLMTokenizer::frame(letters(12));
  const std::vector<int64_t> masked = with_masks(text);
  CHECK(masked[4] == MaskedLMTokenizer::kMask);
  CHECK(masked[11] == MaskedLMTokenizer::kMask);
  CHECK(std::count(masked.begin(), masked.end(), MaskedLMTokenizer::kMask) == 2);
  CHECK(masked.front() == MaskedLMTokenizer::kCls);
  CHECK(masked.back() == MaskedLMTokenizer::kSep);
  CHECK(with_masks(masked) == masked);  // a picture with a mask is taken as it is

  const std::unique_ptr<nn::BertForMaskedLM> model = flat_bert();
  const std::vector<Tensor> maps = encoder_attention(*model, masked);
  const std::vector<MaskRows> rows = mask_rows(maps, masked);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].query == 4);
  CHECK(rows[1].query == 11);
  const auto t = static_cast<int64_t>(masked.size());
  for (const MaskRows& mask : rows) {
    REQUIRE(mask.rows.size() == 4);  // 2 layers x 2 heads
    for (size_t k = 0; k < mask.rows.size(); ++k) {
      const float* expected = maps[k / 2].data<float>() + ((static_cast<int64_t>(k % 2) * t + mask.query) * t);
      CHECK(mask.rows[k] == std::vector<float>(expected, expected + t));
      for (const float w : mask.rows[k]) CHECK(w == Approx(1.0 / static_cast<double>(t)));  // flat heads
    }
  }
}
