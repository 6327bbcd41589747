#pragma once
// Exceptions thrown by tinygpt. Every message names the operation and the shapes involved,
// so a bad call can be fixed from the message alone.
#include <fmt/format.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tinygpt {

// The library's name for the class or function that refused a call ("GPTConfig",
// "CharTokenizer::encode"): a C++ caller's clue to where to look, which a program that shows
// errors to its own users (the CLI) leaves out.
struct Operation {
  explicit Operation(std::string name) : name(std::move(name)) {}
  std::string name;
};

// One piece of an error's message: text, the operation that raised it (written "name: "), or a
// setting the message names together with its value (written "name value"), which a program can
// call by its own name for it (a flag) without reading the text.
struct MessagePart {
  enum class Kind { text, operation, setting };
  MessagePart(std::string text) : kind(Kind::text), text(std::move(text)) {}  // NOLINT: implicit
  MessagePart(const char* text) : MessagePart(std::string(text)) {}           // NOLINT: implicit
  MessagePart(Operation operation) : kind(Kind::operation), text(std::move(operation.name)) {}  // NOLINT
  MessagePart(std::string setting, std::string value)
      : kind(Kind::setting), text(std::move(setting)), value(std::move(value)) {}

  Kind kind;
  std::string text;   // the text, the operation's name or the setting's name
  std::string value;  // a setting's value as the message writes it
};

// A setting and its value as a message names them: named("n_head", 2) reads "n_head 2";
// a setting named without a value (MessagePart("source", "")) reads "source".
template <class T>
MessagePart named(std::string setting, const T& value) {
  return MessagePart(std::move(setting), fmt::format("{}", value));
}

// A setting's name as a program shows it (the CLI: its flag); SettingNaming() keeps the library's.
using SettingNaming = std::function<std::string(const std::string& setting)>;

// Base of everything tinygpt throws on a bad call. Its message is kept as parts, so that what()
// reads in the library's terms while a program can drop the operations and rename the settings.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : Error(std::vector<MessagePart>{message}) {}
  Error(Operation operation, const std::string& detail)
      : Error(std::vector<MessagePart>{std::move(operation), detail}) {}
  explicit Error(std::vector<MessagePart> parts)
      : std::runtime_error(written(parts, SettingNaming(), true)),
        parts_(std::make_shared<const std::vector<MessagePart>>(std::move(parts))) {}
  // `cause` inside a larger message ("<before><cause><after>"), its parts kept.
  Error(const std::string& before, const Error& cause, const std::string& after = "")
      : Error(around(before, cause.parts(), after)) {}

  const std::vector<MessagePart>& parts() const { return *parts_; }
  // The operation the message starts with, "" when it names none.
  std::string operation() const {
    const bool named = !parts_->empty() && parts_->front().kind == MessagePart::Kind::operation;
    return named ? parts_->front().text : "";
  }
  // What went wrong: the message without its leading operation.
  std::string detail() const {
    if (operation().empty()) return what();
    return written({parts_->begin() + 1, parts_->end()}, SettingNaming(), true);
  }
  // The message for a reader of the program rather than of the library: no operation, each
  // setting named by `naming` (the library's name where `naming` is empty).
  std::string in_terms(const SettingNaming& naming = SettingNaming()) const {
    return written(*parts_, naming, false);
  }

 private:
  static std::string written(const std::vector<MessagePart>& parts, const SettingNaming& naming,
                             bool with_operations) {
    std::string out;
    for (const MessagePart& part : parts) {
      switch (part.kind) {
        case MessagePart::Kind::text: out += part.text; break;
        case MessagePart::Kind::operation:
          out += with_operations && !part.text.empty() ? part.text + ": " : "";
          break;
        case MessagePart::Kind::setting:
          out += (naming ? naming(part.text) : part.text) + (part.value.empty() ? "" : " " + part.value);
          break;
      }
    }
    return out;
  }
  static std::vector<MessagePart> around(const std::string& before,
                                         const std::vector<MessagePart>& parts,
                                         const std::string& after) {
    std::vector<MessagePart> out{before};
    out.insert(out.end(), parts.begin(), parts.end());
    out.emplace_back(after);
    return out;
  }

  // Shared, so that copying an exception (as throw may) cannot throw.
  std::shared_ptr<const std::vector<MessagePart>> parts_;
};

// Incompatible shapes, impossible broadcasts, bad axes.
class ShapeError : public Error {
 public:
  using Error::Error;
};

// An index, token id or position outside its valid range.
class IndexError : public Error {
 public:
  using Error::Error;
};

// Misuse of the tape: backward twice through a freed graph, backward on a non-scalar
// without a gradient, a custom op whose backward returns a gradient of the wrong shape.
class GraphError : public Error {
 public:
  using Error::Error;
};

// A value outside what an op accepts (wrong dtype, p outside [0,1), ...).
class ValueError : public Error {
 public:
  using Error::Error;
};

// A value of a setting the caller chose (a model's shape, a training option) that the library
// refuses. setting() is the library's name for it ("n_head") and value() its value as text, so a
// program can name the setting in its own terms; what() stays in the library's.
class SettingError : public ValueError {
 public:
  // A message that names the setting, and any other it mentions, by named() parts: the first of
  // them is the setting refused.
  SettingError(Operation operation, std::vector<MessagePart> message)
      : ValueError(with_operation(std::move(operation), std::move(message))) {
    for (const MessagePart& part : parts()) {
      if (part.kind != MessagePart::Kind::setting) continue;
      setting_ = part.text;
      value_ = part.value;
      break;
    }
  }
  // A message in plain text about `setting`, whose value is `value` ("dropout must be in [0, 1),
  // got 1.5").
  template <class T>
  SettingError(Operation operation, std::string setting, const T& value, const std::string& message)
      : ValueError(std::move(operation), message),
        setting_(std::move(setting)), value_(fmt::format("{}", value)) {}

  const std::string& setting() const { return setting_; }
  const std::string& value() const { return value_; }

 private:
  static std::vector<MessagePart> with_operation(Operation operation, std::vector<MessagePart> message) {
    message.insert(message.begin(), MessagePart(std::move(operation)));
    return message;
  }

  std::string setting_, value_;
};

// `text` as a message may quote it: whole when short, else its first `max` bytes (cut at a UTF-8
// character boundary) and "... (N bytes)", so that a hostile 100 MB value still makes a short
// one-line message.
std::string excerpt(std::string_view text, size_t max = 60);

}  // namespace tinygpt
