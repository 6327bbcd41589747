#pragma once
// Reading a training text from disk, with errors a user can act on: every failure says which
// path and why (missing, not a regular file, unreadable, too large, empty, or not UTF-8 such as
// a binary file).
#include <cstdint>
#include <string>

namespace tinygpt::data {

// The largest text read by default: 512 MiB. Every character becomes an 8-byte token id, so a
// text this size already needs some 4.5 GB of memory.
inline constexpr uint64_t kMaxTextBytes = uint64_t{512} << 20;

// The whole file as UTF-8 bytes, unchanged but for a UTF-8 byte-order mark at its start, which
// is dropped (it marks the encoding; it is not a character of the text). Line ends are kept as
// they are: a CRLF file's \r is a character like any other. Throws ValueError
// naming the path when the file is missing, is not a regular file (a directory, a FIFO, a device
// such as /dev/zero: endless streams are refused before anything is read), cannot be read, holds
// more than `max_bytes`, is empty, or is not valid UTF-8 (the message then also gives the byte
// offset of the first bad sequence).
std::string read_text_file(const std::string& path, uint64_t max_bytes = kMaxTextBytes);

}  // namespace tinygpt::data
