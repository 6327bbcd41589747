#include "tinygpt/data/data_source.hpp"

#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/data/pairs.hpp"
#include "tinygpt/data/text_file.hpp"
#include "tinygpt/data/toy_corpus.hpp"

namespace tinygpt::data {
namespace fs = std::filesystem;

// Large enough that a default run never sees the same window twice in a meaningful way, small
// enough to generate in well under a second.
constexpr uint64_t kToySeed = 0;
constexpr int64_t kToyChars = 4'000'000;

bool is_toy_corpus(const std::string& source) {
  return source == kToyCorpus || source == kToyMlmCorpus;
}

bool is_builtin_source(const std::string& source) {
  return is_toy_corpus(source) || is_pair_task(source);
}

namespace {

// "builtin:<name>" naming neither built-in data nor a file (one that cannot be looked at counts as none).
bool is_unknown_builtin(const std::string& source) {
  std::error_code ec;
  return source.rfind("builtin:", 0) == 0 && !is_builtin_source(source) && !fs::exists(source, ec);
}

}  // namespace

std::string absolute_source(const std::string& source) {
  // An unknown "builtin:" name stays as it is, for load_text to refuse by name.
  if (is_builtin_source(source) || is_unknown_builtin(source)) return source;
  // A relative path when the working directory has been removed names no file: it stays as it
  // is, for load_text to refuse as missing.
  std::error_code ec;
  const fs::path path = fs::absolute(source, ec);
  return ec ? source : path.lexically_normal().string();
}

bool same_source(const std::string& a, const std::string& b) {
  if (is_builtin_source(a) || is_builtin_source(b)) return a == b;
  std::error_code ec_a, ec_b;
  const fs::path path_a = fs::weakly_canonical(a, ec_a), path_b = fs::weakly_canonical(b, ec_b);
  if (ec_a || ec_b) return absolute_source(a) == absolute_source(b);
  return path_a == path_b;
}

std::string load_text(const std::string& source) {
  if (source == kToyCorpus) return generate_toy_corpus(kToySeed, kToyChars);
  if (source == kToyMlmCorpus) return generate_toy_mlm_corpus(kToySeed, kToyChars);
  if (is_pair_task(source)) return generate_pair_task(source, kToySeed, kPairTaskSize);
  if (is_unknown_builtin(source)) {
    throw ValueError(fmt::format("unknown built-in data {} (expected {}, {}, {}, {} or {})", source,
                                 kToyCorpus, kToyMlmCorpus, kReverseTask, kSortTask, kDatesTask));
  }
  return read_text_file(source);
}

TextDataset make_dataset(const std::string& text, const std::string& source,
                         const Tokenizer& tokenizer, int64_t block, double val_fraction,
                         std::optional<Split> only) {
  try {
    return TextDataset(tokenizer.encode(text), block, val_fraction, only);
  } catch (const ValueError& e) {
    throw ValueError(source + ": ", e);
  }
}

}  // namespace tinygpt::data
