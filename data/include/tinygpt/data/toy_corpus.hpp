#pragma once
// The built-in toy corpus: what `tinygpt train` learns from when no --data is given.
//
// It is made for a small causal character-level GPT (2-4 layers, context 64-128, a minute or two
// of training) whose attention heads should end up doing visibly different jobs. Each line is a
// short "document" that mixes three kinds of structure, each rewarding one kind of head:
//   - sentences of a tiny grammar ("the big cat sees an owl."): local spelling and word order,
//     learnt by previous-token and other local heads;
//   - NAMES, random strings of lowercase letters, each written twice in the document: the first
//     time it cannot be predicted, the second time every letter after the first can, but only by
//     finding the earlier occurrence and copying the letter that followed it (induction heads);
//   - brackets ( ), [ ] and quotes " " around phrases, properly nested: the closing symbol is
//     the one that matches the innermost open bracket (matching heads);
//   - ECHO documents, a SPAN of 8-26 random letters (no letter twice) said twice, as two words
//     "SPAN SPAN." or running on inside one word "SPANgapSPAN." (gap: 0-6 more letters): most
//     of the document is predictable only by copying, the strongest call for induction heads.
//
// Grammar (one document per line; every choice is uniform unless a probability is given):
//   document := echo | grammar                  echo with probability 85/100
//   echo     := SPAN " " SPAN ".\n"              with probability 1/2, else
//             | SPAN GAP SPAN ".\n"              SPAN 8-26 letters, GAP 0-min(6, 26-SPAN),
//                                                all distinct
//   grammar  := sentence (" " sentence)* "\n"   at most 100 characters before the "\n"
//   sentence := mention " " verb " " mention "."
//   mention  := core | group                    a group with probability 1/4
//   group    := "(" inner ")" | "[" inner "]" | '"' inner '"'
//   inner    := core | np " " group             the nested form with probability 1/3, groups at
//                                               most 2 deep, never a quote inside a quote
//   core     := np | NAME                       NAME only where a name was placed (below)
//   np       := det " " [adj " "] noun          adj with probability 1/2; "a" becomes "an"
//                                               before a vowel
//   det      := "the" | "a"
//   adj      := "red" | "big" | "old" | "small" | "brown"
//   noun     := "cat" | "dog" | "fox" | "bird" | "cow" | "owl"
//   verb     := "sees" | "likes" | "finds" | "hears" | "meets"
//
// Names: 10% of grammar documents have no name, 60% one and 30% two (distinct). A name is 6-10 random
// lowercase letters; grammar words have at most 5 letters, so a word of 6 or more letters in a
// grammar document is always a name. Each name is the core of exactly two mentions, in two different sentences of
// its document. A document with names has 2 sentences (3 with probability 1/4); one without has
// 1 or 2. If the drawn document is longer than 100 characters, its sentences are drawn again
// (keeping its names and its number of sentences), so the shares above hold exactly.
//
// Alphabet (34 symbols): newline, space, " ( ) . [ ] and a-z.
// The first documents of seed 1 (a test keeps these lines true):
//   lnquvmhgairpbdskeytfjczxwolnquvmhgairpbdskeytfjcz.
//   bpycmntgvwljfkiorahszxde bpycmntgvwljfkiorahszxde.
//   blfrvtonqwsyjdaugkx blfrvtonqwsyjdaugkx.
//   eqtpdgwvsahorjuieqtpdgwvsahorj.
// About 95 in 100 documents have at most 64 characters; the mean is about 40.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace tinygpt::data {

// Every symbol the corpus uses, in code-point order (so it is also the fitted vocabulary).
inline constexpr std::string_view kToyAlphabet = "\n \"().[]abcdefghijklmnopqrstuvwxyz";
inline constexpr int64_t kToyMaxDocumentChars = 100;  // not counting the newline
inline constexpr int64_t kToyProbeMaxChars = 64;
inline constexpr int64_t kToyNameMinChars = 6;
inline constexpr int64_t kToyNameMaxChars = 10;
inline constexpr int64_t kToyMaxWordChars = 5;  // longest grammar word, shorter than any name
// Percent of grammar documents with 0, 1 and 2 names.
inline constexpr std::array<int64_t, 3> kToyNameCountPercent = {10, 60, 30};
// Percent of all documents that are echo documents, and the length of their span. Echo documents
// are what grows the induction heads, and the previous-token head sharpens only once they have
// formed, so they are most of the text. Spans run up to the whole alphabet (a span has no letter
// twice) because the head analysis copies sequences of that length: a lower maximum teaches
// the models that a copy ends by then (docs/HEADS.md, "The recipe").
inline constexpr int64_t kToyEchoPercent = 85;
inline constexpr int64_t kToyEchoMinChars = 8;
inline constexpr int64_t kToyEchoMaxChars = 26;
// Percent of echo documents whose repeat runs on inside one word, after 0-kToyEchoMaxGap letters
// (fewer when the span leaves fewer letters of the alphabet).
inline constexpr int64_t kToyEchoInsidePercent = 50;
inline constexpr int64_t kToyEchoMaxGap = 6;

// Whole documents, each ending in "\n", until the text has at least num_chars characters (so it
// is at most num_chars + kToyMaxDocumentChars long). The same seed gives byte-identical text on
// every machine. Throws ValueError for num_chars < 1.
std::string generate_toy_corpus(uint64_t seed, int64_t num_chars);

// The toy corpus for a masked LM (builtin:toy-mlm, `train --arch encoder`'s default): the same
// grammar documents, and, in the same share, echo documents of one form only, "SPAN SPAN." with
// a span of exactly kToyMlmEchoChars letters, each drawn on its own (a letter may repeat).
//   - One length: a masked position's query is [MASK], which says nothing of the letter to copy;
//     what finds its counterpart is where it is, kToyMlmEchoChars + 1 positions away, and a head
//     can attend by that offset only when every document has the same one.
//   - Letters that may repeat: with distinct letters the masked one is the only letter seen once
//     in the document, which a count answers without copying (docs/ENCODER.md).
// The echo probes of an encoder's heads (heads/encoder_heads.hpp) have this span.
inline constexpr int64_t kToyMlmEchoChars = 16;
// The first documents of seed 1 (a test keeps these lines true):
//   chlgwvdktwpxflvh chlgwvdktwpxflvh.
//   rfzsmgpsrfvupbow rfzsmgpsrfvupbow.
std::string generate_toy_mlm_corpus(uint64_t seed, int64_t num_chars);

// One document (without its newline) of at most kToyProbeMaxChars characters that has a
// repeated name and a bracket group, for attention heatmaps. Drawn from another random stream
// than generate_toy_corpus(seed), so it is not a training document.
std::string toy_probe_text(uint64_t seed);

// A one-paragraph description of the corpus, for --help and the README.
std::string describe_toy_corpus();

}  // namespace tinygpt::data
