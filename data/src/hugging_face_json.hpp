#pragma once
// The layout of a Hugging Face tokenizer.json with a BPE model, which the character tokenizer and
// byte-level BPE both write: they differ in the pipeline around the model and in its contents.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace tinygpt::data {

// One entry of "added_tokens": a special token matched as written.
nlohmann::ordered_json special_token_entry(int64_t id, const std::string& content);

// The whole file, indented, no trailing newline.
struct HuggingFaceParts {
  nlohmann::ordered_json added_tokens, pre_tokenizer, post_processor, decoder, vocab, merges;
};
std::string hugging_face_tokenizer_json(const HuggingFaceParts& parts);

}  // namespace tinygpt::data
