#include "tinygpt/plot/token_label.hpp"

namespace tinygpt::plot {

std::string visible_token(std::string_view token) {
  std::string out;
  bool in_multibyte = false;  // inside a UTF-8 sequence whose lead byte already became '?'
  for (const char ch : token) {
    const auto byte = static_cast<unsigned char>(ch);
    const bool continuation = (byte & 0xC0u) == 0x80u;
    if (continuation && in_multibyte) continue;
    in_multibyte = byte >= 0xC0u;
    if (ch == ' ') {
      out += '_';
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (byte < 32 || byte > 126) {
      out += '?';
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace tinygpt::plot
