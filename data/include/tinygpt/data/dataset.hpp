#pragma once
// TextDataset: a token stream cut into a train and a val split, served as (B, T) batches of
// next-token prediction: targets are the inputs shifted one token to the left.
//
// The first floor(n * (1 - val_fraction)) tokens are the train split and the rest the val split,
// as nanoGPT does. Two ways to read a split:
//   - sample_batch: random windows for training; each row starts at a uniform position among all
//     valid starts, drawn from the caller's Generator so a resumed run draws the same batches;
//   - window_batch: the fixed non-overlapping windows k = 0, 1, ... of num_windows(), for an
//     evaluation that gives the same number on every run.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "tinygpt/autograd/generator.hpp"
#include "tinygpt/autograd/tensor.hpp"

namespace tinygpt::data {

enum class Split {
  train,
  val,
  all,  // the whole token stream, both splits together
};

std::string_view split_name(Split split);  // "train", "val", "all"
// Inverse of split_name; throws ValueError listing the valid names.
Split parse_split(std::string_view name);

struct Batch {
  Tensor inputs;   // (B, T) i64
  Tensor targets;  // (B, T) i64: targets[b][t] is the token after inputs[b][t]
};

class TextDataset {
 public:
  // Throws ValueError unless block_size >= 1, val_fraction is in [0, 1), the train split has at
  // least block_size + 1 tokens and, when val_fraction > 0, so does the val split. With
  // val_fraction == 0 the val split is empty and only train and all can be read. Given `only`,
  // just that split must hold a window (a reader of one split, as eval, needs no other).
  TextDataset(std::vector<int64_t> tokens, int64_t block_size, double val_fraction = 0.1,
              std::optional<Split> only = std::nullopt);

  int64_t block_size() const { return block_size_; }
  int64_t size(Split split) const;  // tokens in the split
  // Whether each id below vocab_size occurs anywhere in the stream (both splits).
  std::vector<bool> occurring_ids(int64_t vocab_size) const;

  // batch_size random windows of the split. Draw order, which resume relies on: exactly
  // batch_size calls gen.randint(size(split) - block_size), one per row in row order, and
  // nothing else; row b reads the split's tokens [start_b, start_b + T] (T = block_size).
  // Throws ValueError for batch_size < 1 or a split with fewer than T + 1 tokens.
  Batch sample_batch(Split split, int64_t batch_size, Generator& gen) const;

  // floor((size - 1) / T) (0 for an empty split): window k has inputs [kT, kT + T) and targets
  // [kT + 1, kT + T + 1) of the split; a last partial window is dropped.
  int64_t num_windows(Split split) const;
  // Windows first, ..., first + count - 1 as one (count, T) batch. Throws IndexError unless
  // count >= 1 and 0 <= first and first + count <= num_windows(split).
  Batch window_batch(Split split, int64_t first, int64_t count) const;

 private:
  int64_t begin(Split split) const;  // index of the split's first token in tokens_
  // Row b reads tokens_[begin(split) + starts[b] ...] (starts relative to the split).
  Batch gather(Split split, const std::vector<int64_t>& starts) const;

  std::vector<int64_t> tokens_;
  int64_t block_size_;
  int64_t train_size_;
};

}  // namespace tinygpt::data
