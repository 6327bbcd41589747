#include "tinygpt/heads/encoder_heads.hpp"

#include <algorithm>
#include <numeric>

#include "tinygpt/autograd/generator.hpp"
#include "tinygpt/autograd/tape.hpp"
#include "tinygpt/data/masked_lm.hpp"
#include "tinygpt/data/toy_corpus.hpp"
#include "tinygpt/heads/head_scores.hpp"
#include "tinygpt/heads/row_tally.hpp"

namespace tinygpt::heads {
namespace {

using data::MaskedLMTokenizer;

constexpr int64_t kEchoProbes = 16;
// The span of builtin:toy-mlm's echo documents, so that the probes ask what a copy head of its
// runs learnt to do: find the same position kToyMlmEchoChars + 1 away.
constexpr int64_t kEchoMaxSpan = data::kToyMlmEchoChars;

// Sums of each head's copy weights and how many queries they are over.
struct CopyTally {
  double forward = 0, backward = 0;
  int64_t n = 0;
};

// Calls f(head index, row pointer, query) for every row of every head of `weights`.
template <typename F>
void each_row(const std::vector<Tensor>& weights, F f) {
  for (size_t l = 0; l < weights.size(); ++l) {
    const int64_t heads = weights[l].size(1), t = weights[l].size(2);
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < t; ++i) {
        f(l * static_cast<size_t>(heads) + static_cast<size_t>(h), weights[l].data<float>() + (h * t + i) * t, i, t);
      }
    }
  }
}

EncoderHeadScores finish(int64_t layer, int64_t head, const RowTally& t, const CopyTally& c) {
  EncoderHeadScores s;
  s.layer = layer;
  s.head = head;
  s.previous_token = t.previous_token();
  s.next_token = t.next_token();
  s.self = t.current_token();
  // The first key is [CLS]: from a query after it, mass on [CLS] plus mass on the last key [SEP].
  s.sink = t.first_token() + t.last_token();
  s.local = t.local_mass();
  s.entropy = t.mean_entropy();
  s.copy_forward = RowTally::mean(c.forward, c.n);
  s.copy_backward = RowTally::mean(c.backward, c.n);
  // A copy head may copy one way only (each direction is its own job): its better direction.
  s.copy = std::max(s.copy_forward, s.copy_backward);
  const Role role = pick_role({{"previous-token", s.previous_token}, {"next-token", s.next_token},
                               {"self", s.self}, {"sink", s.sink}, {"copy", s.copy}},
                              s.local, s.entropy, "broad");
  s.role = role.name;
  s.role_score = role.score;
  return s;
}

// Sets each layer's head mask so that `removed` heads are zeroed; clears them when destroyed.
class RemovedHeads {
 public:
  RemovedHeads(nn::BertForMaskedLM& model, const std::vector<HeadRef>& removed) : model_(model) {
    const nn::BertConfig& c = model.config();
    std::vector<std::vector<double>> masks(static_cast<size_t>(c.num_hidden_layers));
    for (const HeadRef& h : removed) {
      auto& mask = masks[static_cast<size_t>(h.layer)];
      if (mask.empty()) mask.assign(static_cast<size_t>(c.num_attention_heads), 1.0);
      mask[static_cast<size_t>(h.head)] = 0.0;
    }
    for (size_t l = 0; l < masks.size(); ++l) (*model.bert->encoder->layer)[l].attention->self->set_head_mask(masks[l]);
  }
  ~RemovedHeads() {
    for (auto& layer : *model_.bert->encoder->layer) layer->attention->self->set_head_mask({});
  }
  RemovedHeads(const RemovedHeads&) = delete;
  RemovedHeads& operator=(const RemovedHeads&) = delete;

 private:
  nn::BertForMaskedLM& model_;
};

}  // namespace

std::vector<EchoProbe> echo_probes(const std::vector<int64_t>& alphabet, int64_t space_id,
                                   int64_t positions, uint64_t seed) {
  const int64_t separator = space_id >= 0 ? 1 : 0;
  // [CLS] SPAN sep SPAN [SEP]
  const int64_t span = std::min({kEchoMaxSpan, static_cast<int64_t>(alphabet.size()), (positions - 2 - separator) / 2});
  if (span < 2) return {};
  const int64_t period = span + separator;
  std::vector<EchoProbe> out;
  Generator gen(seed);
  std::vector<int64_t> letters = alphabet;
  for (int64_t p = 0; p < kEchoProbes; ++p) {
    gen.shuffle_front(letters, span);
    std::vector<int64_t> ids = {MaskedLMTokenizer::kCls};
    ids.insert(ids.end(), letters.begin(), letters.begin() + span);
    if (separator > 0) ids.push_back(space_id);
    ids.insert(ids.end(), letters.begin(), letters.begin() + span);
    ids.push_back(MaskedLMTokenizer::kSep);
    out.push_back({std::move(ids), span, period});
  }
  return out;
}

EncoderProbes encoder_probes(const ProbeSet& set, const data::Tokenizer& tokenizer, int64_t positions) {
  const std::vector<int64_t> space = tokenizer.encode(" ");
  const int64_t space_id = space.size() == 1 && space[0] != MaskedLMTokenizer::kUnk ? space[0] : -1;
  EncoderProbes out;
  for (const auto& text : set.probes.texts) out.texts.push_back(MaskedLMTokenizer::frame(text));
  out.picture = MaskedLMTokenizer::frame(set.picture);
  std::vector<int64_t> characters;
  for (const int64_t id : set.probes.alphabet) {
    if (id > MaskedLMTokenizer::kMask && id != space_id) characters.push_back(id);
  }
  out.echoes = echo_probes(characters, space_id, positions);
  return out;
}

std::vector<std::pair<std::string, double>> named_scores(const EncoderHeadScores& h) {
  return {{"role_score", h.role_score}, {"previous_token", h.previous_token}, {"next_token", h.next_token},
          {"self", h.self}, {"sink", h.sink}, {"copy", h.copy}, {"copy_forward", h.copy_forward},
          {"copy_backward", h.copy_backward}, {"local", h.local}, {"entropy", h.entropy}};
}

std::vector<Tensor> encoder_attention(nn::BertForMaskedLM& model, const std::vector<int64_t>& ids) {
  NoGradGuard no_grad;
  model.eval();
  model.set_keep_attention_weights(true);
  model.forward(Tensor::from_ids(ids, {1, static_cast<int64_t>(ids.size())}));
  std::vector<Tensor> weights = model.attention_weights();
  model.set_keep_attention_weights(false);
  for (Tensor& w : weights) w = w.dtype() == DType::f32 ? w : w.to(DType::f32);
  return weights;
}

std::vector<int64_t> with_masks(std::vector<int64_t> framed) {
  if (std::find(framed.begin(), framed.end(), MaskedLMTokenizer::kMask) != framed.end()) return framed;
  for (size_t i = 4; i + 1 < framed.size(); i += 7) framed[i] = MaskedLMTokenizer::kMask;
  return framed;
}

std::vector<MaskRows> mask_rows(const std::vector<Tensor>& maps, const std::vector<int64_t>& framed) {
  std::vector<MaskRows> out;
  const auto t = static_cast<int64_t>(framed.size());
  for (int64_t i = 0; i < t; ++i) {
    if (framed[static_cast<size_t>(i)] != MaskedLMTokenizer::kMask) continue;
    MaskRows mask{i, {}};
    each_row(maps, [&](size_t, const float* w, int64_t query, int64_t keys) {
      if (query == i) mask.rows.emplace_back(w, w + keys);
    });
    out.push_back(std::move(mask));
  }
  return out;
}

std::vector<EncoderHeadScores> score_encoder_heads(nn::BertForMaskedLM& model, const EncoderProbes& probes) {
  const nn::BertConfig& c = model.config();
  const size_t n = static_cast<size_t>(c.num_hidden_layers * c.num_attention_heads);
  std::vector<RowTally> tallies(n);
  std::vector<CopyTally> copies(n);
  NoGradGuard no_grad;
  model.eval();
  for (const auto& ids : probes.texts) {
    each_row(encoder_attention(model, ids), [&](size_t k, const float* w, int64_t i, int64_t t) { tallies[k].add_row(w, i, t); });
  }
  for (const EchoProbe& e : probes.echoes) {
    each_row(encoder_attention(model, e.ids), [&](size_t k, const float* w, int64_t i, int64_t) {
      if (i >= 1 && i <= e.span) {
        copies[k].forward += w[i + e.period];
        ++copies[k].n;
      } else if (i > e.period && i <= e.period + e.span) {
        copies[k].backward += w[i - e.period];
      }
    });
  }
  std::vector<EncoderHeadScores> out;
  for (size_t k = 0; k < n; ++k) {
    const auto index = static_cast<int64_t>(k);
    out.push_back(finish(index / c.num_attention_heads, index % c.num_attention_heads, tallies[k], copies[k]));
  }
  return out;
}

double second_copy_accuracy(nn::BertForMaskedLM& model, const std::vector<EchoProbe>& echoes,
                            const std::vector<HeadRef>& removed) {
  if (echoes.empty()) return 0.0;
  NoGradGuard no_grad;
  model.eval();
  const RemovedHeads ablated(model, removed);
  int64_t correct = 0, total = 0;
  for (const EchoProbe& e : echoes) {
    // Row r: the probe with the r-th character of its second copy masked.
    const auto t = static_cast<int64_t>(e.ids.size());
    std::vector<int64_t> rows;
    for (int64_t r = 0; r < e.span; ++r) {
      rows.insert(rows.end(), e.ids.begin(), e.ids.end());
      rows[static_cast<size_t>(r * t + 1 + e.period + r)] = MaskedLMTokenizer::kMask;
    }
    const Tensor logits = model.forward(Tensor::from_ids(rows, {e.span, t})).to(DType::f32);
    const int64_t vocab = logits.size(2);
    for (int64_t r = 0; r < e.span; ++r) {
      const int64_t position = 1 + e.period + r;
      const float* row = logits.data<float>() + (r * t + position) * vocab;
      correct += std::max_element(row, row + vocab) - row == e.ids[static_cast<size_t>(position)];
      ++total;
    }
  }
  return static_cast<double>(correct) / static_cast<double>(total);
}

CopyAblation ablate_copy_heads(nn::BertForMaskedLM& model, const std::vector<EchoProbe>& echoes,
                               const std::vector<EncoderHeadScores>& scores, bool each_head) {
  CopyAblation out;
  out.accuracy = second_copy_accuracy(model, echoes);
  for (const EncoderHeadScores& s : scores) {
    if (each_head) out.without_head.push_back(second_copy_accuracy(model, echoes, {{s.layer, s.head}}));
    if (s.role == "copy") out.copy_heads.push_back({s.layer, s.head});
  }
  // Heads from the least copying up.
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a].copy < scores[b].copy; });
  if (out.copy_heads.empty() && !order.empty()) out.copy_heads.push_back({scores[order.back()].layer, scores[order.back()].head});
  for (const size_t k : order) {
    const HeadRef h{scores[k].layer, scores[k].head};
    if (out.other_heads.size() == out.copy_heads.size()) break;
    if (std::find(out.copy_heads.begin(), out.copy_heads.end(), h) == out.copy_heads.end()) out.other_heads.push_back(h);
  }
  out.without_copy_heads = second_copy_accuracy(model, echoes, out.copy_heads);
  out.without_other_heads = second_copy_accuracy(model, echoes, out.other_heads);
  return out;
}

nlohmann::json encoder_heads_json(const std::vector<EncoderHeadScores>& scores, const CopyAblation* ablation) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t k = 0; k < scores.size(); ++k) {
    const EncoderHeadScores& h = scores[k];
    nlohmann::json head = {{"layer", h.layer}, {"head", h.head}, {"role", h.role}};
    for (const auto& [name, value] : named_scores(h)) head[name] = value;
    if (ablation != nullptr) head["ablated_copy_accuracy"] = ablation->without_head[k];
    out.push_back(std::move(head));
  }
  return out;
}

nlohmann::json copy_ablation_json(const CopyAblation& a) {
  return {{"second_copy_accuracy", a.accuracy},
          {"copy_heads", head_list_str(a.copy_heads)},
          {"without_copy_heads", a.without_copy_heads},
          {"other_heads", head_list_str(a.other_heads)},
          {"without_other_heads", a.without_other_heads}};
}

nlohmann::json encoder_formation_record(nn::BertForMaskedLM& model, const EncoderProbes& probes) {
  return {{"heads", encoder_heads_json(score_encoder_heads(model, probes))},
          {"second_copy_accuracy", second_copy_accuracy(model, probes.echoes)}};
}

}  // namespace tinygpt::heads
