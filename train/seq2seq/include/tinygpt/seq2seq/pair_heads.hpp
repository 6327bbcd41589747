#pragma once
// The roles of an encoder-decoder's heads, scored with the reference targets fed to the decoder
// (teacher forcing) on a split's pairs:
//   self-attention (the encoder's, bidirectional; the decoder's, causal), per head, the mean over
//   the queries of a pair (padding excluded) of the weight on
//     previous_token  position i - 1          next_token  i + 1 (the encoder only)
//     current_token   i itself                first_token 0
//     local           |i - j| <= 2            entropy     of the row over its visible keys,
//                                                          divided by its maximum (0 one key, 1 flat)
//   role: heads::pick_role over previous_token, next_token, current_token and first_token (the
//   largest if at least 0.4; else "local" if local >= 0.6; else "diffuse" if entropy >= 0.6;
//   else "mixed"), the GPT heads' rule;
//   cross-attention: each head's alignment (pair_eval.hpp).
// Ablation removes cross-attention heads (their output set to zero before out_proj) and measures
// held-out exact match without them.
#include <string>
#include <utility>
#include <vector>

#include "tinygpt/seq2seq/pair_eval.hpp"

namespace tinygpt::seq2seq {

struct SelfHeadScores {
  int64_t layer = 0;
  int64_t head = 0;
  double previous_token = 0.0, next_token = 0.0, current_token = 0.0, first_token = 0.0;
  double local = 0.0, entropy = 0.0;
  std::string role;
  double role_score = 0.0;
};

// A head's scores by name (the keys of `heads --json` and the explorer page), role_score first.
inline std::vector<std::pair<std::string, double>> named_scores(const SelfHeadScores& h) {
  return {{"role_score", h.role_score}, {"previous_token", h.previous_token}, {"next_token", h.next_token},
          {"current_token", h.current_token}, {"first_token", h.first_token}, {"local", h.local},
          {"entropy", h.entropy}};
}

struct PairHeads {
  int64_t pairs = 0;
  std::vector<SelfHeadScores> encoder, decoder;  // layer by layer, head by head
  std::vector<CrossHeadScore> cross;             // empty without a known alignment
};

PairHeads score_pair_heads(nn::EncoderDecoder& model, const data::PairDataset& data,
                           const data::Tokenizer& tokenizer, const std::string& task,
                           data::Split split, int64_t max_pairs = 0);

struct CrossAblation {
  double exact_match = 0.0;  // every head present
  // Exact match with each cross-attention head removed alone, layer by layer, head by head.
  std::vector<double> without_head;
  // The aligned heads (alignment >= 0.5, or the best one when none reaches it) removed together.
  std::vector<CrossHeadScore> aligned;
  double without_aligned = 0.0;
};

// On the first `max_pairs` pairs of `split` (all when 0); `alignment` from score_pair_heads.
CrossAblation ablate_cross_heads(nn::EncoderDecoder& model, const data::PairDataset& data,
                                 const data::Tokenizer& tokenizer, data::Split split,
                                 int64_t max_pairs, const std::vector<CrossHeadScore>& alignment);

// One pair read by the model with its reference target fed to the decoder, for pictures.
struct PairAttention {
  std::string source_text, target_text;  // UTF-8
  std::vector<std::string> source;   // (S) tokens
  std::vector<std::string> inputs;   // (T) the decoder's: its start token, then the target
  std::vector<std::string> outputs;  // (T) what each decoder position writes: the target, then its end token
  // For each output, the source positions the task aligns it with (data::task_alignment; none
  // for the end token); empty when the task's alignment is not known.
  std::vector<std::vector<int64_t>> aligned;
  // Every layer's weights, f32: (H,S,S) encoder self-attention, (H,T,T) decoder self-attention,
  // (H,T,S) cross-attention (rows are the decoder's positions).
  std::vector<Tensor> encoder, decoder, cross;
};

// Pair `index` of `split`; `task` names the data (its alignment when it is a built-in task).
PairAttention pair_attention(nn::EncoderDecoder& model, const data::PairDataset& data,
                             const data::Tokenizer& tokenizer, const std::string& task,
                             data::Split split, int64_t index);

}  // namespace tinygpt::seq2seq
