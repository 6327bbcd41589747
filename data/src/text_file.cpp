#include "tinygpt/data/text_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include <fmt/format.h>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/autograd/file_kind.hpp"
#include "tinygpt/data/utf8.hpp"

namespace tinygpt::data {
namespace {

std::string reason(int error) { return std::error_code(error, std::generic_category()).message(); }

class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::string read_text_file(const std::string& path, uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer before the check below refuses it.
  const Descriptor file(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (file.get() < 0) {
    const int error = errno;
    if (error == ENOENT) throw ValueError(Operation("read_text_file"),
                                          fmt::format("'{}' does not exist", path));
    throw ValueError(Operation("read_text_file"),
                     fmt::format("'{}' cannot be opened ({})", path, reason(error)));
  }
  struct stat info {};
  if (::fstat(file.get(), &info) != 0) {
    throw ValueError(Operation("read_text_file"), fmt::format("cannot stat '{}' ({})", path, reason(errno)));
  }
  if (!S_ISREG(info.st_mode)) {
    throw ValueError(Operation("read_text_file"),
                     fmt::format("'{}' is {}, not a text file", path, file_kind(info.st_mode)));
  }
  const auto too_large = [&](uint64_t bytes) {
    return ValueError(Operation("read_text_file"), fmt::format(
        "'{}' holds {} bytes or more, beyond the limit of {} (the text and its "
        "token ids are held in memory)", path, bytes, max_bytes));
  };
  if (static_cast<uint64_t>(info.st_size) > max_bytes) throw too_large(static_cast<uint64_t>(info.st_size));

  // Bounded even so: a file may grow while it is read, and /proc files report a size of 0.
  std::string text;
  text.reserve(static_cast<size_t>(info.st_size));
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(file.get(), chunk, sizeof chunk);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw ValueError(Operation("read_text_file"),
                       fmt::format("reading '{}' failed ({})", path, reason(errno)));
    }
    text.append(chunk, static_cast<size_t>(n));
    if (text.size() > max_bytes) throw too_large(text.size());
  }
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // a byte-order mark, not text
  if (text.empty()) throw ValueError(Operation("read_text_file"), fmt::format("'{}' is empty", path));
  try {
    check_utf8(text);
  } catch (const ValueError& e) {
    throw ValueError(Operation("read_text_file"), fmt::format("'{}' is not UTF-8 text ({})", path, e.what()));
  }
  return text;
}

}  // namespace tinygpt::data
