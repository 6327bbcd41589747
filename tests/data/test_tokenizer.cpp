#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "data/message_contains.hpp"
#include "tinygpt/autograd/error.hpp"
#include "tinygpt/data/tokenizer.hpp"

using namespace tinygpt;
using namespace tinygpt::data;
using tinygpt::testing::MessageContains;

TEST_CASE("tokenizer vocabulary is the distinct characters sorted by code point",
          "[data][tokenizer]") {
  const CharTokenizer tok = CharTokenizer::fit("hello world\n");
  CHECK(tok.vocab() ==
        std::vector<char32_t>{U'\n', U' ', U'd', U'e', U'h', U'l', U'o', U'r', U'w'});
  CHECK(tok.vocab_size() == 9);
  // The order of first appearance does not matter.
  CHECK(CharTokenizer::fit("dlrow olleh\n").vocab() == tok.vocab());
}

TEST_CASE("tokenizer gives one token per multi-byte character", "[data][tokenizer]") {
  const std::string text =
      "\xF0\x9F\x98\x80\xE6\x97\xA5"
      "a"
      "\xC3\xA9\xE6\x9C\xAC";  // 😀日aé本
  const CharTokenizer tok = CharTokenizer::fit(text);
  CHECK(tok.vocab() == std::vector<char32_t>{U'a', 0xE9, 0x65E5, 0x672C, 0x1F600});
  CHECK(tok.encode(text) == std::vector<int64_t>{4, 2, 0, 1, 3});
  CHECK(tok.token(1) == "\xC3\xA9");
  CHECK(tok.token(4) == "\xF0\x9F\x98\x80");
}

TEST_CASE("tokenizer encode then decode gives the text back", "[data][tokenizer]") {
  const std::string text = "The caf\xC3\xA9 (\xE6\x97\xA5\xE6\x9C\xAC) said \"hi\".\n";
  const CharTokenizer tok = CharTokenizer::fit(text);
  CHECK(tok.decode(tok.encode(text)) == text);
  CHECK(tok.decode(tok.encode("hi.")) == "hi.");
}

TEST_CASE("tokenizer encode names an unknown character and its position", "[data][tokenizer]") {
  const CharTokenizer tok = CharTokenizer::fit("abc");
  CHECK_THROWS_MATCHES(tok.encode("ab\xC3\xA9"), ValueError,
                       MessageContains("character U+00E9 '\xC3\xA9' at position 2") &&
                           MessageContains("not in the vocabulary"));
  CHECK_THROWS_MATCHES(tok.encode("a\xFF"), ValueError, MessageContains("invalid UTF-8"));
}

TEST_CASE("tokenizer decode and token reject ids out of range", "[data][tokenizer]") {
  const CharTokenizer tok = CharTokenizer::fit("abc");
  CHECK_THROWS_MATCHES(tok.decode({0, 3}), IndexError,
                       MessageContains("id 3 at position 1 is out of range [0, 3)"));
  CHECK_THROWS_MATCHES(tok.decode({-1}), IndexError, MessageContains("id -1"));
  CHECK_THROWS_AS(tok.token(3), IndexError);
  CHECK_THROWS_AS(tok.token(-1), IndexError);
}

TEST_CASE("tokenizer cannot be built from nothing or from duplicates", "[data][tokenizer]") {
  CHECK_THROWS_AS(CharTokenizer::fit(""), ValueError);
  CHECK_THROWS_AS(CharTokenizer(std::vector<char32_t>{}), ValueError);
  CHECK_THROWS_MATCHES(CharTokenizer(std::vector<char32_t>{U'a', U'b', U'a'}), ValueError,
                       MessageContains("vocab[2] U+0061 'a' duplicates vocab[0]"));
  CHECK_THROWS_AS(CharTokenizer(std::vector<char32_t>{0xD800}), ValueError);
}

TEST_CASE("tokenizer to_json writes a Hugging Face BPE tokenizer with no merges",
          "[data][tokenizer]") {
  const nlohmann::json j = nlohmann::json::parse(CharTokenizer::fit("ba \n").to_json());
  CHECK(j.at("version") == "1.0");
  for (const char* key : {"normalizer", "pre_tokenizer", "post_processor", "truncation", "padding"}) {
    CHECK(j.at(key).is_null());
  }
  CHECK(j.at("added_tokens") == nlohmann::json::array());
  CHECK(j.at("decoder") == nlohmann::json{{"type", "Fuse"}});
  const nlohmann::json& model = j.at("model");
  CHECK(model.at("type") == "BPE");
  CHECK(model.at("merges") == nlohmann::json::array());
  CHECK(model.at("unk_token").is_null());
  CHECK(model.at("byte_fallback") == false);
  CHECK(model.at("vocab") == nlohmann::json{{"\n", 0}, {" ", 1}, {"a", 2}, {"b", 3}});
}

TEST_CASE("tokenizer JSON round trip keeps ids, escapes and multi-byte characters",
          "[data][tokenizer]") {
  const CharTokenizer tok = CharTokenizer::fit("a\"\\\t\n\x01\xC3\xA9\xF0\x9F\x98\x80");
  const CharTokenizer back = CharTokenizer::from_json(tok.to_json());
  CHECK(back.vocab() == tok.vocab());
  // The ids are the list order, whatever that order is.
  CHECK(CharTokenizer::from_json(R"({"vocab": ["b", "a"]})").encode("ab") ==
        std::vector<int64_t>{1, 0});
  // In the Hugging Face form, the ids are the vocabulary's values.
  CHECK(CharTokenizer::from_json(R"({"model": {"type": "BPE", "vocab": {"a": 1, "b": 0}, "merges": []}})")
            .encode("ab") == std::vector<int64_t>{1, 0});
}

TEST_CASE("tokenizer from_json explains what is wrong with the JSON", "[data][tokenizer]") {
  const std::pair<std::string, std::string> cases[] = {
      {"{\"vocab\": [", "not valid JSON"},
      {R"(["a"])", "expected a Hugging Face tokenizer object or {\"vocab\": [...]}, got a JSON array"},
      {R"({})", "neither \"model\" (a Hugging Face tokenizer) nor \"vocab\""},
      {R"({"vocab": ["a"], "merges": []})", "unexpected key \"merges\""},
      {R"({"vocab": "abc"})",
       "\"vocab\" must be a list of one-character strings, got a JSON string"},
      {R"({"vocab": []})", "the vocabulary is empty"},
      {R"({"vocab": ["a", 5]})", "vocab[1] is a JSON number, expected a one-character string"},
      {R"({"vocab": ["a", "bc"]})", "vocab[1] = \"bc\" has 2 characters, expected exactly 1"},
      {R"({"vocab": [""]})", "vocab[0] = \"\" has 0 characters"},
      {R"({"vocab": ["a", "b", "a"]})", "vocab[2] U+0061 'a' duplicates vocab[0]"},
  };
  for (const auto& [json, message] : cases) {
    INFO("json: " << json);
    CHECK_THROWS_MATCHES(CharTokenizer::from_json(json), ValueError, MessageContains(message));
  }
}

TEST_CASE("tokenizer from_json refuses Hugging Face tokenizers that are not one id per character",
          "[data][tokenizer]") {
  const auto bpe = [](const std::string& model_keys, const std::string& top_keys = "") {
    return R"({)" + top_keys + R"("model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": [])" +
           model_keys + "}}";
  };
  const std::pair<std::string, std::string> cases[] = {
      {bpe(R"(, "merges": [["a", "b"]])"), "model.merges is"},
      {bpe(R"(, "unk_token": "a")"), "model.unk_token is \"a\""},
      {bpe(R"(, "byte_fallback": true)"), "model.byte_fallback is true"},
      {bpe(R"(, "end_of_word_suffix": "</w>")"), "model.end_of_word_suffix"},
      {bpe("", R"("pre_tokenizer": {"type": "ByteLevel"}, )"), "pre_tokenizer is"},
      {bpe("", R"("normalizer": {"type": "Lowercase"}, )"), "normalizer is"},
      {bpe("", R"("added_tokens": [{"id": 2, "content": "<|endoftext|>"}], )"), "added_tokens is"},
      {R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}})", "model must be {\"type\": \"BPE\""},
      // Fields of another JSON type are refused by the same checks, not as JSON type errors.
      {R"({"model": {"type": 5, "vocab": {"a": 0}}})", "model must be {\"type\": \"BPE\""},
      {bpe("", R"("added_tokens": [{"id": 0, "content": "<s>", "special": "yes"}], )"), "added_tokens is"},
      {bpe("", R"("added_tokens": [{"id": 0, "content": "<s>", "special": true, "lstrip": null}], )"),
       "added_tokens is"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 2}, "merges": []}})",
       "model.vocab key \"b\": id 2 is not one of 0..1"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}, "merges": []}})", "id 0 is not one of"},
      {R"({"model": {"type": "BPE", "vocab": {"ab": 0}, "merges": []}})", "has 2 characters"},
      {R"({"model": {"type": "BPE", "vocab": {}, "merges": []}})", "non-empty object"},
  };
  for (const auto& [json, message] : cases) {
    INFO("json: " << json);
    CHECK_THROWS_MATCHES(CharTokenizer::from_json(json), ValueError, MessageContains(message));
  }
}

TEST_CASE("special tokens take the first ids and round-trip through tokenizer.json", "[data][tokenizer]") {
  const CharTokenizer tok = CharTokenizer::fit("cab", {"<pad>", "<s>", "</s>"});
  CHECK(tok.vocab_size() == 6);
  CHECK(tok.num_specials() == 3);
  CHECK(tok.encode("abc") == std::vector<int64_t>{3, 4, 5});
  CHECK(tok.decode({1, 3, 2}) == "<s>a</s>");
  const CharTokenizer angle = CharTokenizer::fit("<s>", {"<s>"});  // text is read as characters
  CHECK(angle.encode("<s>") == std::vector<int64_t>{angle.id_of(U'<'), angle.id_of(U's'), angle.id_of(U'>')});
  CHECK(angle.id_of(U'<') == 1);
  const nlohmann::json j = nlohmann::json::parse(tok.to_json());
  CHECK(j.at("model").at("vocab").at("</s>") == 2);
  CHECK(j.at("added_tokens").size() == 3);
  CHECK(j.at("added_tokens")[1].at("content") == "<s>");
  CHECK(j.at("added_tokens")[1].at("special") == true);
  const CharTokenizer back = CharTokenizer::from_json(tok.to_json());
  CHECK(back.specials() == tok.specials());
  CHECK(back.vocab() == tok.vocab());
  CHECK_THROWS_WITH(CharTokenizer::fit("ab", {"<s>", "<s>"}), Catch::Contains("special token 1"));
  CHECK_THROWS_WITH(CharTokenizer::fit("ab", {"x"}), Catch::Contains("longer than one character"));
}
