#include "tinygpt/data/toy_corpus.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/autograd/generator.hpp"

// Every random choice is its own statement: the order in which C++ evaluates function arguments
// and operands of + is unspecified, and the text must be the same with every compiler.
namespace tinygpt::data {
namespace {

constexpr std::array<std::string_view, 2> kDeterminers = {"the", "a"};
constexpr std::array<std::string_view, 5> kAdjectives = {"red", "big", "old", "small", "brown"};
constexpr std::array<std::string_view, 6> kNouns = {"cat", "dog", "fox", "bird", "cow", "owl"};
constexpr std::array<std::string_view, 5> kVerbs = {"sees", "likes", "finds", "hears", "meets"};

struct Bracket {
  char open, close;
};
// Quotes last, so a group inside a quote can draw from the first two only.
constexpr std::array<Bracket, 3> kBrackets = {{{'(', ')'}, {'[', ']'}, {'"', '"'}}};
constexpr int kMaxGroupDepth = 2;

bool chance(Generator& gen, int64_t numerator, int64_t denominator) {
  return gen.randint(denominator) < numerator;
}

template <size_t N>
std::string_view pick(Generator& gen, const std::array<std::string_view, N>& words) {
  return words[static_cast<size_t>(gen.randint(static_cast<int64_t>(N)))];
}

bool starts_with_vowel(std::string_view word) {
  return std::string_view("aeiou").find(word.front()) != std::string_view::npos;
}

std::string noun_phrase(Generator& gen) {
  std::string_view det = pick(gen, kDeterminers);
  std::string rest;
  if (chance(gen, 1, 2)) {
    rest += pick(gen, kAdjectives);
    rest += ' ';
  }
  rest += pick(gen, kNouns);
  if (det == "a" && starts_with_vowel(rest)) det = "an";
  return std::string(det) + ' ' + rest;
}

std::string random_letters(Generator& gen, int64_t min_length, int64_t max_length) {
  const int64_t length = min_length + gen.randint(max_length - min_length + 1);
  std::string name;
  for (int64_t i = 0; i < length; ++i) name.push_back(static_cast<char>('a' + gen.randint(26)));
  return name;
}

// A document and what the probe text selects on.
struct ToyDocument {
  std::string text;  // without the newline
  int64_t names = 0;
  int64_t groups = 0;
};

// Writes the mentions of one document; counts the groups it opens.
class MentionWriter {
 public:
  explicit MentionWriter(Generator& gen) : gen_(gen) {}
  int64_t groups() const { return groups_; }

  // `core` as it stands in a sentence: bare, or inside a group with probability 1/4.
  std::string mention(const std::string& core) {
    return chance(gen_, 1, 4) ? group(core, kMaxGroupDepth, false) : core;
  }

 private:
  std::string group(const std::string& core, int depth_left, bool inside_quote) {
    ++groups_;
    const Bracket bracket = kBrackets[static_cast<size_t>(gen_.randint(inside_quote ? 2 : 3))];
    std::string inner = core;
    if (depth_left > 1 && chance(gen_, 1, 3)) {
      inner = noun_phrase(gen_);
      inner += ' ';
      inner += group(core, depth_left - 1, inside_quote || bracket.open == '"');
    }
    return bracket.open + inner + bracket.close;
  }

  Generator& gen_;
  int64_t groups_ = 0;
};

constexpr int64_t sum(const std::array<int64_t, 3>& values) {
  return values[0] + values[1] + values[2];
}
static_assert(sum(kToyNameCountPercent) == 100, "kToyNameCountPercent must add up to 100");
static_assert(kToyEchoMaxChars <= 26, "an echo span has no letter twice");
static_assert(kToyEchoMinChars > kToyMaxWordChars, "an echo span must not look like a grammar word");
static_assert(kToyMlmEchoChars > kToyMaxWordChars && 2 * kToyMlmEchoChars + 2 <= kToyMaxDocumentChars,
              "a masked-LM echo span must not look like a grammar word, and its document must fit");

int64_t draw_name_count(Generator& gen) {
  int64_t roll = gen.randint(100);
  size_t count = 0;
  while (roll >= kToyNameCountPercent[count]) roll -= kToyNameCountPercent[count++];
  return static_cast<int64_t>(count);
}

// Each sentence has two core slots (subject, object); an empty slot gets a fresh noun phrase.
// Each name goes into one slot of each of two different sentences.
std::vector<std::string> place_names(Generator& gen, const std::vector<std::string>& names,
                                     int64_t sentences) {
  std::vector<std::string> cores(static_cast<size_t>(2 * sentences));
  for (const std::string& name : names) {
    const int64_t first = gen.randint(sentences);
    int64_t second = gen.randint(sentences - 1);
    if (second >= first) ++second;
    for (int64_t sentence : {first, second}) {
      auto slot = static_cast<size_t>(2 * sentence + gen.randint(2));
      if (!cores[slot].empty()) slot ^= 1;  // the other name is there; this one never is
      cores[slot] = name;
    }
  }
  return cores;
}

ToyDocument generate_document(Generator& gen) {
  const int64_t name_count = draw_name_count(gen);
  std::vector<std::string> names;
  while (static_cast<int64_t>(names.size()) < name_count) {
    std::string name = random_letters(gen, kToyNameMinChars, kToyNameMaxChars);
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  const int64_t sentences = name_count == 0 ? 1 + gen.randint(2) : 2 + (chance(gen, 1, 4) ? 1 : 0);

  // Redraw the sentences (never the names) until the document fits.
  for (;;) {
    const std::vector<std::string> cores = place_names(gen, names, sentences);
    MentionWriter writer(gen);
    std::string text;
    for (int64_t s = 0; s < sentences; ++s) {
      std::string slot_text[2];
      for (size_t slot = 0; slot < 2; ++slot) {
        const std::string& core = cores[static_cast<size_t>(2 * s) + slot];
        slot_text[slot] = writer.mention(core.empty() ? noun_phrase(gen) : core);
      }
      const std::string_view verb = pick(gen, kVerbs);
      if (s > 0) text += ' ';
      text += fmt::format("{} {} {}.", slot_text[0], verb, slot_text[1]);
    }
    if (static_cast<int64_t>(text.size()) <= kToyMaxDocumentChars) {
      return {std::move(text), name_count, writer.groups()};
    }
  }
}

// A span of distinct letters, so each letter of a repeat has exactly one earlier occurrence to
// copy from (as random words from a large vocabulary would): with repeated letters the copy
// target is ambiguous and induction heads form far more slowly, if at all within a run of the
// default model.
std::string distinct_letters(Generator& gen, int64_t length) {
  std::string letters = "abcdefghijklmnopqrstuvwxyz";
  gen.shuffle_front(letters, length);
  letters.resize(static_cast<size_t>(length));
  return letters;
}

// "SPAN SPAN." or "SPANgapSPAN.": a span said twice, most of the second copy predictable only by
// copying (the main signal for induction heads). The second form has no delimiter before the
// repeat, so the model cannot learn "copy after a space" instead of "copy what followed the
// earlier occurrence of this letter".
ToyDocument generate_echo_document(Generator& gen) {
  const int64_t span_length =
      kToyEchoMinChars + gen.randint(kToyEchoMaxChars - kToyEchoMinChars + 1);
  if (!chance(gen, kToyEchoInsidePercent, 100)) {
    const std::string span = distinct_letters(gen, span_length);
    return {fmt::format("{} {}.", span, span), 0, 0};
  }
  // The span and its gap use distinct letters.
  const int64_t gap_length = gen.randint(std::min(kToyEchoMaxGap, 26 - span_length) + 1);
  const std::string letters = distinct_letters(gen, span_length + gap_length);
  const std::string span = letters.substr(0, static_cast<size_t>(span_length));
  return {fmt::format("{}{}.", letters, span), 0, 0};
}

// "SPAN SPAN." with a span of kToyMlmEchoChars letters that may repeat (toy_corpus.hpp says why).
ToyDocument generate_fixed_echo_document(Generator& gen) {
  const std::string span = random_letters(gen, kToyMlmEchoChars, kToyMlmEchoChars);
  return {fmt::format("{} {}.", span, span), 0, 0};
}

using EchoWriter = ToyDocument (*)(Generator&);

// Documents drawn as the grammar says, the echo ones by `echo`, until num_chars.
std::string generate_documents(const char* operation, uint64_t seed, int64_t num_chars, EchoWriter echo) {
  if (num_chars < 1) {
    throw ValueError(Operation(operation), fmt::format("num_chars must be >= 1, got {}", num_chars));
  }
  Generator gen(seed);
  std::string text;
  text.reserve(static_cast<size_t>(num_chars + kToyMaxDocumentChars + 1));
  while (static_cast<int64_t>(text.size()) < num_chars) {
    text += (chance(gen, kToyEchoPercent, 100) ? echo(gen) : generate_document(gen)).text;
    text += '\n';
  }
  return text;
}

}  // namespace

std::string generate_toy_corpus(uint64_t seed, int64_t num_chars) {
  return generate_documents("generate_toy_corpus", seed, num_chars, generate_echo_document);
}

std::string generate_toy_mlm_corpus(uint64_t seed, int64_t num_chars) {
  return generate_documents("generate_toy_mlm_corpus", seed, num_chars, generate_fixed_echo_document);
}

std::string toy_probe_text(uint64_t seed) {
  Generator gen(~seed);  // not the corpus stream of the same seed
  for (;;) {
    ToyDocument doc = generate_document(gen);
    if (doc.names > 0 && doc.groups > 0 &&
        static_cast<int64_t>(doc.text.size()) <= kToyProbeMaxChars) {
      return std::move(doc.text);
    }
  }
}

std::string describe_toy_corpus() {
  return fmt::format(
      "The built-in toy corpus is generated from a seed: one short document per line (at most "
      "{} characters), written with {} symbols (lowercase letters, space, newline and . ( ) [ ] "
      "\"). {}% are echo documents, a span of {}-{} random letters (no letter twice) said twice, "
      "either as two words (\"qzmfkt qzmfkt.\") or running on inside one word after up to {} "
      "other letters (\"qzmfktbwqzmfkt.\"; fewer when the span leaves fewer): the second copy can only be predicted by finding "
      "the earlier occurrence of each letter and copying the letter that followed it (the job "
      "of induction heads). The others are one to three sentences of a tiny grammar (\"the big "
      "cat sees an owl.\") that teaches spelling and word order; {}% of them contain one or two "
      "names, random strings of {}-{} letters that each appear exactly twice, and phrases are "
      "often wrapped in properly nested brackets and quotes whose closing symbol must match the "
      "open one. builtin:toy-mlm, an encoder's default, has the same grammar documents, and echo "
      "documents of one form: a span of exactly {} letters, which may repeat, said twice with a "
      "space between.",
      kToyMaxDocumentChars, kToyAlphabet.size(), kToyEchoPercent, kToyEchoMinChars,
      kToyEchoMaxChars, kToyEchoMaxGap, 100 - kToyNameCountPercent[0], kToyNameMinChars,
      kToyNameMaxChars, kToyMlmEchoChars);
}

}  // namespace tinygpt::data
