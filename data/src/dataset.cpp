#include "tinygpt/data/dataset.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "tinygpt/autograd/error.hpp"

namespace tinygpt::data {

std::string_view split_name(Split split) {
  switch (split) {
    case Split::train:
      return "train";
    case Split::val:
      return "val";
    case Split::all:
      return "all";
  }
  return "?";
}

Split parse_split(std::string_view name) {
  for (Split split : {Split::train, Split::val, Split::all}) {
    if (name == split_name(split)) return split;
  }
  throw ValueError(fmt::format("unknown split '{}' (expected train, val or all)", name));
}

TextDataset::TextDataset(std::vector<int64_t> tokens, int64_t block_size, double val_fraction,
                         std::optional<Split> only)
    : tokens_(std::move(tokens)), block_size_(block_size) {
  if (block_size < 1) {
    throw SettingError(Operation("TextDataset"), "block_size", block_size,
                       fmt::format("block_size must be >= 1, got {}", block_size));
  }
  if (!(val_fraction >= 0.0 && val_fraction < 1.0)) {  // also rejects NaN
    throw SettingError(Operation("TextDataset"), "val_fraction", val_fraction,
                       fmt::format("val_fraction must be in [0, 1), got {}", val_fraction));
  }
  const auto n = static_cast<int64_t>(tokens_.size());
  train_size_ = static_cast<int64_t>(std::floor(static_cast<double>(n) * (1.0 - val_fraction)));

  const int64_t needed = block_size + 1;
  const std::vector<Split> checked = only ? std::vector<Split>{*only} : std::vector<Split>{Split::train, Split::val};
  for (Split split : checked) {
    if (!only && split == Split::val && val_fraction == 0.0) continue;  // val is not used
    if (size(split) < needed) {
      throw SettingError(
          Operation("TextDataset"),
          {fmt::format("the {} split has {} tokens but ", split_name(split), size(split)),
           named("block_size", block_size),
           fmt::format(" needs at least {} (the text has {} tokens, ", needed, n),
           named("val_fraction", val_fraction),
           "); use a longer text, a shorter context or another validation share"});
    }
  }
}

int64_t TextDataset::begin(Split split) const { return split == Split::val ? train_size_ : 0; }

int64_t TextDataset::size(Split split) const {
  const auto n = static_cast<int64_t>(tokens_.size());
  return split == Split::train ? train_size_ : n - begin(split);
}

std::vector<bool> TextDataset::occurring_ids(int64_t vocab_size) const {
  std::vector<bool> occurs(static_cast<size_t>(std::max<int64_t>(vocab_size, 0)), false);
  for (const int64_t id : tokens_) {
    if (id >= 0 && id < vocab_size) occurs[static_cast<size_t>(id)] = true;
  }
  return occurs;
}

Batch TextDataset::sample_batch(Split split, int64_t batch_size, Generator& gen) const {
  if (batch_size < 1) {
    throw ValueError(Operation("TextDataset::sample_batch"),
        fmt::format("batch_size must be >= 1, got {}", batch_size));
  }
  const int64_t n = size(split);
  if (n < block_size_ + 1) {
    throw ValueError(Operation("TextDataset::sample_batch"), fmt::format(
        "the {} split has {} tokens, fewer than block_size + 1 = {} "
        "(it is empty when val_fraction is 0)",
        split_name(split), n, block_size_ + 1));
  }
  std::vector<int64_t> starts(static_cast<size_t>(batch_size));
  for (int64_t& start : starts) start = gen.randint(n - block_size_);  // last start: n - T - 1
  return gather(split, starts);
}

int64_t TextDataset::num_windows(Split split) const {
  const int64_t n = size(split);
  return n == 0 ? 0 : (n - 1) / block_size_;
}

Batch TextDataset::window_batch(Split split, int64_t first, int64_t count) const {
  const int64_t available = num_windows(split);
  if (count < 1 || first < 0 || first > available - count) {
    throw IndexError(Operation("TextDataset::window_batch"), fmt::format(
        "windows [{}, {}) are not a non-empty range of the {} "
        "windows of the {} split",
        first, first + count, available, split_name(split)));
  }
  std::vector<int64_t> starts(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) starts[static_cast<size_t>(k)] = (first + k) * block_size_;
  return gather(split, starts);
}

Batch TextDataset::gather(Split split, const std::vector<int64_t>& starts) const {
  const auto rows = static_cast<int64_t>(starts.size());
  const int64_t T = block_size_;
  Batch batch{Tensor::empty({rows, T}, DType::i64), Tensor::empty({rows, T}, DType::i64)};
  int64_t* inputs = batch.inputs.data<int64_t>();
  int64_t* targets = batch.targets.data<int64_t>();
  for (int64_t b = 0; b < rows; ++b) {
    const int64_t* window = tokens_.data() + begin(split) + starts[static_cast<size_t>(b)];
    std::copy(window, window + T, inputs + b * T);
    std::copy(window + 1, window + T + 1, targets + b * T);
  }
  return batch;
}

}  // namespace tinygpt::data
