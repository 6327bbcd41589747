#include "tinygpt/data/masked_lm.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/data/utf8.hpp"

namespace tinygpt::data {
namespace {

using nlohmann::ordered_json;

// Hugging Face's TemplateProcessing for a single sequence "[CLS] $A [SEP]" (and BERT's pair
// form), with the specials' ids.
ordered_json template_processing() {
  const auto special = [](const char* id, int type) {
    return ordered_json{{"SpecialToken", {{"id", id}, {"type_id", type}}}};
  };
  const auto sequence = [](const char* id, int type) {
    return ordered_json{{"Sequence", {{"id", id}, {"type_id", type}}}};
  };
  const auto entry = [](const char* token, int64_t id) {
    return ordered_json{{"id", token}, {"ids", {id}}, {"tokens", {token}}};
  };
  return {{"type", "TemplateProcessing"},
          {"single", {special("[CLS]", 0), sequence("A", 0), special("[SEP]", 0)}},
          {"pair", {special("[CLS]", 0), sequence("A", 0), special("[SEP]", 0), sequence("B", 1),
                    special("[SEP]", 1)}},
          {"special_tokens", {{"[CLS]", entry("[CLS]", MaskedLMTokenizer::kCls)},
                              {"[SEP]", entry("[SEP]", MaskedLMTokenizer::kSep)}}}};
}

ValueError from_json_error(const std::string& what) {
  return ValueError(Operation("MaskedLMTokenizer::from_json"), what);
}

}  // namespace

const std::vector<std::string>& MaskedLMTokenizer::special_tokens() {
  static const std::vector<std::string> specials{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  return specials;
}

MaskedLMTokenizer::MaskedLMTokenizer(std::vector<char32_t> vocab)
    : chars_(std::move(vocab), special_tokens()) {}

MaskedLMTokenizer MaskedLMTokenizer::fit(std::string_view text) {
  return MaskedLMTokenizer(CharTokenizer::fit(text).vocab());
}

std::vector<int64_t> MaskedLMTokenizer::encode(std::string_view text) const {
  const std::u32string code_points = decode_utf8(text);
  std::vector<std::u32string> specials;
  for (const std::string& s : special_tokens()) specials.push_back(decode_utf8(s));
  std::vector<int64_t> ids;
  ids.reserve(code_points.size());
  for (size_t pos = 0; pos < code_points.size();) {
    int64_t special = -1;
    for (size_t id = 0; id < specials.size() && special < 0; ++id) {
      if (code_points.compare(pos, specials[id].size(), specials[id]) == 0) special = static_cast<int64_t>(id);
    }
    if (special >= 0) {
      ids.push_back(special);
      pos += specials[static_cast<size_t>(special)].size();
      continue;
    }
    const int64_t id = chars_.id_of(code_points[pos]);
    ids.push_back(id >= 0 ? id : kUnk);
    ++pos;
  }
  return ids;
}

std::string MaskedLMTokenizer::to_json() const {
  ordered_json root = ordered_json::parse(chars_.to_json());
  root["post_processor"] = template_processing();
  root["model"]["unk_token"] = "[UNK]";
  return root.dump(2);
}

MaskedLMTokenizer MaskedLMTokenizer::from_json(std::string_view json_text) {
  ordered_json root;
  try {
    root = ordered_json::parse(json_text.begin(), json_text.end());
  } catch (const ordered_json::exception& e) {
    throw from_json_error(fmt::format("not valid JSON ({})", e.what()));
  }
  if (!root.is_object() || !root.contains("model") || !root["model"].is_object()) {
    throw from_json_error("expected a Hugging Face tokenizer object with a \"model\"");
  }
  if (root.value("post_processor", ordered_json()) != template_processing()) {
    throw from_json_error("post_processor must be the TemplateProcessing \"[CLS] $A [SEP]\" "
                          "with [CLS] = 2 and [SEP] = 3");
  }
  if (root["model"].value("unk_token", ordered_json()) != ordered_json("[UNK]")) {
    throw from_json_error("model.unk_token must be \"[UNK]\"");
  }
  root["post_processor"] = nullptr;
  root["model"].erase("unk_token");
  CharTokenizer chars = CharTokenizer::from_json(root.dump());
  if (chars.specials() != special_tokens()) {
    throw from_json_error("added_tokens must be [PAD] [UNK] [CLS] [SEP] [MASK], ids 0 to 4");
  }
  return MaskedLMTokenizer(chars.vocab());
}

std::vector<int64_t> MaskedLMTokenizer::frame(const std::vector<int64_t>& ids) {
  std::vector<int64_t> framed;
  framed.reserve(ids.size() + 2);
  framed.push_back(kCls);
  framed.insert(framed.end(), ids.begin(), ids.end());
  framed.push_back(kSep);
  return framed;
}

Tensor MaskedLMTokenizer::frame(const Tensor& windows) {
  if (windows.ndim() != 2 || windows.dtype() != DType::i64) {
    throw ShapeError(Operation("MaskedLMTokenizer::frame"),
                     fmt::format("expects windows (B,T) of i64, got {}", windows.shape().str()));
  }
  const int64_t rows = windows.size(0), cols = windows.size(1);
  const int64_t* in = windows.data<int64_t>();
  std::vector<int64_t> framed;
  framed.reserve(static_cast<size_t>(rows * (cols + 2)));
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<int64_t> row = frame(std::vector<int64_t>(in + r * cols, in + (r + 1) * cols));
    framed.insert(framed.end(), row.begin(), row.end());
  }
  return Tensor::from_ids(framed, {rows, cols + 2});
}

MaskedBatch mask_tokens(const Tensor& tokens, const Masking& masking, Generator& gen) {
  const Operation op("mask_tokens");
  if (!(masking.probability > 0.0 && masking.probability <= 1.0)) {
    throw SettingError(op, "mask_probability", masking.probability,
                       fmt::format("the masking probability must be in (0, 1], got {}", masking.probability));
  }
  if (tokens.ndim() != 2 || tokens.dtype() != DType::i64) {
    throw ShapeError(op, fmt::format("expects tokens (B,T) of i64, got {}", tokens.shape().str()));
  }
  const int64_t rows = tokens.size(0), cols = tokens.size(1);
  const int64_t characters = masking.vocab_size - masking.first_character;
  if (characters <= 0) throw ValueError(op, fmt::format("no character ids in a vocabulary of {}", masking.vocab_size));
  const int64_t* in = tokens.data<int64_t>();
  std::vector<int64_t> inputs(in, in + rows * cols), labels(inputs.size(), -100);
  MaskedBatch out;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t lowest = -1;
    double lowest_draw = 2.0;
    bool any = false;
    for (int64_t c = 0; c < cols; ++c) {
      const auto i = static_cast<size_t>(r * cols + c);
      const double choose = gen.uniform(), how = gen.uniform(), pick = gen.uniform();
      const bool maskable = inputs[i] >= masking.first_character;
      if (!maskable) continue;
      const bool chosen = choose < masking.probability;
      if (!chosen) {
        if (choose < lowest_draw) lowest_draw = choose, lowest = c;
        continue;
      }
      any = true;
      labels[i] = inputs[i];
      if (how < 0.8) {
        inputs[i] = masking.mask_id;
      } else if (how < 0.9) {
        inputs[i] = masking.first_character + static_cast<int64_t>(pick * static_cast<double>(characters));
      }
    }
    if (!any && lowest >= 0) {  // the lowest draw becomes a [MASK]
      const auto i = static_cast<size_t>(r * cols + lowest);
      labels[i] = inputs[i];
      inputs[i] = masking.mask_id;
    }
  }
  for (int64_t label : labels) out.chosen += label >= 0 ? 1 : 0;
  out.inputs = Tensor::from_ids(inputs, {rows, cols});
  out.labels = Tensor::from_ids(labels, {rows, cols});
  return out;
}

}  // namespace tinygpt::data
