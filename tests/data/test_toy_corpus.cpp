#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include <catch2/catch.hpp>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/data/data_source.hpp"
#include "tinygpt/data/tokenizer.hpp"
#include "tinygpt/data/toy_corpus.hpp"

using namespace tinygpt;
using namespace tinygpt::data;

namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The maximal runs of letters, in order.
std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> words(1);
  for (char c : text) {
    if (c >= 'a' && c <= 'z') {
      words.back().push_back(c);
    } else if (!words.back().empty()) {
      words.emplace_back();
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

// A name is any word longer than the longest grammar word; returns name -> occurrences.
std::map<std::string, int> names_in(const std::string& text) {
  std::map<std::string, int> names;
  for (const std::string& w : words_of(text)) {
    if (static_cast<int64_t>(w.size()) > kToyMaxWordChars) ++names[w];
  }
  return names;
}

// Echo documents have no grammar word: every word is longer than the longest one.
bool is_echo(const std::string& doc) {
  for (const std::string& w : words_of(doc)) {
    if (static_cast<int64_t>(w.size()) <= kToyMaxWordChars) return false;
  }
  return true;
}

bool all_distinct(const std::string& letters) {
  return std::set<char>(letters.begin(), letters.end()).size() == letters.size();
}

// The deepest nesting of brackets and quotes, or -1 if they do not match. A quote closes the
// innermost group when that group is a quote and opens one otherwise.
int bracket_depth(const std::string& text) {
  std::string open;
  int deepest = 0;
  for (char c : text) {
    if (c == '(' || c == '[' || (c == '"' && (open.empty() || open.back() != '"'))) {
      open.push_back(c);
      deepest = std::max(deepest, static_cast<int>(open.size()));
    } else if (c == ')' || c == ']' || c == '"') {
      const char expected = c == ')' ? '(' : c == ']' ? '[' : '"';
      if (open.empty() || open.back() != expected) return -1;
      open.pop_back();
    }
  }
  return open.empty() ? deepest : -1;
}

// About 16,000 documents: shares measured on them are within 0.4 percentage points (one
// standard deviation) of the designed ones.
const std::string& corpus_text() {
  static const std::string text = generate_toy_corpus(5, 1000000);
  return text;
}

const std::vector<std::string>& corpus_documents() {
  static const std::vector<std::string> docs = split_lines(corpus_text());
  return docs;
}

}  // namespace

TEST_CASE("toy corpus is the same for the same seed and differs between seeds", "[data][corpus]") {
  const std::string a = generate_toy_corpus(123, 5000);
  CHECK(a == generate_toy_corpus(123, 5000));
  CHECK(a != generate_toy_corpus(124, 5000));
}

TEST_CASE("toy corpus of seed 1 starts with the documents quoted in its header", "[data][corpus]") {
  const std::vector<std::string> docs = split_lines(generate_toy_corpus(1, 150));
  REQUIRE(docs.size() >= 4);
  CHECK(docs[0] == "lnquvmhgairpbdskeytfjczxwolnquvmhgairpbdskeytfjcz.");
  CHECK(docs[1] == "bpycmntgvwljfkiorahszxde bpycmntgvwljfkiorahszxde.");
  CHECK(docs[2] == "blfrvtonqwsyjdaugkx blfrvtonqwsyjdaugkx.");
  CHECK(docs[3] == "eqtpdgwvsahorjuieqtpdgwvsahorj.");
}

TEST_CASE("toy corpus is whole documents of at least the requested length", "[data][corpus]") {
  for (int64_t num_chars : {1, 100, 9999}) {
    const std::string text = generate_toy_corpus(2, num_chars);
    CHECK(static_cast<int64_t>(text.size()) >= num_chars);
    CHECK(static_cast<int64_t>(text.size()) <= num_chars + kToyMaxDocumentChars);
    CHECK(text.back() == '\n');
  }
  CHECK_THROWS_AS(generate_toy_corpus(2, 0), ValueError);
}

TEST_CASE("toy corpus uses exactly the documented alphabet", "[data][corpus]") {
  const CharTokenizer tok = CharTokenizer::fit(corpus_text());
  const std::vector<char32_t> alphabet(kToyAlphabet.begin(), kToyAlphabet.end());
  CHECK(tok.vocab() == alphabet);
}

TEST_CASE("toy corpus documents fit the documented length", "[data][corpus]") {
  int64_t short_docs = 0;
  for (const std::string& doc : corpus_documents()) {
    REQUIRE(!doc.empty());
    REQUIRE(static_cast<int64_t>(doc.size()) <= kToyMaxDocumentChars);
    short_docs += static_cast<int64_t>(doc.size()) <= kToyProbeMaxChars;
  }
  // "most fit in a context of 64"
  CHECK(short_docs * 2 > static_cast<int64_t>(corpus_documents().size()));
}

TEST_CASE("toy corpus brackets and quotes match in every document, at most 2 deep",
          "[data][corpus]") {
  int64_t with_brackets = 0, grammar_docs = 0;
  for (const std::string& doc : corpus_documents()) {
    INFO(doc);
    const int depth = bracket_depth(doc);
    REQUIRE(depth >= 0);
    REQUIRE(depth <= 2);
    if (is_echo(doc)) {
      CHECK(depth == 0);
    } else {
      ++grammar_docs;
      with_brackets += depth > 0;
    }
  }
  CHECK(with_brackets * 2 > grammar_docs);  // most grammar documents have a group
}

TEST_CASE("toy corpus short words all come from the documented grammar", "[data][corpus]") {
  const std::set<std::string> grammar = {"the",   "a",     "an",    "red",   "big",  "old", "small",
                                         "brown", "cat",   "dog",   "fox",   "bird", "cow", "owl",
                                         "sees",  "likes", "finds", "hears", "meets"};
  for (const std::string& doc : corpus_documents()) {
    for (const std::string& w : words_of(doc)) {
      if (static_cast<int64_t>(w.size()) <= kToyMaxWordChars) REQUIRE(grammar.count(w) == 1);
    }
  }
}

TEST_CASE("toy corpus echo documents say a span of distinct letters twice, in the designed shares",
          "[data][corpus]") {
  int64_t echoes = 0, inside = 0;
  size_t longest_span = 0;
  for (const std::string& doc : corpus_documents()) {
    if (!is_echo(doc)) continue;
    INFO(doc);
    ++echoes;
    REQUIRE(doc.back() == '.');
    const std::vector<std::string> words = words_of(doc);
    REQUIRE(words.size() <= 2);
    std::string span;
    if (words.size() == 2) {  // "SPAN SPAN."
      span = words[0];
      CHECK(doc == span + " " + span + ".");
      CHECK(all_distinct(span));
    } else {  // "SPANgapSPAN.": the longest prefix that the word ends with again
      ++inside;
      const std::string& word = words[0];
      for (size_t n = word.size() / 2; n > 0 && span.empty(); --n) {
        if (word.compare(word.size() - n, n, word, 0, n) == 0) span = word.substr(0, n);
      }
      const std::string first_copy_and_gap = word.substr(0, word.size() - span.size());
      CHECK(all_distinct(first_copy_and_gap));
      CHECK(static_cast<int64_t>(first_copy_and_gap.size() - span.size()) <= kToyEchoMaxGap);
    }
    CHECK(static_cast<int64_t>(span.size()) >= kToyEchoMinChars);
    CHECK(static_cast<int64_t>(span.size()) <= kToyEchoMaxChars);
    longest_span = std::max(longest_span, span.size());
  }
  // Copies as long as the head analysis's repeated sequences (the whole alphabet) occur.
  CHECK(longest_span == 26);
  const auto total = static_cast<double>(corpus_documents().size());
  CHECK(100.0 * echoes / total == Approx(static_cast<double>(kToyEchoPercent)).margin(1.5));
  CHECK(100.0 * inside / static_cast<double>(echoes) ==
        Approx(static_cast<double>(kToyEchoInsidePercent)).margin(1.5));
}

TEST_CASE("toy corpus names occur twice, in two sentences, in the designed share of documents",
          "[data][corpus]") {
  std::array<int64_t, 3> docs_with = {0, 0, 0};
  int64_t grammar_docs = 0;
  for (const std::string& doc : corpus_documents()) {
    if (is_echo(doc)) continue;  // see above
    ++grammar_docs;
    INFO(doc);
    const auto names = names_in(doc);
    REQUIRE(names.size() < docs_with.size());
    ++docs_with[names.size()];
    for (const auto& [name, count] : names) {
      CHECK(static_cast<int64_t>(name.size()) >= kToyNameMinChars);
      CHECK(static_cast<int64_t>(name.size()) <= kToyNameMaxChars);
      CHECK(count == 2);
      const size_t first = doc.find(name);
      const size_t second = doc.find(name, first + name.size());
      CHECK(doc.find('.', first) < second);  // a sentence ends between the two
    }
  }
  const auto total = static_cast<double>(grammar_docs);
  for (size_t k = 0; k < docs_with.size(); ++k) {
    INFO("documents with " << k << " names");
    CHECK(100.0 * docs_with[k] / total ==
          Approx(static_cast<double>(kToyNameCountPercent[k])).margin(1.5));
  }
}

TEST_CASE("toy probe text is one short document with a repeated name and brackets",
          "[data][corpus]") {
  for (uint64_t seed : {0, 1, 2, 3}) {
    const std::string probe = toy_probe_text(seed);
    INFO(probe);
    CHECK(probe == toy_probe_text(seed));
    CHECK(static_cast<int64_t>(probe.size()) <= kToyProbeMaxChars);
    CHECK(probe.find('\n') == std::string::npos);
    CHECK(!names_in(probe).empty());
    CHECK(bracket_depth(probe) > 0);
  }
}

TEST_CASE("toy corpus description names its ingredients", "[data][corpus]") {
  const std::string text = describe_toy_corpus();
  CHECK(text.find("induction") != std::string::npos);
  CHECK(text.find("brackets") != std::string::npos);
  CHECK(text.find("builtin:toy-mlm") != std::string::npos);
  CHECK(text.find('\n') == std::string::npos);
}

TEST_CASE("toy-mlm corpus is the same for the same seed and starts as its header says", "[data][corpus]") {
  CHECK(generate_toy_mlm_corpus(123, 5000) == generate_toy_mlm_corpus(123, 5000));
  CHECK(generate_toy_mlm_corpus(123, 5000) != generate_toy_mlm_corpus(124, 5000));
  CHECK_THROWS_AS(generate_toy_mlm_corpus(2, 0), ValueError);
  const std::vector<std::string> docs = split_lines(generate_toy_mlm_corpus(1, 100));
  REQUIRE(docs.size() >= 2);
  CHECK(docs[0] == "chlgwvdktwpxflvh chlgwvdktwpxflvh.");
  CHECK(docs[1] == "rfzsmgpsrfvupbow rfzsmgpsrfvupbow.");
}

TEST_CASE("toy-mlm corpus: every echo document is one span of the fixed length said twice, letters "
          "repeating, beside the toy corpus's grammar documents", "[data][corpus]") {
  const std::vector<std::string> docs = split_lines(generate_toy_mlm_corpus(5, 1000000));
  int64_t echoes = 0, with_repeats = 0;
  for (const std::string& doc : docs) {
    INFO(doc);
    REQUIRE(static_cast<int64_t>(doc.size()) <= kToyMaxDocumentChars);
    if (!is_echo(doc)) {
      CHECK(bracket_depth(doc) >= 0);
      continue;
    }
    ++echoes;
    const std::vector<std::string> words = words_of(doc);
    REQUIRE(words.size() == 2);
    CHECK(static_cast<int64_t>(words[0].size()) == kToyMlmEchoChars);
    CHECK(doc == words[0] + " " + words[0] + ".");
    with_repeats += !all_distinct(words[0]);
  }
  const auto total = static_cast<double>(docs.size());
  CHECK(100.0 * echoes / total == Approx(static_cast<double>(kToyEchoPercent)).margin(1.5));
  // Independent letters: a span of 16 of 26 letters repeats one with probability above 0.99.
  CHECK(static_cast<double>(with_repeats) / static_cast<double>(echoes) > 0.98);
  const std::vector<char32_t> alphabet(kToyAlphabet.begin(), kToyAlphabet.end());
  CHECK(CharTokenizer::fit(generate_toy_mlm_corpus(5, 1000000)).vocab() == alphabet);
}

TEST_CASE("builtin:toy and builtin:toy-mlm name the two toy corpora, each of a fixed seed", "[data][corpus]") {
  CHECK(is_toy_corpus(kToyCorpus));
  CHECK(is_toy_corpus(kToyMlmCorpus));
  CHECK(is_builtin_source(kToyMlmCorpus));
  CHECK(absolute_source(kToyMlmCorpus) == kToyMlmCorpus);
  CHECK_FALSE(is_toy_corpus("builtin:reverse"));
  const std::string toy = load_text(kToyCorpus), mlm = load_text(kToyMlmCorpus);
  CHECK(toy.substr(0, 2000) == generate_toy_corpus(0, 2000).substr(0, 2000));
  CHECK(mlm.substr(0, 2000) == generate_toy_mlm_corpus(0, 2000).substr(0, 2000));
}
