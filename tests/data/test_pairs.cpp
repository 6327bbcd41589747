// Source/target pairs: the TSV reader, the built-in tasks and their alignments, the dataset.
#include <algorithm>
#include <regex>
#include <set>

#include <catch2/catch.hpp>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/data/data_source.hpp"
#include "tinygpt/data/pairs.hpp"
#include "tinygpt/data/utf8.hpp"

using namespace tinygpt;
using namespace tinygpt::data;

TEST_CASE("parse_pairs reads source<TAB>target lines and names the line of a bad one", "[data][pairs]") {
  const auto pairs = parse_pairs("ab\tba\r\nxyz\tzyx\n", "p.tsv");
  REQUIRE(pairs.size() == 2);
  CHECK(pairs[0].source == "ab");
  CHECK(pairs[0].target == "ba");
  CHECK(pairs[1].line == 2);
  CHECK(parse_pairs("é\tü", "p.tsv")[0].target == "ü");  // no final newline
  const std::vector<std::pair<std::string, std::string>> bad{
      {"ab\tba\nabba\n", "p.tsv:2: no tab between source and target"},
      {"ab\tb\ta\n", "p.tsv:1: more than one tab"},
      {"ab\tba\n\tx\n", "p.tsv:2: empty source"},
      {"ab\tba\nx\t\n", "p.tsv:2: empty target"},
      {"ab\tba\n\nx\ty\n", "p.tsv:2: empty line"},
      {"", "p.tsv: no source<TAB>target lines"},
  };
  for (const auto& [text, message] : bad) {
    INFO(text);
    CHECK_THROWS_WITH(parse_pairs(text, "p.tsv"), Catch::Contains(message));
  }
}

TEST_CASE("the built-in tasks: distinct sources and correct targets from a fixed seed", "[data][pairs]") {
  const std::regex iso("(19|20)\\d\\d-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])");
  const std::regex words("([1-9]|[12]\\d|3[01]) [A-Z][a-z]+ (19|20)\\d\\d");
  for (const char* task : {kReverseTask, kSortTask, kDatesTask}) {
    INFO(task);
    const std::string text = load_text(task);
    REQUIRE(text == generate_pair_task(task, 0, kPairTaskSize));
    const auto pairs = parse_pairs(text, task);
    REQUIRE(static_cast<int64_t>(pairs.size()) == kPairTaskSize);
    std::set<std::string> sources;
    int64_t iso_targets = 0;
    for (const TextPair& p : pairs) {
      sources.insert(p.source);
      if (std::string(task) == kReverseTask) {
        REQUIRE(p.target == std::string(p.source.rbegin(), p.source.rend()));
        REQUIRE(p.source.size() >= 8);
        REQUIRE(p.source.size() <= 16);
      } else if (std::string(task) == kSortTask) {
        std::string sorted = p.source;
        std::sort(sorted.begin(), sorted.end());
        REQUIRE(p.target == sorted);
      } else {
        const bool forward = std::regex_match(p.source, words) && std::regex_match(p.target, iso);
        const bool backward = std::regex_match(p.source, iso) && std::regex_match(p.target, words);
        REQUIRE((forward || backward));
        iso_targets += forward;
      }
    }
    REQUIRE(static_cast<int64_t>(sources.size()) == kPairTaskSize);
    if (std::string(task) == kDatesTask) {
      CHECK(iso_targets > kPairTaskSize * 45 / 100);
      CHECK(iso_targets < kPairTaskSize * 55 / 100);
    }
  }
  CHECK(is_builtin_source(kDatesTask));
  CHECK(absolute_source(kSortTask) == kSortTask);
  CHECK_THROWS_WITH(load_text("builtin:nope"), Catch::Contains("unknown built-in data builtin:nope"));
}

TEST_CASE("each task's alignment points target characters at their source", "[data][pairs]") {
  using V = std::vector<std::vector<int64_t>>;
  CHECK(task_alignment(kReverseTask, U"abc", U"cba") == V{{2}, {1}, {0}});
  CHECK(task_alignment(kSortTask, U"bab", U"abb") == V{{1}, {0, 2}, {0, 2}});
  // "5 May 2026" -> "2026-05-05": the year digit for digit, month and day as whole fields.
  const V forward = task_alignment(kDatesTask, U"5 May 2026", U"2026-05-05");
  CHECK(forward == V{{6}, {7}, {8}, {9}, {}, {2, 3, 4}, {2, 3, 4}, {}, {0}, {0}});
  const V backward = task_alignment(kDatesTask, U"2026-05-23", U"23 May 2026");
  CHECK(backward == V{{8}, {9}, {}, {5, 6}, {5, 6}, {5, 6}, {}, {0}, {1}, {2}, {3}});
  CHECK(task_alignment("data.tsv", U"ab", U"ba").empty());
}

TEST_CASE("PairDataset pads batches, frames targets and holds out the last pairs", "[data][pairs]") {
  const auto pairs = parse_pairs("abc\tcba\nab\tba\nb\tb\nca\tac\n", "p.tsv");
  const CharTokenizer tok = fit_pair_tokenizer(pairs);
  REQUIRE(tok.specials() == pair_specials());
  const PairDataset data(pairs, tok, 4, 0.25, "p.tsv");
  REQUIRE(data.size(Split::train) == 3);
  REQUIRE(data.size(Split::val) == 1);
  CHECK(tok.decode(data.source(Split::val, 0)) == "ca");
  const PairBatch b = data.batch(Split::train, 1, 2);  // "ab"->"ba", "b"->"b"
  const int64_t a = tok.id_of(U'a'), bb = tok.id_of(U'b');
  CHECK(b.source.shape() == Shape{2, 2});
  CHECK(b.source_lengths == std::vector<int64_t>{2, 1});
  CHECK(b.source.to_vector() == std::vector<double>{double(a), double(bb), double(bb), kPadId});
  CHECK(b.inputs.to_vector() == std::vector<double>{kBosId, double(bb), double(a), kBosId, double(bb), kPadId});
  CHECK(b.targets.to_vector() == std::vector<double>{double(bb), double(a), kEosId, double(bb), kEosId, -100});
  Generator gen(3), same(3);
  const PairBatch s = data.sample_batch(Split::train, 5, gen);
  for (int64_t i : s.index) CHECK(i == same.randint(3));
  CHECK(gen.next_u64() == same.next_u64());  // exactly one draw per row
}

TEST_CASE("PairDataset names the line of a pair too long for the context or with an unknown character",
          "[data][pairs]") {
  const auto pairs = parse_pairs("abc\tcba\nabcde\tedcba\n", "p.tsv");
  const CharTokenizer tok = fit_pair_tokenizer(pairs);
  CHECK_THROWS_WITH(PairDataset(pairs, tok, 5, 0.0, "p.tsv"),
                    Catch::Contains("p.tsv:2: a source of 5 and a target of 5 characters do not fit 5 positions"));
  const auto other = parse_pairs("abc\tcba\nxyz\tzyx\n", "q.tsv");
  CHECK_THROWS_WITH(PairDataset(other, tok, 8, 0.0, "q.tsv"), Catch::Contains("q.tsv:2:") && Catch::Contains("'x'"));
  CHECK_THROWS_WITH(PairDataset(pairs, tok, 8, 0.5, "p.tsv").batch(Split::val, 0, 2),
                    Catch::Contains("outside the val split's 1"));
}
