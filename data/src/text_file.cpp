#include "tinygpt/data/text_file.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/data/utf8.hpp"

namespace tinygpt::data {

std::string read_text_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) {
    throw ValueError(fmt::format("read_text_file: '{}' does not exist", path));
  }
  if (fs::is_directory(status)) {
    throw ValueError(fmt::format("read_text_file: '{}' is a directory, not a text file", path));
  }

  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ValueError(
        fmt::format("read_text_file: '{}' cannot be opened ({})", path, std::strerror(errno)));
  }
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) {
    throw ValueError(
        fmt::format("read_text_file: reading '{}' failed ({})", path, std::strerror(errno)));
  }

  std::string text = content.str();
  if (text.empty()) throw ValueError(fmt::format("read_text_file: '{}' is empty", path));
  try {
    check_utf8(text);
  } catch (const ValueError& e) {
    throw ValueError(fmt::format("read_text_file: '{}' is not UTF-8 text ({})", path, e.what()));
  }
  return text;
}

}  // namespace tinygpt::data
