// Heatmap grids of an encoder-decoder reading one pair: its encoder's and decoder's
// self-attention and its cross-attention, a PNG per layer.
#include <fmt/format.h>

#include "tinygpt/analysis/pair_pictures.hpp"
#include "tinygpt/analysis/run_report.hpp"
#include "tinygpt/plot/attention_plot.hpp"

namespace tinygpt::analysis {
namespace {

// Each head of an (H,Tq,Tk) f32 weight tensor as Tq x Tk floats.
std::vector<std::vector<float>> heads_of(const Tensor& w) {
  const int64_t cells = w.size(1) * w.size(2);
  std::vector<std::vector<float>> out;
  for (int64_t h = 0; h < w.size(0); ++h) out.emplace_back(w.data<float>() + h * cells, w.data<float>() + (h + 1) * cells);
  return out;
}

std::vector<std::string> head_titles(size_t n) {
  std::vector<std::string> t;
  for (size_t h = 0; h < n; ++h) t.push_back(fmt::format("head {}", h));
  return t;
}

}  // namespace

void draw_pair_heatmaps(const seq2seq::PairAttention& pair, HeatmapSet& pictures) {
  const std::string title = fmt::format("\"{}\" -> \"{}\"", pair.source_text, pair.target_text);
  const auto self_grids = [&](const char* stack, const std::vector<Tensor>& weights,
                              const std::vector<std::string>& labels) {
    for (size_t l = 0; l < weights.size(); ++l) {
      const auto heads = heads_of(weights[l]);
      plot::save_head_grid(pictures.path(fmt::format("{}_layer{}.png", stack, l)), heads,
                           static_cast<int>(labels.size()), labels, head_titles(heads.size()),
                           fmt::format("{} self-attention, layer {}: {}", stack, l, title));
    }
  };
  self_grids("encoder", pair.encoder, pair.source);
  self_grids("decoder", pair.decoder, pair.inputs);
  for (size_t l = 0; l < pair.cross.size(); ++l) {
    const auto heads = heads_of(pair.cross[l]);
    plot::save_cross_attention_grid(pictures.path(fmt::format("cross_layer{}.png", l)), heads,
                                    pair.inputs, pair.source, head_titles(heads.size()),
                                    fmt::format("cross-attention, layer {}: {}", l, title));
  }
}

}  // namespace tinygpt::analysis
