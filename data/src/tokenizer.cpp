#include "tinygpt/data/tokenizer.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/data/utf8.hpp"
#include "hugging_face_json.hpp"

namespace tinygpt::data {

CharTokenizer::CharTokenizer(std::vector<char32_t> vocab, std::vector<std::string> specials)
    : vocab_(std::move(vocab)), specials_(std::move(specials)) {
  if (vocab_.empty()) throw ValueError(Operation("CharTokenizer"), "the vocabulary is empty");
  tokens_.reserve(specials_.size() + vocab_.size());
  for (size_t i = 0; i < specials_.size(); ++i) {
    const std::string& special = specials_[i];
    if (decode_utf8(special).size() < 2 ||
        std::find(specials_.begin(), specials_.begin() + static_cast<long>(i), special) != specials_.begin() + static_cast<long>(i)) {
      throw ValueError(Operation("CharTokenizer"),
                       fmt::format("special token {} \"{}\" must be new and longer "
                                   "than one character", i, excerpt(special)));
    }
    tokens_.push_back(special);
  }
  const auto first = static_cast<int64_t>(specials_.size());
  for (size_t id = 0; id < vocab_.size(); ++id) {
    const char32_t cp = vocab_[id];
    const auto [it, inserted] = ids_.emplace(cp, first + static_cast<int64_t>(id));
    if (!inserted) {
      throw ValueError(Operation("CharTokenizer"), fmt::format("vocab[{}] {} duplicates vocab[{}]", id,
                                   describe_code_point(cp), it->second - first));
    }
    std::string utf8;
    append_utf8(utf8, cp);
    tokens_.push_back(std::move(utf8));
  }
}

CharTokenizer CharTokenizer::fit(std::string_view text, std::vector<std::string> specials) {
  const std::u32string code_points = decode_utf8(text);
  if (code_points.empty()) throw ValueError(Operation("CharTokenizer::fit"), "the text is empty");
  const std::set<char32_t> distinct(code_points.begin(), code_points.end());
  return CharTokenizer(std::vector<char32_t>(distinct.begin(), distinct.end()), std::move(specials));
}

int64_t CharTokenizer::id_of(char32_t c) const {
  const auto it = ids_.find(c);
  return it == ids_.end() ? -1 : it->second;
}

std::vector<int64_t> CharTokenizer::encode(std::string_view text) const {
  const std::u32string code_points = decode_utf8(text);
  std::vector<int64_t> ids;
  ids.reserve(code_points.size());
  for (size_t pos = 0; pos < code_points.size(); ++pos) {
    const auto it = ids_.find(code_points[pos]);
    if (it == ids_.end()) {
      throw ValueError(Operation("CharTokenizer::encode"),
          fmt::format("character {} at position {} is not in the vocabulary "
                      "({} characters)",
                      describe_code_point(code_points[pos]), pos, vocab_size()));
    }
    ids.push_back(it->second);
  }
  return ids;
}

std::string CharTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string text;
  text.reserve(ids.size());
  for (size_t pos = 0; pos < ids.size(); ++pos) {
    const int64_t id = ids[pos];
    if (id < 0 || id >= vocab_size()) {
      throw IndexError(Operation("CharTokenizer::decode"),
          fmt::format("id {} at position {} is out of range [0, {})", id,
                      pos, vocab_size()));
    }
    text += tokens_[static_cast<size_t>(id)];
  }
  return text;
}

std::string CharTokenizer::token(int64_t id) const {
  if (id < 0 || id >= vocab_size()) {
    throw IndexError(Operation("CharTokenizer::token"),
        fmt::format("id {} is out of range [0, {})", id, vocab_size()));
  }
  return tokens_[static_cast<size_t>(id)];
}

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

ValueError from_json_error(const std::string& what) {
  return ValueError(Operation("CharTokenizer::from_json"), what);
}

// The one character of a vocabulary entry; `where` names the entry in errors.
char32_t single_character(const std::string& text, const std::string& where) {
  const std::u32string decoded = decode_utf8(text);
  if (decoded.size() != 1) {
    throw from_json_error(fmt::format("{} = {} has {} characters, expected exactly 1", where,
                                      excerpt(json(text).dump()), decoded.size()));
  }
  return decoded[0];
}

// tinygpt's first format: {"vocab": ["\n", " ", "a", ...]}, characters in id order.
std::vector<char32_t> legacy_vocab(const json& root) {
  for (const auto& item : root.items()) {
    if (item.key() != "vocab") {
      throw from_json_error(fmt::format("unexpected key \"{}\" (the only key is \"vocab\")", excerpt(item.key())));
    }
  }
  const json& vocab = root["vocab"];
  if (!vocab.is_array()) {
    throw from_json_error(fmt::format(
        "\"vocab\" must be a list of one-character strings, got a JSON {}", vocab.type_name()));
  }
  std::vector<char32_t> code_points;
  code_points.reserve(vocab.size());
  for (size_t id = 0; id < vocab.size(); ++id) {
    const json& entry = vocab[id];
    if (!entry.is_string()) {
      throw from_json_error(fmt::format("vocab[{}] is a JSON {}, expected a one-character string",
                                        id, entry.type_name()));
    }
    code_points.push_back(single_character(entry.get<std::string>(), fmt::format("vocab[{}]", id)));
  }
  return code_points;
}

// A Hugging Face tokenizers file that encodes one id per character: a BPE model with no merges
// over a vocabulary of single characters, nothing that adds, drops or rewrites characters
// (normalizer, pre-tokenizer, post-processor, added tokens, unknown token, byte fallback,
// subword prefixes). Anything else is refused by the key at fault: it would not encode as
// tinygpt does.
// The special tokens of a tokenizer.json: its "added_tokens", each special, with ids 0, 1, ...
// in order, matched as written (no stripping or normalisation).
std::vector<std::string> hugging_face_specials(const json& root) {
  const auto added = root.find("added_tokens");
  if (added == root.end()) return {};
  if (!added->is_array()) throw from_json_error("added_tokens must be a list");
  std::vector<std::string> specials;
  for (size_t i = 0; i < added->size(); ++i) {
    const json& token = (*added)[i];
    // Compared as JSON values: a field of another type is a refused entry, not a type error.
    const auto holds = [&](const char* key, const json& absent, const json& wanted) {
      return token.value(key, absent) == wanted;
    };
    const bool ok = token.is_object() && holds("id", json(), json(i)) &&
                    token.value("content", json()).is_string() && holds("special", false, true) &&
                    holds("lstrip", false, false) && holds("rstrip", false, false) &&
                    holds("single_word", false, false) && holds("normalized", false, false);
    if (!ok) {
      throw from_json_error(fmt::format(
          "added_tokens is {}; a character-level tokenizer takes only special tokens with ids "
          "0, 1, ... in order, not stripped, normalised or single-word (entry {} is not)",
          added->dump().substr(0, 80), i));
    }
    specials.push_back(token["content"].get<std::string>());
  }
  return specials;
}

std::vector<char32_t> hugging_face_vocab(const json& root, const std::vector<std::string>& specials) {
  const auto require = [&](const json& object, const char* key, const json& expected,
                           const std::string& where) {
    const auto it = object.find(key);
    if (it != object.end() && *it != expected) {
      throw from_json_error(fmt::format(
          "{}{} is {}; a character-level tokenizer needs {}", where, key, it->dump().substr(0, 60),
          expected.dump()));
    }
  };
  for (const char* key : {"normalizer", "pre_tokenizer", "post_processor", "truncation", "padding"}) {
    require(root, key, nullptr, "");
  }
  const json& model = root["model"];
  if (!model.is_object() || model.value("type", json()) != json("BPE")) {
    throw from_json_error(fmt::format("model must be {{\"type\": \"BPE\", ...}} with no merges, got {}",
                                      model.dump().substr(0, 60)));
  }
  for (const char* key : {"dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix"}) {
    require(model, key, nullptr, "model.");
  }
  require(model, "byte_fallback", false, "model.");
  require(model, "merges", json::array(), "model.");
  const auto vocab = model.find("vocab");
  if (vocab == model.end() || !vocab->is_object() || vocab->empty()) {
    throw from_json_error("model.vocab must be a non-empty object {character: id}");
  }
  const size_t first = specials.size();
  if (vocab->size() <= first) {
    throw from_json_error(fmt::format("model.vocab holds {} entries, no character after the {} "
                                      "special tokens", vocab->size(), first));
  }
  std::vector<char32_t> by_id(vocab->size() - first, 0);
  std::vector<bool> seen(vocab->size(), false);
  for (const auto& item : vocab->items()) {
    const std::string where = fmt::format("model.vocab key {}", excerpt(json(item.key()).dump()));
    const json& id = item.value();
    if (!id.is_number_unsigned() || id.get<uint64_t>() >= seen.size() || seen[id.get<size_t>()]) {
      throw from_json_error(fmt::format("{}: id {} is not one of 0..{} used once", where,
                                        id.dump(), seen.size() - 1));
    }
    const auto n = id.get<size_t>();
    seen[n] = true;
    if (n < first) {
      if (item.key() != specials[n]) {
        throw from_json_error(fmt::format("{}: id {} is added_tokens[{}] \"{}\"", where, n, n,
                                          excerpt(specials[n])));
      }
      continue;
    }
    by_id[n - first] = single_character(item.key(), where);
  }
  return by_id;
}

}  // namespace

std::string CharTokenizer::to_json() const {
  ordered_json vocab = ordered_json::object();
  for (size_t id = 0; id < tokens_.size(); ++id) vocab[tokens_[id]] = id;
  ordered_json added = ordered_json::array();
  for (size_t id = 0; id < specials_.size(); ++id) added.push_back(special_token_entry(static_cast<int64_t>(id), specials_[id]));
  return hugging_face_tokenizer_json(
      {added, nullptr, nullptr, {{"type", "Fuse"}}, vocab, ordered_json::array()});
}

CharTokenizer CharTokenizer::from_json(std::string_view json_text) {
  json root;
  try {
    root = json::parse(json_text.begin(), json_text.end());
  } catch (const json::exception& e) {
    throw from_json_error(fmt::format("not valid JSON ({})", e.what()));
  }
  if (!root.is_object()) {
    throw from_json_error(fmt::format(
        "expected a Hugging Face tokenizer object or {{\"vocab\": [...]}}, got a JSON {}",
        root.type_name()));
  }
  if (root.contains("model")) {
    std::vector<std::string> specials = hugging_face_specials(root);
    std::vector<char32_t> vocab = hugging_face_vocab(root, specials);
    return CharTokenizer(std::move(vocab), std::move(specials));
  }
  if (root.contains("vocab")) return CharTokenizer(legacy_vocab(root));
  throw from_json_error("neither \"model\" (a Hugging Face tokenizer) nor \"vocab\" is there");
}

}  // namespace tinygpt::data
