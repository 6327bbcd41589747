#pragma once
// The argument checks every attention picture (PNG or terminal) starts with; messages start with
// `fn`, the public function's name.
#include <string>
#include <vector>

namespace tinygpt::plot {

// Throws ValueError for a seq_len outside [1, max_seq_len], ShapeError when labels.size() !=
// seq_len.
void check_positions(const char* fn, int seq_len, const std::vector<std::string>& labels,
                     int max_seq_len);

// Throws ValueError for a null weights pointer.
void check_weights(const char* fn, const float* weights);

}  // namespace tinygpt::plot
