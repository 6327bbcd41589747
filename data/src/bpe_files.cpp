// Byte-level BPE from and to files: GPT-2's vocab.json + merges.txt, Hugging Face's tokenizer.json.
#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/data/bpe.hpp"
#include "hugging_face_json.hpp"

namespace tinygpt::data {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

json parse_json(std::string_view text, const char* what) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    throw ValueError(Operation("BpeTokenizer"), fmt::format("{} is not valid JSON ({})", what, e.what()));
  }
}

// {"token written with GPT-2's byte characters": id} -> each id's bytes; `added` fills the ids
// the vocabulary leaves to added tokens. Ids must be 0..n-1, each once.
struct Vocabulary {
  std::vector<std::string> tokens;
  std::unordered_map<std::string, int64_t> ids;  // by the token as written
};
Vocabulary read_vocabulary(const json& vocab, const std::vector<AddedToken>& added, const char* what) {
  if (!vocab.is_object() || vocab.empty()) throw ValueError(Operation("BpeTokenizer"), fmt::format("{} must be a non-empty object {{token: id}}", what));
  size_t size = vocab.size();
  for (const AddedToken& token : added) size = std::max(size, static_cast<size_t>(token.id) + 1);
  std::unordered_map<int64_t, const std::string*> added_content;
  for (const AddedToken& token : added) added_content.emplace(token.id, &token.content);
  Vocabulary out;
  out.tokens.resize(size);
  std::vector<bool> seen(size, false);
  for (const auto& item : vocab.items()) {
    const json& id = item.value();
    if (!id.is_number_unsigned() || id.get<uint64_t>() >= size || seen[id.get<size_t>()]) {
      throw ValueError(Operation("BpeTokenizer"), fmt::format("{} key \"{}\": id {} is not one of 0..{} used once", what,
                                   excerpt(item.key()), id.dump(), size - 1));
    }
    seen[id.get<size_t>()] = true;
    const auto content = added_content.find(id.get<int64_t>());
    const bool as_written = content != added_content.end() && *content->second == item.key();
    out.tokens[id.get<size_t>()] = as_written ? item.key() : bytes_of_byte_level(item.key(), std::string(what) + " key");
    out.ids.emplace(item.key(), id.get<int64_t>());
  }
  for (const AddedToken& token : added) {
    if (!seen[token.id]) out.tokens[token.id] = token.content;
    seen[token.id] = true;
  }
  for (size_t id = 0; id < size; ++id) {
    if (!seen[id]) throw ValueError(Operation("BpeTokenizer"), fmt::format("{} has no token with id {}", what, id));
  }
  return out;
}

BpeMerge merge_of(const Vocabulary& vocab, const std::string& left, const std::string& right, const std::string& where) {
  const auto l = vocab.ids.find(left), r = vocab.ids.find(right);
  if (l == vocab.ids.end() || r == vocab.ids.end()) {
    throw ValueError(Operation("BpeTokenizer"), fmt::format("{} \"{} {}\": \"{}\" is not in the vocabulary", where, excerpt(left),
                                 excerpt(right), excerpt(l == vocab.ids.end() ? left : right)));
  }
  return {l->second, r->second};
}

// One merge as Hugging Face writes it: "left right", or ["left", "right"] (its newer form).
BpeMerge hugging_face_merge(const Vocabulary& vocab, const json& entry, size_t rank) {
  const std::string where = fmt::format("model.merges[{}]", rank);
  if (entry.is_array() && entry.size() == 2 && entry[0].is_string() && entry[1].is_string()) {
    return merge_of(vocab, entry[0].get<std::string>(), entry[1].get<std::string>(), where);
  }
  const std::string text = entry.is_string() ? entry.get<std::string>() : "";
  const size_t space = text.find(' ');
  if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos) {
    throw ValueError(Operation("BpeTokenizer"), fmt::format("{} is {}, expected \"left right\" or [\"left\", \"right\"]", where,
                                 excerpt(entry.dump())));
  }
  return merge_of(vocab, text.substr(0, space), text.substr(space + 1), where);
}

std::vector<AddedToken> hugging_face_added_tokens(const json& root) {
  std::vector<AddedToken> added;
  const json list = root.value("added_tokens", json::array());
  for (size_t i = 0; i < list.size(); ++i) {
    const json& token = list[i];
    if (!token.is_object() || !token.value("id", json()).is_number_unsigned() ||
        !token.value("content", json()).is_string() || token["id"].get<uint64_t>() >= (uint64_t{1} << 31)) {
      throw ValueError(Operation("BpeTokenizer"), fmt::format("added_tokens[{}] needs an \"id\" and a \"content\"", i));
    }
    added.push_back({token["id"].get<int64_t>(), token["content"].get<std::string>()});
  }
  return added;
}

// What GPT-2's tokenizer.json holds around its model, or a setting that encodes the same ids;
// anything else is refused by its key.
void check_byte_level_setup(const json& root) {
  const auto refuse = [](const std::string& key, const json& value, const char* wanted) {
    throw ValueError(Operation("BpeTokenizer"), fmt::format("{} is {}; byte-level BPE as GPT-2 encodes needs {}", key,
                                 excerpt(value.dump()), wanted));
  };
  for (const char* key : {"normalizer", "truncation", "padding"}) {
    if (!root.value(key, json()).is_null()) refuse(key, root[key], "null");
  }
  const json pre = root.value("pre_tokenizer", json());
  if (!pre.is_object() || pre.value("type", json()) != "ByteLevel" || pre.value("add_prefix_space", false) ||
      !pre.value("use_regex", true)) {
    refuse("pre_tokenizer", pre, R"({"type": "ByteLevel", "add_prefix_space": false})");
  }
  const json post = root.value("post_processor", json());
  if (!post.is_null() && post.value("type", json()) != "ByteLevel") refuse("post_processor", post, "null or ByteLevel");
  const json decoder = root.value("decoder", json());
  if (!decoder.is_null() && decoder.value("type", json()) != "ByteLevel") refuse("decoder", decoder, "null or ByteLevel");
  const json model = root.value("model", json());
  if (!model.is_object() || model.value("type", json("BPE")) != "BPE") refuse("model", model, R"({"type": "BPE", ...})");
  if (!model.value("dropout", json()).is_null()) refuse("model.dropout", model["dropout"], "null");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const json value = model.value(key, json());
    if (!value.is_null() && value != "") refuse(std::string("model.") + key, value, "null or \"\"");
  }
  for (const char* key : {"byte_fallback", "ignore_merges"}) {
    if (model.value(key, false)) refuse(std::string("model.") + key, model[key], "false");
  }
}

}  // namespace

BpeTokenizer BpeTokenizer::from_vocab_and_merges(std::string_view vocab_json, std::string_view merges_txt) {
  const Vocabulary vocab = read_vocabulary(parse_json(vocab_json, "vocab.json"), {}, "vocab.json");
  std::vector<BpeMerge> merges;
  size_t line_number = 0;
  for (size_t at = 0; at < merges_txt.size();) {
    size_t end = merges_txt.find('\n', at);
    if (end == std::string_view::npos) end = merges_txt.size();
    std::string line(merges_txt.substr(at, end - at));
    at = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_number == 1 && line.rfind("#version", 0) == 0)) continue;
    const size_t space = line.find(' ');
    if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
      throw ValueError(Operation("BpeTokenizer"), fmt::format("merges.txt line {} is \"{}\", expected \"left right\"", line_number,
                                   excerpt(line)));
    }
    merges.push_back(merge_of(vocab, line.substr(0, space), line.substr(space + 1),
                              fmt::format("merges.txt line {}", line_number)));
  }
  return BpeTokenizer(vocab.tokens, std::move(merges));
}

BpeTokenizer BpeTokenizer::from_json(std::string_view json_text) {
  const json root = parse_json(json_text, "tokenizer.json");
  if (!root.is_object()) throw ValueError(Operation("BpeTokenizer"), "tokenizer.json must be a JSON object");
  check_byte_level_setup(root);
  std::vector<AddedToken> added = hugging_face_added_tokens(root);
  const json& model = root["model"];
  const Vocabulary vocab = read_vocabulary(model.value("vocab", json()), added, "model.vocab");
  const json merge_list = model.value("merges", json::array());
  if (!merge_list.is_array()) throw ValueError(Operation("BpeTokenizer"), "model.merges must be a list");
  std::vector<BpeMerge> merges;
  merges.reserve(merge_list.size());
  for (size_t rank = 0; rank < merge_list.size(); ++rank) merges.push_back(hugging_face_merge(vocab, merge_list[rank], rank));
  BpeTokenizer tokenizer(vocab.tokens, std::move(merges), std::move(added));
  tokenizer.json_text_ = std::string(json_text);
  return tokenizer;
}

std::string BpeTokenizer::to_json() const {
  if (!json_text_.empty()) return json_text_;
  std::vector<std::string> names(tokens_.size());
  for (size_t id = 0; id < tokens_.size(); ++id) names[id] = byte_level_text(tokens_[id]);
  ordered_json added = ordered_json::array();
  for (const AddedToken& token : added_) {
    names[token.id] = token.content;
    added.push_back(special_token_entry(token.id, token.content));
  }
  ordered_json vocab = ordered_json::object();
  for (size_t id = 0; id < names.size(); ++id) vocab[names[id]] = id;
  ordered_json merges = ordered_json::array();
  for (const BpeMerge& m : merges_) merges.push_back(names[m.left] + " " + names[m.right]);
  const ordered_json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  return hugging_face_tokenizer_json({added, byte_level, byte_level, byte_level, vocab, merges});
}

TokenizerPtr tokenizer_from_json(std::string_view json_text) {
  const json root = json::parse(json_text, nullptr, false);
  if (root.is_object() && root.value("pre_tokenizer", json()).is_object()) {
    return std::make_shared<BpeTokenizer>(BpeTokenizer::from_json(json_text));
  }
  return std::make_shared<CharTokenizer>(CharTokenizer::from_json(json_text));
}

bool same_tokenizer(const Tokenizer& a, const Tokenizer& b) {
  const auto* bpe_a = dynamic_cast<const BpeTokenizer*>(&a);
  const auto* bpe_b = dynamic_cast<const BpeTokenizer*>(&b);
  if (a.vocab_size() != b.vocab_size() || (bpe_a == nullptr) != (bpe_b == nullptr)) return false;
  if (bpe_a != nullptr) {
    const std::vector<BpeMerge>& ma = bpe_a->merges();
    const std::vector<BpeMerge>& mb = bpe_b->merges();
    const auto same_merge = [](const BpeMerge& x, const BpeMerge& y) { return x.left == y.left && x.right == y.right; };
    if (!std::equal(ma.begin(), ma.end(), mb.begin(), mb.end(), same_merge)) return false;
  }
  for (int64_t id = 0; id < a.vocab_size(); ++id) {
    if (a.token(id) != b.token(id)) return false;
  }
  return true;
}

}  // namespace tinygpt::data
