#include "tinygpt/train/loss_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include <cerrno>
#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

#include "tinygpt/io/atomic_file.hpp"

namespace tinygpt::train {
using nlohmann::json;

LossLog LossLog::parse(const std::string& text, int64_t step, const std::string& source) {
  LossLog log;
  log.lines_ = LogRecords::parse(text, step, source).lines();
  return log;
}

LogRecords LossLog::records() const { return LogRecords::parse(text()); }

void LossLog::add(const StepStats& s) {
  const json entry = {{"step", s.step}, {"loss", s.loss}, {"lr", s.lr}, {"grad_norm", s.grad_norm},
                      {"tokens_per_s", s.seconds > 0 ? s.tokens / s.seconds : 0.0}};
  append(entry.dump());
}

void LossLog::append(std::string line) {
  if (file_ && (std::fputs((line + "\n").c_str(), file_.get()) < 0 || std::fflush(file_.get()) != 0)) {
    throw io::IOError(fmt::format("cannot append to {}: {}", path_, std::strerror(errno)));
  }
  lines_.push_back(std::move(line));
}

void LossLog::write_through(const std::string& path) {
  const std::string bytes = text();
  std::string current;
  bool exists = true;
  try {
    current = io::read_file(path);
  } catch (const io::IOError&) {
    exists = false;  // created below
  }
  const bool keeps_prefix = exists && current.size() >= bytes.size() &&
                            current.compare(0, bytes.size(), bytes) == 0;
  // Never through a symbolic link (a link planted as log.jsonl must not redirect the log).
  io::refuse_symlink(path);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (keeps_prefix ? 0 : O_TRUNC), 0666);
  file_.reset(fd < 0 ? nullptr : ::fdopen(fd, "r+"));
  if (fd >= 0 && !file_) ::close(fd);
  path_ = path;
  const bool written =
      file_ && (keeps_prefix ? ::ftruncate(::fileno(file_.get()), static_cast<off_t>(bytes.size())) == 0 &&
                                   std::fseek(file_.get(), 0, SEEK_END) == 0
                             : std::fputs(bytes.c_str(), file_.get()) >= 0 && std::fflush(file_.get()) == 0);
  if (!written) {
    const int error = errno;
    file_.reset();
    throw io::IOError(fmt::format("cannot write {}: {}", path, std::strerror(error)));
  }
}

void LossLog::add(const EvalStats& e, const std::string& extra_fields) {
  json entry = {{"step", e.step}, {"train_loss", e.train_loss},
                {"val_loss", std::isnan(e.val_loss) ? json(nullptr) : json(e.val_loss)}};
  if (!extra_fields.empty()) entry.update(json::parse(extra_fields));
  append(entry.dump());
}

std::string LossLog::text() const {
  std::string out;
  for (const auto& line : lines_) out += line + "\n";
  return out;
}

}  // namespace tinygpt::train
