// The explorer page as text: the embedded data (tokens, quantised attention, heads, series), the
// escaping that keeps it inside its <script> element, and no URL anywhere. Its behaviour in a
// browser is tested by tests/browser/explorer_test.js.
#include <cmath>
#include <limits>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "data/message_contains.hpp"
#include "tinygpt/autograd/error.hpp"
#include "tinygpt/report/explorer.hpp"

using namespace tinygpt::report;
using tinygpt::ValueError;
using tinygpt::testing::MessageContains;

namespace {

// One layer, two heads, three tokens: head 0 looks at the previous token, head 1 spreads evenly.
ExplorerData small_data() {
  ExplorerData d;
  d.title = "runs/x";
  d.tokens = {"a", "</script>", "b"};
  d.layers = 1;
  d.heads = 2;
  d.attention = {1, 0, 0, 1, 0, 0, 0, 1, 0,                    // head 0
                 1, 0, 0, 0.5f, 0.5f, 0, 1.f / 3, 1.f / 3, 1.f / 3};  // head 1
  d.head_entries = {{0, 0, "previous_token", {{"previous_token", 1.0}, {"entropy", 0.0}}},
                    {0, 1, "diffuse", {{"previous_token", 0.42}, {"entropy", 1.0}}}};
  d.step_loss = {{1, 3.5}, {2, 3.25}};
  return d;
}

// The JSON inside <script id="explorer-data">.
nlohmann::json embedded_data(const std::string& html) {
  const std::string open = "<script id=\"explorer-data\" type=\"application/json\">";
  const size_t start = html.find(open);
  REQUIRE(start != std::string::npos);
  const size_t end = html.find("</script>", start + open.size());
  REQUIRE(end != std::string::npos);
  return nlohmann::json::parse(html.substr(start + open.size(), end - start - open.size()));
}

std::string decode_base64(const std::string& text) {
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    if (c == '=') break;
    bits = (bits << 6) | static_cast<uint32_t>(alphabet.find(c));
    count += 6;
    if (count >= 8) {
      count -= 8;
      out += static_cast<char>((bits >> count) & 0xff);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("explorer: weights are quantised to bytes, byte / 255 within 1/510", "[report]") {
  CHECK(quantize_weight(0.0f) == 0);
  CHECK(quantize_weight(1.0f) == 255);
  CHECK(quantize_weight(0.5f) == 128);
  CHECK(quantize_weight(-0.25f) == 0);
  CHECK(quantize_weight(2.0f) == 255);
  CHECK(quantize_weight(std::numeric_limits<float>::quiet_NaN()) == 0);
  for (float w = 0.0f; w <= 1.0f; w += 0.001f) {
    CHECK(std::abs(quantize_weight(w) / 255.0 - w) <= 1.0 / 510 + 1e-7);
  }
}

TEST_CASE("explorer: the page embeds the tokens, the quantised attention and the heads", "[report]") {
  const std::string html = explorer_html(small_data());
  const nlohmann::json data = embedded_data(html);
  CHECK(data["tokens"] == nlohmann::json({"a", "</script>", "b"}));
  CHECK(data["attention"]["layers"] == 1);
  CHECK(data["attention"]["heads"] == 2);
  CHECK(data["attention"]["t"] == 3);
  const std::string bytes = decode_base64(data["attention"]["data"].get<std::string>());
  REQUIRE(bytes.size() == 18);
  const ExplorerData d = small_data();
  for (size_t i = 0; i < bytes.size(); ++i) {
    CHECK(static_cast<uint8_t>(bytes[i]) == quantize_weight(d.attention[i]));
  }
  REQUIRE(data["heads"].size() == 2);
  CHECK(data["heads"][1]["role"] == "diffuse");
  CHECK(data["heads"][1]["scores"]["previous_token"] == 0.42);
  CHECK(data["loss"]["step"] == nlohmann::json({{1, 3.5}, {2, 3.25}}));
  CHECK(data["formation"].empty());
  CHECK(data["in_context"].is_null());
}

TEST_CASE("explorer: the page is self-contained and no token can close its script", "[report]") {
  const std::string html = explorer_html(small_data());
  CHECK(html.find("http") == std::string::npos);
  CHECK(html.find("<link") == std::string::npos);
  CHECK(html.find(" src=") == std::string::npos);
  CHECK(html.find("/*EXPLORER_DATA*/") == std::string::npos);
  CHECK(html.find("<style>") != std::string::npos);
  CHECK(html.find("window.tinygptExplorer") != std::string::npos);
  // The token "</script>" is only in the data as an escaped '<'.
  CHECK(html.find("\\u003c/script>") != std::string::npos);
}

TEST_CASE("explorer: formation snapshots and ablation scores are carried through", "[report]") {
  ExplorerData d = small_data();
  d.in_context = InContext{3.0, 1.5, 0.5};
  d.formation = {{100, {{0, 0, "local", {{"previous_token", 0.3}}}}, InContext{3.2, 3.0, 0.94}},
                 {200, {{0, 0, "previous_token", {{"previous_token", 0.9}}}}, std::nullopt}};
  d.head_entries[0].scores.emplace_back("ablated_second_copy_ratio", 0.8);
  const nlohmann::json data = embedded_data(explorer_html(d));
  REQUIRE(data["formation"].size() == 2);
  CHECK(data["formation"][0]["step"] == 100);
  CHECK(data["formation"][0]["heads"][0]["scores"]["previous_token"] == 0.3);
  CHECK(data["formation"][0]["in_context"]["ratio"] == 0.94);
  CHECK(data["formation"][1]["in_context"].is_null());
  CHECK(data["in_context"]["second_copy_loss"] == 1.5);
  CHECK(data["heads"][0]["scores"]["ablated_second_copy_ratio"] == 0.8);
}

TEST_CASE("explorer: shapes that disagree are refused with the shapes in the message", "[report]") {
  ExplorerData d = small_data();
  d.attention.pop_back();
  CHECK_THROWS_MATCHES(explorer_html(d), ValueError, MessageContains("(L,H,T,T) = (1,2,3,3) needs 18"));
  d = small_data();
  d.head_entries.push_back({1, 0, "local", {}});
  CHECK_THROWS_MATCHES(explorer_html(d), ValueError, MessageContains("head entry 1.0 is outside 1 layers x 2 heads"));
  d = small_data();
  d.tokens.clear();
  CHECK_THROWS_MATCHES(explorer_html(d), ValueError, MessageContains("needs tokens"));
}

namespace {

// small_data() as an encoder's over a 3-token source, with one decoder layer of one head writing
// two tokens: "x" from source position 2, then the end token from position 0.
ExplorerData cross_data() {
  ExplorerData d = small_data();
  d.causal = false;
  CrossView c;
  c.output_tokens = {"x", "</s>"};
  c.aligned = {{2}, {}};
  c.layers = 1;
  c.heads = 1;
  c.attention = {0, 0.25f, 0.75f, 1, 0, 0};
  c.head_entries = {{0, 0, "", {{"alignment", 0.75}, {"ablated_exact_match_drop", 0.5}}}};
  c.formation = {{100, {{0, 0, "", {{"alignment", 0.4}}}}, std::nullopt}};
  c.exact_match = {{100, 0.25}};
  d.cross = c;
  return d;
}

}  // namespace

TEST_CASE("explorer: an encoder-decoder's cross-attention view is embedded over the source", "[report]") {
  const nlohmann::json data = embedded_data(explorer_html(cross_data()));
  CHECK(data["causal"] == false);
  CHECK(small_data().causal);
  CHECK(embedded_data(explorer_html(small_data()))["cross"].is_null());
  const nlohmann::json& cross = data["cross"];
  CHECK(cross["output_tokens"] == nlohmann::json({"x", "</s>"}));
  CHECK(cross["aligned"] == nlohmann::json::parse("[[2], []]"));
  CHECK(cross["attention"]["t"] == 2);
  CHECK(cross["attention"]["s"] == 3);
  const std::string bytes = decode_base64(cross["attention"]["data"].get<std::string>());
  REQUIRE(bytes.size() == 6);
  CHECK(static_cast<uint8_t>(bytes[1]) == quantize_weight(0.25f));
  CHECK(static_cast<uint8_t>(bytes[3]) == 255);
  CHECK(cross["heads"][0]["scores"]["alignment"] == 0.75);
  CHECK(cross["heads"][0]["scores"]["ablated_exact_match_drop"] == 0.5);
  CHECK(cross["formation"][0]["heads"][0]["scores"]["alignment"] == 0.4);
  CHECK(cross["exact_match"] == nlohmann::json::parse("[[100, 0.25]]"));
}

TEST_CASE("explorer: a cross-attention view whose shapes disagree is refused", "[report]") {
  ExplorerData d = cross_data();
  d.cross->attention.pop_back();
  CHECK_THROWS_MATCHES(explorer_html(d), ValueError,
                       MessageContains("cross-attention has 5 weights, (L,H,T,T) = (1,1,2,3) needs 6"));
  d = cross_data();
  d.cross->head_entries.push_back({0, 1, "", {}});
  CHECK_THROWS_MATCHES(explorer_html(d), ValueError, MessageContains("cross-attention head entry 0.1 is outside"));
  d = cross_data();
  d.cross->aligned = {{3}, {}};
  CHECK_THROWS_MATCHES(explorer_html(d), ValueError, MessageContains("aligns source position 3 of 3"));
  d = cross_data();
  d.cross->aligned = {{2}};
  CHECK_THROWS_MATCHES(explorer_html(d), ValueError, MessageContains("aligns 1 output tokens of 2"));
  d = cross_data();
  d.cross->output_tokens.clear();
  CHECK_THROWS_MATCHES(explorer_html(d), ValueError, MessageContains("cross-attention needs output tokens"));
}

TEST_CASE("explorer: composition links are embedded, and refused unless from a head to a later layer's",
          "[report]") {
  ExplorerData d = small_data();
  d.layers = 2;
  d.heads = 1;  // the same 18 weights as two layers of one head
  d.head_entries = {{0, 0, "previous_token", {}}, {1, 0, "induction", {}}};
  d.composition = {{0, 0, 1, 0, 0.31, 0.12}};
  const nlohmann::json links = embedded_data(explorer_html(d))["composition"];
  REQUIRE(links.size() == 1);
  CHECK(links[0]["from"] == nlohmann::json::array({0, 0}));
  CHECK(links[0]["to"] == nlohmann::json::array({1, 0}));
  CHECK(links[0]["score"] == 0.31);
  CHECK(links[0]["baseline"] == 0.12);
  d.composition = {{1, 0, 0, 0, 0.31, 0.12}};
  CHECK_THROWS_MATCHES(explorer_html(d), ValueError, MessageContains("composition link 1.0 -> 0.0"));
  d.composition = {{0, 0, 1, 1, 0.31, 0.12}};
  CHECK_THROWS_MATCHES(explorer_html(d), ValueError, MessageContains("2 layers x 1 heads"));
}

TEST_CASE("explorer: an encoder's [MASK] view carries each mask's position and guesses", "[report]") {
  ExplorerData d = small_data();
  d.causal = false;
  d.masks = {{1, {{"a", 0.75}, {"b", 0.125}}}};
  const nlohmann::json data = embedded_data(explorer_html(d));
  CHECK(data["causal"] == false);
  REQUIRE(data["masks"].size() == 1);
  CHECK(data["masks"][0]["position"] == 1);
  CHECK(data["masks"][0]["top"] == nlohmann::json::parse(R"([{"token": "a", "prob": 0.75}, {"token": "b", "prob": 0.125}])"));
  CHECK(embedded_data(explorer_html(small_data()))["masks"].empty());
  d.masks = {{3, {}}};
  CHECK_THROWS_MATCHES(explorer_html(d), ValueError, MessageContains("masked position 3 of 3 tokens"));
}
