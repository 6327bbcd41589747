#pragma once
// Reading a training text from disk, with errors a user can act on: every failure says which
// path and why (missing, a directory, unreadable, empty, or not UTF-8 such as a binary file).
#include <string>

namespace tinygpt::data {

// The whole file as UTF-8 bytes, unchanged (no newline or BOM handling). Throws ValueError
// naming the path when the file is missing, is a directory, cannot be read, is empty, or is not
// valid UTF-8 (the message then also gives the byte offset of the first bad sequence).
std::string read_text_file(const std::string& path);

}  // namespace tinygpt::data
