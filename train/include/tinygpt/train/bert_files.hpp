#pragma once
// A masked LM's folder in Hugging Face BertForMaskedLM's layout, both ways:
//   config.json        model_type "bert", hidden_size, num_hidden_layers, num_attention_heads,
//                      intermediate_size, max_position_embeddings, type_vocab_size,
//                      layer_norm_eps, hidden_act "gelu", vocab_size, pad_token_id, ...
//   model.safetensors  BERT's names (bert.embeddings.word_embeddings.weight,
//                      bert.encoder.layer.N.attention.self.query.weight (out, in), ...,
//                      cls.predictions.transform.dense.weight, cls.predictions.bias)
//   tokenizer.json     the MaskedLMTokenizer's (data/masked_lm.hpp)
// A model BERT cannot express (positions other than learned, pre-LN blocks) is written with
// model_type "tinygpt-encoder" and the keys that say how, so Hugging Face does not load it as a
// BERT it is not.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tinygpt/data/masked_lm.hpp"
#include "tinygpt/io/safetensors.hpp"
#include "tinygpt/nn/bert.hpp"

namespace tinygpt::train {

inline constexpr const char* kBertModelType = "bert";
inline constexpr const char* kTinyGptEncoderModelType = "tinygpt-encoder";

std::string bert_config_to_json(const nn::BertConfig& config);
// Refuses (FormatError naming `source` and the key) a key that would change what the model
// computes and tinygpt does not (hidden_act other than "gelu", relative position embeddings, a
// decoder), and any key it does not know.
nn::BertConfig bert_config_from_json(const std::string& text, const std::string& source);

// The model's tensors under Hugging Face's names, with the "bert." prefix.
io::NamedTensors to_hugging_face_bert(const nn::BertForMaskedLM& model);

struct LoadedBert {
  nn::BertConfig config;
  std::unique_ptr<nn::BertForMaskedLM> model;
  std::optional<data::MaskedLMTokenizer> tokenizer;  // none when the folder has none tinygpt reads
  std::vector<std::string> notes;  // one line each: what was not as in a BertForMaskedLM file
};

// Loads the tensors of a BertForMaskedLM file into `model`, as Hugging Face accepts them: with
// or without the "bert." prefix, LayerNorm's gamma/beta as weight/bias, the tied decoder
// (cls.predictions.decoder.*) and what an MLM does not use (the pooler, next-sentence head,
// position_ids) skipped. A file without the MLM head (a BertModel's) leaves the head as
// initialised and says so in `notes`. Throws ValueError/ShapeError naming a missing tensor or a
// shape that disagrees.
void load_hugging_face_bert(nn::BertForMaskedLM& model, const io::SafetensorsFile& file,
                            std::vector<std::string>& notes);

// Writes config.json, model.safetensors and tokenizer.json into `dir` as one commit.
void save_bert(const std::string& dir, const nn::BertForMaskedLM& model,
               const data::MaskedLMTokenizer& tokenizer);
// Reads a folder save_bert or Hugging Face wrote. Without a tokenizer.json tinygpt can read
// (a WordPiece vocab.txt), `tokenizer` is empty and a note says so.
LoadedBert load_bert(const std::string& dir);

// Per [MASK] of a sequence, its position in `ids` and the `top_k` most probable tokens.
struct MaskFill {
  int64_t position = 0;
  std::vector<std::pair<int64_t, double>> top;  // (token id, probability), most probable first
};
// Runs the model in eval mode on [CLS] ids [SEP] and reads the distributions at each [MASK].
std::vector<MaskFill> fill_masks(nn::BertForMaskedLM& model, const std::vector<int64_t>& ids,
                                 int64_t top_k);

}  // namespace tinygpt::train
