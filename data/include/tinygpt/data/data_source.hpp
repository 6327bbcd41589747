#pragma once
// Where a training text comes from, named by one string: the built-in toy corpus ("builtin:toy"),
// its masked-LM form ("builtin:toy-mlm"),
// a built-in sequence-to-sequence task ("builtin:reverse", "builtin:sort", "builtin:dates":
// pairs.hpp) or a UTF-8 text file. A run stores its source (trainer_state.json) to read the same text again
// when it resumes, from whatever working directory.
#include <string>

#include "tinygpt/data/dataset.hpp"
#include "tinygpt/data/tokenizer.hpp"

namespace tinygpt::data {

// The built-in corpora (toy_corpus.hpp): the toy corpus, and its form for a masked LM.
inline constexpr const char* kToyCorpus = "builtin:toy";
inline constexpr const char* kToyMlmCorpus = "builtin:toy-mlm";

// kToyCorpus or kToyMlmCorpus.
bool is_toy_corpus(const std::string& source);

// A toy corpus or a built-in pair task: a text with no file.
bool is_builtin_source(const std::string& source);

// The source to store for `source`: a file as an absolute, normalised path (so that the stored
// name still finds it from another working directory); a built-in source as it is.
std::string absolute_source(const std::string& source);

// True when `a` and `b` name the same text: the same built-in source, or paths to the same file (compared
// after resolving the working directory, "..", and symbolic links).
bool same_source(const std::string& a, const std::string& b);

// The text of `source` (read_text_file's errors for a file; ValueError for a "builtin:" name that
// is none of the built-in sources and no file).
std::string load_text(const std::string& source);

// `text` (read from `source`) encoded with `tokenizer` and split for context `block`; an error
// (a character outside the vocabulary, a text too short for one window) is a ValueError that
// starts with the source.
TextDataset make_dataset(const std::string& text, const std::string& source,
                         const Tokenizer& tokenizer, int64_t block, double val_fraction,
                         std::optional<Split> only = std::nullopt);

}  // namespace tinygpt::data
