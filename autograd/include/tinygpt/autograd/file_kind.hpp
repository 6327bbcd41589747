#pragma once
// What a file that is not a regular file is, in words, for the messages of every reader that
// refuses one (a checkpoint's files, a text file): one wording whichever reader meets it.
#include <sys/stat.h>

namespace tinygpt {

// Called for a file that is not a regular one (`mode` from stat).
inline const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace tinygpt
