#pragma once
// Token text as the plots show it. The plot font is ASCII-only and whitespace would be invisible,
// so: space -> '_', newline -> "\n", tab -> "\t", carriage return -> "\r", any other control
// character or non-ASCII code point -> '?'. (The character-level corpora tinygpt trains on have
// no '_'; a lone '|' for newline would look like 'l' in the plot font.)
#include <string>
#include <string_view>

namespace tinygpt::plot {

// `token` is UTF-8; the result is printable ASCII.
std::string visible_token(std::string_view token);

}  // namespace tinygpt::plot
