#include "tinygpt/heads/head_analysis.hpp"

#include <algorithm>

#include "probe_runs.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt::heads {
namespace {

// Runs the model on `rows` and calls score(layer, head, A (T*T floats)) for every sequence and
// every head the model has (by its original number).
template <class Score>
Tensor for_each_pattern(nn::CausalLM& model, const std::vector<std::vector<int64_t>>& rows, Score score) {
  const Tensor logits = model.logits(batch_of(rows));  // (B,T,V)
  const auto maps = model.attention_weights();           // per layer (B,H,T,T)
  for (size_t layer = 0; layer < maps.size(); ++layer) {
    const Tensor a = maps[layer].to(DType::f32);
    const int64_t b = a.size(0), h = a.size(1), t = a.size(2);
    const std::vector<int64_t> numbers = layer_head_numbers(model, static_cast<int64_t>(layer));
    for (int64_t s = 0; s < b; ++s) {
      for (int64_t slot = 0; slot < h; ++slot) {
        score(static_cast<int64_t>(layer), numbers[static_cast<size_t>(slot)], a.data<float>() + (s * h + slot) * t * t, t);
      }
    }
  }
  return logits;
}

// Keeps the attention weights for the guard's lifetime (the fused path does not make them).
struct KeepAttention {
  nn::CausalLM& model;
  explicit KeepAttention(nn::CausalLM& m) : model(m) { model.set_keep_attention_weights(true); }
  ~KeepAttention() { model.set_keep_attention_weights(false); }
};

// A head pruned away: no attention, so no score, and the role that says why.
HeadScores pruned_head(int64_t layer, int64_t head) {
  HeadScores s;
  s.layer = layer;
  s.head = head;
  s.role = "pruned";
  return s;
}

}  // namespace

HeadReport analyze_heads(nn::CausalLM& model, const HeadProbes& probes) {
  const nn::CausalLMShape config = model.shape();
  if (probes.texts.empty() || probes.alphabet.empty()) {
    throw ValueError(Operation("analyze_heads"), "needs at least one text probe and a non-empty alphabet");
  }
  NoGradGuard no_grad;
  KeepAttention keep(model);
  model.eval();
  HeadReport report;
  report.period = probe_period(config.block_size, probes);
  const int64_t n_heads = config.n_layer * config.n_head;
  report.heads.resize(static_cast<size_t>(n_heads));
  for (int64_t i = 0; i < n_heads; ++i) {
    report.heads[static_cast<size_t>(i)].layer = i / config.n_head;
    report.heads[static_cast<size_t>(i)].head = i % config.n_head;
  }
  auto at = [&](int64_t layer, int64_t head) -> HeadScores& {
    return report.heads[static_cast<size_t>(layer * config.n_head + head)];
  };

  const double text_weight = 1.0 / static_cast<double>(probes.texts.size());
  for_each_pattern(model, probes.texts, [&](int64_t layer, int64_t head, const float* a, int64_t t) {
    HeadScores& s = at(layer, head);
    s.previous_token += text_weight * previous_token_score(a, t);
    s.current_token += text_weight * current_token_score(a, t);
    s.first_token += text_weight * first_token_score(a, t);
    s.local += text_weight * local_score(a, t, probes.local_window);
    s.entropy += text_weight * normalized_entropy(a, t);
  });

  const std::vector<std::vector<int64_t>> repeated = repeated_sequences(probes, report.period);
  const double random_weight = 1.0 / static_cast<double>(probes.num_random);
  const Tensor logits =
      for_each_pattern(model, repeated, [&](int64_t layer, int64_t head, const float* a, int64_t t) {
        HeadScores& s = at(layer, head);
        s.induction += random_weight * induction_score(a, t, report.period);
        s.duplicate_token += random_weight * duplicate_token_score(a, t, report.period);
      });
  const CopyLosses losses = copy_losses(logits, repeated, report.period);
  report.first_copy_loss = losses.first;
  report.second_copy_loss = losses.second;
  for (auto& s : report.heads) assign_role(s);
  for (int64_t layer = 0; layer < config.n_layer; ++layer) {
    const std::vector<int64_t> kept = layer_head_numbers(model, layer);
    for (int64_t head = 0; head < config.n_head; ++head) {
      if (std::find(kept.begin(), kept.end(), head) == kept.end()) at(layer, head) = pruned_head(layer, head);
    }
  }
  return report;
}

std::vector<Tensor> attention_maps(nn::CausalLM& model, const std::vector<int64_t>& ids) {
  NoGradGuard no_grad;
  KeepAttention keep(model);
  model.eval();
  model.logits(batch_of({ids}));
  std::vector<Tensor> maps;
  for (const Tensor& w : model.attention_weights()) {
    const Tensor map = reshape(w, {w.size(1), w.size(2), w.size(3)}).to(DType::f32);  // (H',T,T)
    // A layer with pruned heads: each head at its original number, a pruned one attending nowhere.
    const std::vector<int64_t> kept = layer_head_numbers(model, static_cast<int64_t>(maps.size()));
    std::vector<Tensor> heads;
    for (int64_t head = 0, slot = 0; head < model.shape().n_head; ++head) {
      const bool has = slot < map.size(0) && kept[static_cast<size_t>(slot)] == head;
      heads.push_back(has ? narrow(map, 0, slot++, 1) : Tensor::zeros({1, map.size(1), map.size(2)}));
    }
    maps.push_back(heads.size() == 1 ? heads[0] : concat(heads, 0));
  }
  return maps;
}

std::string HeadReport::table() const {
  std::string out = fmt::format("{:>5} {:>4}  {:<15} {:>5}   {:>5} {:>6} {:>5} {:>5} {:>5} {:>5} {:>7}\n",
                                "layer", "head", "role", "score", "prev", "induct", "dup",
                                "first", "curr", "local", "entropy");
  for (const auto& s : heads) {
    out += fmt::format(
        "{:>5} {:>4}  {:<15} {:>5.2f}   {:>5.2f} {:>6.2f} {:>5.2f} {:>5.2f} {:>5.2f} {:>5.2f} {:>7.2f}\n",
        s.layer, s.head, s.role, s.role_score, s.previous_token, s.induction, s.duplicate_token,
        s.first_token, s.current_token, s.local, s.entropy);
  }
  out += fmt::format(
      "in-context: on random sequences repeated twice (period {}), mean loss {:.3f} on the first "
      "copy, {:.3f} on the second ({:.0f}% of the first)\n",
      period, first_copy_loss, second_copy_loss, 100.0 * second_copy_ratio());
  return out;
}

double HeadReport::second_copy_ratio() const {
  return first_copy_loss > 0 ? second_copy_loss / first_copy_loss : 0.0;
}

std::string HeadReport::json() const { return heads_json().dump(2); }

nlohmann::json HeadReport::in_context_json() const {
  return {{"first_copy_loss", first_copy_loss},
          {"second_copy_loss", second_copy_loss},
          {"ratio", second_copy_ratio()}};
}

nlohmann::json HeadReport::heads_json() const {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& s : heads) {
    list.push_back({{"layer", s.layer},
                    {"head", s.head},
                    {"role", s.role},
                    {"role_score", s.role_score},
                    {"previous_token", s.previous_token},
                    {"induction", s.induction},
                    {"duplicate_token", s.duplicate_token},
                    {"first_token", s.first_token},
                    {"current_token", s.current_token},
                    {"local", s.local},
                    {"entropy", s.entropy}});
  }
  return list;
}

}  // namespace tinygpt::heads
