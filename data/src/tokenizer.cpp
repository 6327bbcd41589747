#include "tinygpt/data/tokenizer.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/data/utf8.hpp"

namespace tinygpt::data {

CharTokenizer::CharTokenizer(std::vector<char32_t> vocab) : vocab_(std::move(vocab)) {
  if (vocab_.empty()) throw ValueError("CharTokenizer: the vocabulary is empty");
  tokens_.reserve(vocab_.size());
  for (size_t id = 0; id < vocab_.size(); ++id) {
    const char32_t cp = vocab_[id];
    const auto [it, inserted] = ids_.emplace(cp, static_cast<int64_t>(id));
    if (!inserted) {
      throw ValueError(fmt::format("CharTokenizer: vocab[{}] {} duplicates vocab[{}]", id,
                                   describe_code_point(cp), it->second));
    }
    std::string utf8;
    append_utf8(utf8, cp);
    tokens_.push_back(std::move(utf8));
  }
}

CharTokenizer CharTokenizer::fit(std::string_view text) {
  const std::u32string code_points = decode_utf8(text);
  if (code_points.empty()) throw ValueError("CharTokenizer::fit: the text is empty");
  const std::set<char32_t> distinct(code_points.begin(), code_points.end());
  return CharTokenizer(std::vector<char32_t>(distinct.begin(), distinct.end()));
}

std::vector<int64_t> CharTokenizer::encode(std::string_view text) const {
  const std::u32string code_points = decode_utf8(text);
  std::vector<int64_t> ids;
  ids.reserve(code_points.size());
  for (size_t pos = 0; pos < code_points.size(); ++pos) {
    const auto it = ids_.find(code_points[pos]);
    if (it == ids_.end()) {
      throw ValueError(
          fmt::format("CharTokenizer::encode: character {} at position {} is not in the vocabulary "
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
      throw IndexError(
          fmt::format("CharTokenizer::decode: id {} at position {} is out of range [0, {})", id,
                      pos, vocab_size()));
    }
    text += tokens_[static_cast<size_t>(id)];
  }
  return text;
}

std::string CharTokenizer::token(int64_t id) const {
  if (id < 0 || id >= vocab_size()) {
    throw IndexError(
        fmt::format("CharTokenizer::token: id {} is out of range [0, {})", id, vocab_size()));
  }
  return tokens_[static_cast<size_t>(id)];
}

std::string CharTokenizer::to_json() const {
  // Built by hand for the documented spacing; nlohmann only escapes each string (and leaves
  // non-ASCII characters readable as UTF-8).
  std::vector<std::string> quoted;
  quoted.reserve(tokens_.size());
  for (const std::string& t : tokens_) quoted.push_back(nlohmann::json(t).dump());
  return fmt::format("{{\"vocab\": [{}]}}", fmt::join(quoted, ", "));
}

CharTokenizer CharTokenizer::from_json(std::string_view json_text) {
  auto fail = [](const std::string& what) {
    return ValueError("CharTokenizer::from_json: " + what);
  };
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(json_text.begin(), json_text.end());
  } catch (const nlohmann::json::exception& e) {
    throw fail(fmt::format("not valid JSON ({})", e.what()));
  }
  if (!root.is_object()) {
    throw fail(
        fmt::format("expected an object {{\"vocab\": [...]}}, got a JSON {}", root.type_name()));
  }
  for (const auto& item : root.items()) {
    if (item.key() != "vocab") {
      throw fail(fmt::format("unexpected key \"{}\" (the only key is \"vocab\")", item.key()));
    }
  }
  const auto vocab = root.find("vocab");
  if (vocab == root.end()) throw fail("the key \"vocab\" is missing");
  if (!vocab->is_array()) {
    throw fail(fmt::format("\"vocab\" must be a list of one-character strings, got a JSON {}",
                           vocab->type_name()));
  }

  std::vector<char32_t> code_points;
  code_points.reserve(vocab->size());
  for (size_t id = 0; id < vocab->size(); ++id) {
    const nlohmann::json& entry = (*vocab)[id];
    if (!entry.is_string()) {
      throw fail(fmt::format("vocab[{}] is a JSON {}, expected a one-character string", id,
                             entry.type_name()));
    }
    const std::u32string decoded = decode_utf8(entry.get_ref<const std::string&>());
    if (decoded.size() != 1) {
      throw fail(fmt::format("vocab[{}] = {} has {} characters, expected exactly 1", id,
                             entry.dump(), decoded.size()));
    }
    code_points.push_back(decoded[0]);
  }
  return CharTokenizer(std::move(code_points));
}

}  // namespace tinygpt::data
