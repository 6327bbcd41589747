// GPT-2's byte-to-character map and its pre-tokenizer (PCRE2, JIT-compiled).
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <memory>
#include <unordered_map>

#include <fmt/format.h>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/data/bpe.hpp"
#include "tinygpt/data/utf8.hpp"

namespace tinygpt::data {

namespace {

// Bytes that GPT-2 writes as themselves: printable ASCII and printable Latin-1 (U+00AD, the soft
// hyphen, is invisible and is not one).
bool printable_byte(int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE); }

std::array<std::string, 256> make_byte_level_chars() {
  std::array<std::string, 256> chars;
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) append_utf8(chars[b], printable_byte(b) ? static_cast<char32_t>(b) : next++);
  return chars;
}

const std::unordered_map<std::string, char>& byte_of_char() {
  static const std::unordered_map<std::string, char> map = [] {
    std::unordered_map<std::string, char> m;
    for (int b = 0; b < 256; ++b) m.emplace(byte_level_chars()[b], static_cast<char>(b));
    return m;
  }();
  return map;
}

// Unicode's White_Space, the \s of tiktoken and of Python's regex module (JavaScript's \s differs
// on U+0085 and U+FEFF, PCRE2's on U+180E).
#define WS "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
constexpr const char* kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS "\\p{L}\\p{N}]+|[" WS "]+(?![^" WS "])|[" WS "]+";
#undef WS

struct CodeDeleter {
  void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};
struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof buffer);
  return reinterpret_cast<const char*>(buffer);
}

// The pattern, compiled once. Invalid UTF-8 is matched by nothing rather than refused, so the
// scan steps over it.
const pcre2_code* gpt2_pattern() {
  static const std::unique_ptr<pcre2_code, CodeDeleter> code = [] {
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* compiled = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kGpt2Pattern), PCRE2_ZERO_TERMINATED,
                                         PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &error, &offset, nullptr);
    if (compiled == nullptr) {
      throw Error(Operation("gpt2_pre_tokens"), fmt::format("PCRE2 refuses the pattern at {}: {}", offset, pcre2_message(error)));
    }
    pcre2_jit_compile(compiled, PCRE2_JIT_COMPLETE);  // without a JIT, the interpreter matches the same
    return std::unique_ptr<pcre2_code, CodeDeleter>(compiled);
  }();
  return code.get();
}

}  // namespace

const std::array<std::string, 256>& byte_level_chars() {
  static const std::array<std::string, 256> chars = make_byte_level_chars();
  return chars;
}

std::string bytes_of_byte_level(std::string_view text, std::string_view where) {
  std::string bytes;
  const std::u32string chars = decode_utf8(text);
  for (const char32_t c : chars) {
    std::string utf8;
    append_utf8(utf8, c);
    const auto it = byte_of_char().find(utf8);
    if (it == byte_of_char().end()) {
      throw ValueError(fmt::format("{} \"{}\": character {} is not one of GPT-2's byte characters",
                                   where, excerpt(text), describe_code_point(c)));
    }
    bytes += it->second;
  }
  return bytes;
}

std::string byte_level_text(std::string_view bytes) {
  std::string text;
  for (const char b : bytes) text += byte_level_chars()[static_cast<unsigned char>(b)];
  return text;
}

std::vector<std::string_view> gpt2_pre_tokens(std::string_view text) {
  const pcre2_code* code = gpt2_pattern();
  const std::unique_ptr<pcre2_match_data, MatchDataDeleter> match(pcre2_match_data_create_from_pattern(code, nullptr));
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::vector<std::string_view> pieces;
  size_t at = 0;
  while (at < text.size()) {
    const int rc = pcre2_match(code, subject, text.size(), at, 0, match.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw Error(Operation("gpt2_pre_tokens"), fmt::format("PCRE2 failed at byte {}: {}", at, pcre2_message(rc)));
    const PCRE2_SIZE* span = pcre2_get_ovector_pointer(match.get());
    if (span[0] > at) pieces.push_back(text.substr(at, span[0] - at));  // bytes that are not UTF-8
    pieces.push_back(text.substr(span[0], span[1] - span[0]));
    at = span[1];
  }
  if (at < text.size()) pieces.push_back(text.substr(at));
  return pieces;
}

}  // namespace tinygpt::data
