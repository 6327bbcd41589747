#pragma once
// The roles of a bidirectional encoder's heads (nn::BertForMaskedLM), scored on its inputs framed
// [CLS] ... [SEP]. On text windows, per head, the mean over the queries of the weight on
//   previous_token  i - 1      next_token  i + 1      self  i itself
//   sink            [CLS] and [SEP] together (the first and last keys)
//   local           |i - j| <= 2   entropy  of the row over its keys / its maximum (0 one key, 1 flat)
// and on echo documents, as the toy corpus's "SPAN SPAN." (a span of distinct random characters
// said twice, P = span + 1 apart), the copy scores:
//   copy_forward   from each position i of the first copy, the weight on i + P (the same
//                  position of the second copy)
//   copy_backward  from each position i of the second copy, the weight on i - P
//   copy           the larger of the two: a head may copy one way only.
// role: heads::pick_role over previous-token, next-token, self, sink and copy (the largest if at
// least 0.4; else "local" if local >= 0.6; else "broad" if entropy >= 0.6; else "mixed").
//
// Ablation: each second-copy character masked alone ([MASK]) is predicted from the rest, the
// first copy included; the share predicted right is the second-copy accuracy, which the copy heads
// carry. A head is ablated by zeroing its output before the output projection.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tinygpt/heads/ablation.hpp"
#include "tinygpt/heads/probe_set.hpp"
#include "tinygpt/nn/bert.hpp"

namespace tinygpt::heads {

// One echo document, framed: [CLS] SPAN sep SPAN [SEP] (sep: a space when the vocabulary has one,
// space_id < 0 for none); the first copy starts at position 1, the second at 1 + period.
struct EchoProbe {
  std::vector<int64_t> ids;
  int64_t span = 0;
  int64_t period = 0;
};

struct EncoderProbes {
  std::vector<std::vector<int64_t>> texts;  // framed windows of text
  std::vector<EchoProbe> echoes;
  std::vector<int64_t> picture;             // framed: the ids drawn in the heatmaps and explorer
};

// Echo documents of up to 16 distinct characters of `alphabet` (ids of characters, no special),
// as many as fit in `positions` with their frame, drawn from a fixed seed: the same probes every
// time. None when fewer than 2 characters fit.
std::vector<EchoProbe> echo_probes(const std::vector<int64_t>& alphabet, int64_t space_id,
                                   int64_t positions, uint64_t seed = 1);
// The probe set's texts and picture framed, with echo_probes of its alphabet's characters
// (separated by the tokenizer's space, if it has one).
EncoderProbes encoder_probes(const ProbeSet& set, const data::Tokenizer& tokenizer, int64_t positions);

struct EncoderHeadScores {
  int64_t layer = 0;
  int64_t head = 0;
  double previous_token = 0.0, next_token = 0.0, self = 0.0, sink = 0.0, local = 0.0, entropy = 0.0;
  double copy_forward = 0.0, copy_backward = 0.0, copy = 0.0;
  std::string role;
  double role_score = 0.0;
};

// A head's scores by name (the keys of `heads --json`, the log and the explorer), role_score first.
std::vector<std::pair<std::string, double>> named_scores(const EncoderHeadScores& h);

// Each layer's (1,H,T,T) attention weights of the model's forward over framed `ids`, as f32 (eval
// mode, no gradient).
std::vector<Tensor> encoder_attention(nn::BertForMaskedLM& model, const std::vector<int64_t>& ids);

// The [MASK] view's picture: `framed` as it is when it holds a [MASK], else with every seventh
// text position masked from the fourth on (about BERT's 15%), so that the view has masks to show.
std::vector<int64_t> with_masks(std::vector<int64_t> framed);

// Where each [MASK] of `framed` attends in `maps` (encoder_attention's over `framed`): its index
// in `framed` (the query) and every head's row over all keys, rows[layer * heads + head].
struct MaskRows {
  int64_t query = 0;
  std::vector<std::vector<float>> rows;
};
std::vector<MaskRows> mask_rows(const std::vector<Tensor>& maps, const std::vector<int64_t>& framed);

// Every head, layer by layer (eval mode, no gradient).
std::vector<EncoderHeadScores> score_encoder_heads(nn::BertForMaskedLM& model, const EncoderProbes& probes);

// The share of second-copy characters predicted right, each masked alone, with `removed` heads
// ablated (restored after).
double second_copy_accuracy(nn::BertForMaskedLM& model, const std::vector<EchoProbe>& echoes,
                            const std::vector<HeadRef>& removed = {});

struct CopyAblation {
  double accuracy = 0.0;             // every head present
  // Each head ablated alone, layer by layer, head by head (empty unless asked for).
  std::vector<double> without_head;
  // The copy heads (role "copy", or the best copier when none has it) ablated together, and as
  // many others (the least copying) ablated together.
  std::vector<HeadRef> copy_heads, other_heads;
  double without_copy_heads = 0.0, without_other_heads = 0.0;
};
CopyAblation ablate_copy_heads(nn::BertForMaskedLM& model, const std::vector<EchoProbe>& echoes,
                               const std::vector<EncoderHeadScores>& scores, bool each_head = false);

// [{"layer", "head", "role", every named score (+ "ablated_copy_accuracy" with an ablation of
// each head)}].
nlohmann::json encoder_heads_json(const std::vector<EncoderHeadScores>& scores, const CopyAblation* ablation = nullptr);
// {"second_copy_accuracy", "copy_heads", "without_copy_heads", "other_heads", "without_other_heads"}
nlohmann::json copy_ablation_json(const CopyAblation& ablation);

// What a training evaluation logs: {"heads": encoder_heads_json, "second_copy_accuracy"}.
nlohmann::json encoder_formation_record(nn::BertForMaskedLM& model, const EncoderProbes& probes);

}  // namespace tinygpt::heads
