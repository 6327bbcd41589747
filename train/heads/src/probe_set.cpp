#include "tinygpt/heads/probe_set.hpp"

#include <algorithm>
#include <cctype>

#include "tinygpt/data/data_source.hpp"
#include "tinygpt/data/toy_corpus.hpp"

namespace tinygpt::heads {
namespace {

constexpr int64_t kProbeWindows = 16;
constexpr int64_t kPictureTokens = 64;
// The head scores keep every layer's (probes, H, T, T) weights: a window of a long context would
// take gigabytes (16 x 4 heads x 16384^2 floats a layer), so a probe is the window's first 512
// characters at most, plenty for the roles' statistics.
constexpr int64_t kProbeTokens = 512;

// A token made of letters and digits only: a character of a word, or a subword.
bool word_piece(const std::string& token) {
  return !token.empty() && std::all_of(token.begin(), token.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0;
  });
}

// Random sequences for induction are drawn from the word pieces of the vocabulary (what random
// spans are made of in ordinary text), or all of it if it has few. Given `occurs`, only tokens
// the run's text holds: a byte-level vocabulary has all 256 bytes, and a model cannot copy a
// token whose embedding never trained.
std::vector<int64_t> random_alphabet(const data::Tokenizer& tokenizer, const std::vector<bool>& occurs = {}) {
  const auto candidate = [&](int64_t id) { return occurs.empty() || occurs[static_cast<size_t>(id)]; };
  std::vector<int64_t> alphabet;
  for (int64_t id = 0; id < tokenizer.vocab_size(); ++id) {
    if (candidate(id) && word_piece(tokenizer.token(id))) alphabet.push_back(id);
  }
  if (alphabet.size() < 8) {
    alphabet.clear();
    for (int64_t id = 0; id < tokenizer.vocab_size(); ++id) {
      if (candidate(id)) alphabet.push_back(id);
    }
  }
  return alphabet;
}

}  // namespace

std::string probe_obstacle(const nn::CausalLMShape& config) {
  if (config.vocab_size < 2) {
    return fmt::format("vocabulary of {} character: no head analysis (its probes repeat a "
                       "sequence of 2 or more distinct characters)", config.vocab_size);
  }
  if (config.block_size < 4) {
    return fmt::format("a context of {} is shorter than 4: no head analysis (its probes repeat a "
                       "sequence of 2 or more characters twice)", config.block_size);
  }
  return "";
}

ProbeSet dataset_probes(const data::TextDataset& dataset, const data::Tokenizer& tokenizer,
                        const std::string& data_source) {
  const data::Split split =
      dataset.num_windows(data::Split::val) > 0 ? data::Split::val : data::Split::train;
  const int64_t windows = dataset.num_windows(split);
  const int64_t stride = std::max<int64_t>(1, windows / kProbeWindows);
  ProbeSet set;
  for (int64_t w = 0; w < windows && static_cast<int64_t>(set.probes.texts.size()) < kProbeWindows;
       w += stride) {
    const Tensor inputs = dataset.window_batch(split, w, 1).inputs;  // (1,T)
    const int64_t length = std::min(inputs.numel(), kProbeTokens);
    set.probes.texts.emplace_back(inputs.data<int64_t>(), inputs.data<int64_t>() + length);
  }
  set.picture = data::is_toy_corpus(data_source) ? tokenizer.encode(data::toy_probe_text(1))
                                                : set.probes.texts[0];
  const size_t longest = std::min<size_t>(kPictureTokens, set.probes.texts[0].size());  // a window
  if (set.picture.size() > longest) set.picture.resize(longest);
  set.probes.alphabet = random_alphabet(tokenizer, dataset.occurring_ids(tokenizer.vocab_size()));
  return set;
}

ProbeSet text_probes(std::vector<int64_t> ids, const data::Tokenizer& tokenizer, int64_t block) {
  if (static_cast<int64_t>(ids.size()) > block) ids.resize(static_cast<size_t>(block));
  if (ids.size() < 2) {
    throw SettingError(Operation("heads::text_probes"),
                       {MessagePart("text", ""),
                        fmt::format(" has {} token{}; a probe needs at least 2, one to predict from",
                                    ids.size(), ids.size() == 1 ? "" : "s")});
  }
  ProbeSet set;
  set.probes.texts = {ids};
  set.picture = std::move(ids);
  set.probes.alphabet = random_alphabet(tokenizer);
  return set;
}

}  // namespace tinygpt::heads
