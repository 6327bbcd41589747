#include "hugging_face_json.hpp"

namespace tinygpt::data {

using nlohmann::ordered_json;

ordered_json special_token_entry(int64_t id, const std::string& content) {
  return {{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", false}, {"special", true}};
}

std::string hugging_face_tokenizer_json(const HuggingFaceParts& parts) {
  const ordered_json root = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", parts.added_tokens},
      {"normalizer", nullptr},
      {"pre_tokenizer", parts.pre_tokenizer},
      {"post_processor", parts.post_processor},
      {"decoder", parts.decoder},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", false},
        {"vocab", parts.vocab},
        {"merges", parts.merges}}}};
  return root.dump(2);
}

}  // namespace tinygpt::data
