#pragma once
// UTF-8 <-> Unicode code points, with the full validation of RFC 3629: overlong forms, UTF-16
// surrogates (U+D800..U+DFFF), values above U+10FFFF, stray continuation bytes and sequences cut
// short are all rejected. The character tokenizer works on code points, so a multi-byte
// character (é, 日, 😀) is one token and is never split.
#include <string>
#include <string_view>

namespace tinygpt::data {

// The code points of `bytes`. Throws ValueError naming the byte offset where the first invalid
// sequence starts and what is wrong with it.
std::u32string decode_utf8(std::string_view bytes);

// Throws exactly as decode_utf8 would, without building the decoded string.
void check_utf8(std::string_view bytes);

// Appends the UTF-8 form of `cp`; throws ValueError for a surrogate or a value above U+10FFFF.
void append_utf8(std::string& out, char32_t cp);
std::string encode_utf8(std::u32string_view code_points);

// A code point as a person can read it in an error message: "U+00E9 'é'", "U+000A '\n'", and
// just "U+0007" for control characters that have no visible form.
std::string describe_code_point(char32_t cp);

}  // namespace tinygpt::data
