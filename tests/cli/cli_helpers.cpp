// The checks behind every CLI error test, compiled once: libstdc++'s <regex> is heavy to build
// and, in the sanitizer build, warns (falsely) in every file that instantiates it.
#include <regex>

#include "cli_helpers.hpp"

namespace tinygpt::testing {

void check_in_user_terms(const std::string& line) {
  static const std::regex internal_name(
      R"(\b[A-Za-z]\w*::\w+|(^|: )([a-z]+(_[a-z]+)+|generate|ablation|attribute|optimizer|train): |\b(GPTConfig|TrainOptions|TextDataset|PairDataset|CharTokenizer)\b|\b(block_size|val_fraction) [0-9])");
  CHECK_FALSE(std::regex_search(line, internal_name));
}

void check_one_line_error(const CliResult& r, const std::vector<std::string>& fragments) {
  INFO(r.describe());
  REQUIRE_FALSE(r.timed_out);
  REQUIRE(r.signal == 0);
  CHECK(r.exit_code != 0);
  CHECK(r.out.empty());
  const std::vector<std::string> lines = r.err_lines();
  REQUIRE(lines.size() == 1);
  CHECK(r.err.back() == '\n');
  CHECK(lines[0].rfind("tinygpt: error: ", 0) == 0);
  for (const auto& fragment : fragments) CHECK_THAT(lines[0], Catch::Matchers::Contains(fragment));
  check_in_user_terms(lines[0]);
}

}  // namespace tinygpt::testing
