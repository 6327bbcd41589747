#include "tinygpt/data/pairs.hpp"

#include <cmath>

#include <fmt/format.h>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/data/utf8.hpp"

namespace tinygpt::data {

std::vector<TextPair> parse_pairs(std::string_view text, const std::string& where) {
  std::vector<TextPair> pairs;
  int64_t line_number = 0;
  size_t start = 0;
  while (start < text.size()) {
    ++line_number;
    const size_t end = std::min(text.find('\n', start), text.size());
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const auto fail = [&](const std::string& why) {
      return ValueError(fmt::format("{}:{}: {}; each line is source<TAB>target", where, line_number, why));
    };
    const size_t tab = line.find('\t');
    if (line.empty()) throw fail("empty line");
    if (tab == std::string_view::npos) throw fail("no tab between source and target");
    if (line.find('\t', tab + 1) != std::string_view::npos) throw fail("more than one tab");
    if (tab == 0) throw fail("empty source");
    if (tab + 1 == line.size()) throw fail("empty target");
    pairs.push_back({std::string(line.substr(0, tab)), std::string(line.substr(tab + 1)), line_number});
  }
  if (pairs.empty()) throw ValueError(fmt::format("{}: no source<TAB>target lines", where));
  return pairs;
}

CharTokenizer fit_pair_tokenizer(const std::vector<TextPair>& pairs) {
  std::string all;
  for (const TextPair& p : pairs) all += p.source + p.target;
  return CharTokenizer::fit(all, pair_specials());
}

PairDataset::PairDataset(const std::vector<TextPair>& pairs, const Tokenizer& tokenizer,
                         int64_t max_positions, double val_fraction, const std::string& where) {
  if (!(val_fraction >= 0.0 && val_fraction < 1.0)) {
    throw SettingError(Operation("PairDataset"), "val_fraction", val_fraction,
                       fmt::format("val_fraction must be in [0, 1), got {}", val_fraction));
  }
  const std::vector<std::string>& specials = pair_specials();
  if (tokenizer.vocab_size() < 3 || tokenizer.token(kPadId) != specials[kPadId] ||
      tokenizer.token(kBosId) != specials[kBosId] || tokenizer.token(kEosId) != specials[kEosId]) {
    throw ValueError(Operation("PairDataset"), "the tokenizer's special tokens must be <pad>, <s>, </s>");
  }
  for (const TextPair& p : pairs) {
    const std::string at = fmt::format("{}:{}: ", where, p.line);
    try {
      sources_.push_back(tokenizer.encode(p.source));
      targets_.push_back(tokenizer.encode(p.target));
    } catch (const ValueError& e) {
      throw ValueError(at, e);
    }
    const auto s = static_cast<int64_t>(sources_.back().size()), t = static_cast<int64_t>(targets_.back().size());
    if (s > max_positions || t + 1 > max_positions) {
      throw ValueError(at + fmt::format("a source of {} and a target of {} characters do not fit {} positions "
                             "(the target takes one more: its start or end token)",
                             s, t, max_positions));
    }
  }
  const auto n = static_cast<int64_t>(pairs.size());
  train_size_ = n - static_cast<int64_t>(std::llround(static_cast<double>(n) * val_fraction));
  if (train_size_ < 1 || (val_fraction > 0.0 && size(Split::val) < 1)) {
    throw SettingError(Operation(""), {fmt::format("{}: {} pairs leave an empty split at ", where, n),
                                       named("val_fraction", val_fraction)});
  }
}

int64_t PairDataset::begin(Split split) const { return split == Split::val ? train_size_ : 0; }

int64_t PairDataset::size(Split split) const {
  const auto n = static_cast<int64_t>(sources_.size());
  switch (split) {
    case Split::train:
      return train_size_;
    case Split::val:
      return n - train_size_;
    default:
      return n;
  }
}

const std::vector<int64_t>& PairDataset::source(Split split, int64_t i) const {
  if (i < 0 || i >= size(split)) {
    throw IndexError(Operation("PairDataset"),
                     fmt::format("pair {} is outside the {} split's {}", i, split_name(split), size(split)));
  }
  return sources_[static_cast<size_t>(begin(split) + i)];
}

const std::vector<int64_t>& PairDataset::target(Split split, int64_t i) const {
  source(split, i);  // the same bounds
  return targets_[static_cast<size_t>(begin(split) + i)];
}

PairBatch PairDataset::sample_batch(Split split, int64_t rows, Generator& gen) const {
  if (rows < 1 || size(split) < 1) {
    throw ValueError(Operation("PairDataset::sample_batch"),
                     fmt::format("{} rows from a {} split of {} pairs",
                                 rows, split_name(split), size(split)));
  }
  std::vector<int64_t> index(static_cast<size_t>(rows));
  for (int64_t& i : index) i = gen.randint(size(split));
  return gather(split, index);
}

PairBatch PairDataset::batch(Split split, int64_t first, int64_t count) const {
  if (count < 1 || first < 0 || first + count > size(split)) {
    throw IndexError(Operation("PairDataset::batch"),
                     fmt::format("pairs [{}, {}) are outside the {} split's {}",
                                 first, first + count, split_name(split), size(split)));
  }
  std::vector<int64_t> index(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) index[static_cast<size_t>(i)] = first + i;
  return gather(split, index);
}

PairBatch PairDataset::gather(Split split, const std::vector<int64_t>& rows) const {
  const auto b = static_cast<int64_t>(rows.size());
  int64_t s = 1, t = 1;
  for (int64_t i : rows) {
    s = std::max<int64_t>(s, static_cast<int64_t>(source(split, i).size()));
    t = std::max<int64_t>(t, static_cast<int64_t>(target(split, i).size()) + 1);
  }
  std::vector<int64_t> src(static_cast<size_t>(b * s), kPadId), in(static_cast<size_t>(b * t), kPadId),
      out(static_cast<size_t>(b * t), -100);
  PairBatch batch;
  batch.index = rows;
  for (int64_t r = 0; r < b; ++r) {
    const std::vector<int64_t>& a = source(split, rows[static_cast<size_t>(r)]);
    const std::vector<int64_t>& z = target(split, rows[static_cast<size_t>(r)]);
    std::copy(a.begin(), a.end(), src.begin() + r * s);
    batch.source_lengths.push_back(static_cast<int64_t>(a.size()));
    in[static_cast<size_t>(r * t)] = kBosId;
    std::copy(z.begin(), z.end(), in.begin() + r * t + 1);
    std::copy(z.begin(), z.end(), out.begin() + r * t);
    out[static_cast<size_t>(r * t) + z.size()] = kEosId;
  }
  batch.source = Tensor::from_ids(src, {b, s});
  batch.inputs = Tensor::from_ids(in, {b, t});
  batch.targets = Tensor::from_ids(out, {b, t});
  return batch;
}

}  // namespace tinygpt::data
