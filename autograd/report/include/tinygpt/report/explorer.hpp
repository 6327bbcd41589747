#pragma once
// The attention explorer: one self-contained HTML page (inline CSS, JS and data, no external URL)
// that shows a run's attention heads interactively — the probe text as tokens with the attention
// of the hovered token shaded on the others, a head picker with each head's role and scores, the
// layer grids, the role table, the head-formation and loss curves and the ablation table. For an
// encoder-decoder the tokens are a source, the self-attention is the encoder's, and a
// cross-attention view shades the source by where the decoder looks while writing each output
// token. For an encoder the tokens include [CLS], [SEP] and [MASK], every token sees every
// other, and a [MASK] view shows every head's row from a chosen masked position beside the
// model's guesses there.
//
// Takes plain data only; the caller (the CLI) gathers it from a model and a run directory.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tinygpt::report {

// One head's role and its named scores, in display order, e.g. {"previous_token", 0.96}. Any
// name is carried through; the page knows a few (the role scores, and the ablation results
// "ablated_second_copy_ratio" and "ablated_loss_delta", which add the ablation table).
struct HeadEntry {
  int64_t layer = 0;
  int64_t head = 0;
  std::string role;
  std::vector<std::pair<std::string, double>> scores;
};

// The in-context line: mean loss on the first and the second copy of a repeated random sequence.
struct InContext {
  double first_copy_loss = 0.0;
  double second_copy_loss = 0.0;
  double ratio = 0.0;  // second / first
};

// The head scores of one evaluation during training (a log.jsonl eval record with "heads").
struct Snapshot {
  int64_t step = 0;
  std::vector<HeadEntry> heads;
  std::optional<InContext> in_context;
};

// A pair of heads that compose (a writer and a later head that reads it) and how much, e.g. the
// K-composition score, with the score of random matrices of the same shapes beside it.
struct HeadLink {
  int64_t from_layer = 0, from_head = 0, to_layer = 0, to_head = 0;
  double score = 0.0, baseline = 0.0;
};

struct Point {
  double x = 0.0;
  double y = 0.0;
};

// An encoder-decoder's cross-attention on one pair, over the source (ExplorerData::tokens).
struct CrossView {
  // Query i's output: the token the decoder writes there (the target, then its end token); its
  // input is the token before (the start token at 0).
  std::vector<std::string> output_tokens;  // (Tt)
  // For each output token, the source positions the task aligns it with (none for a token the
  // task does not align, e.g. a date's "-"); empty when the alignment is not known.
  std::vector<std::vector<int64_t>> aligned;
  int64_t layers = 0;
  int64_t heads = 0;
  std::vector<float> attention;          // (L,H,Tt,Ts) row-major, each row sums to 1
  std::vector<HeadEntry> head_entries;   // each head's "alignment" (and ablation) scores
  std::vector<Snapshot> formation;       // each evaluation's alignment per head
  std::vector<Point> exact_match;        // held-out exact match at each evaluation
};

// An encoder's [MASK] view: a masked position of the probe text (an index into
// ExplorerData::tokens) and the model's most probable tokens there. The page shows, for the one
// chosen, its attention row in every head (ExplorerData::attention), layer by layer.
struct MaskedPosition {
  int64_t position = 0;
  std::vector<std::pair<std::string, double>> top;  // (token, probability), most probable first
};

struct ExplorerData {
  std::string title;                      // e.g. the run directory
  std::vector<std::pair<std::string, std::string>> facts;  // shown under the title, e.g. {"layers", "2"}
  std::vector<std::string> tokens;        // the probe text, one string per token (T)
  bool causal = true;                     // false: every token sees every other (an encoder)
  int64_t layers = 0;
  int64_t heads = 0;
  std::vector<float> attention;           // (L,H,T,T) row-major, rows are queries, each sums to 1
  std::vector<HeadEntry> head_entries;    // every head, layer by layer, head by head
  std::optional<InContext> in_context;
  std::vector<Point> step_loss;           // training loss per step
  std::vector<Point> eval_train_loss;     // the evaluations' losses
  std::vector<Point> eval_val_loss;
  std::vector<Snapshot> formation;        // head scores over training (may be empty)
  std::vector<HeadLink> composition;      // the top K-composition pairs, drawn as arrows (may be empty)
  std::optional<CrossView> cross;         // an encoder-decoder's
  std::vector<MaskedPosition> masks;      // an encoder's [MASK] view (empty: none)
};

// Attention weights are stored in the page quantised to one byte, q = round(255 * w) (w clamped
// to [0, 1]), base64-encoded; the page shows q / 255, within 1/510 of w.
constexpr int kAttentionLevels = 255;
uint8_t quantize_weight(float w);

// The page. Throws ValueError when the shapes do not agree (attention.size() != L*H*T*T, a head
// entry or composition link outside L x H, no tokens; a cross view's attention.size() != L*H*Tt*T, an aligned
// position outside the source; a masked position outside the tokens).
std::string explorer_html(const ExplorerData& data);

}  // namespace tinygpt::report
