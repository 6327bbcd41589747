#pragma once
// How the families' commands (task_commands.hpp) name the request's settings in their errors.
#include <string>
#include <vector>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/data/tokenizer.hpp"

namespace tinygpt::analysis {

// A setting of the request the model cannot take: "<setting>: <why>", a SettingError (`why` may
// name other settings, as MessagePart(name, "")).
[[noreturn]] inline void refuse(const std::string& setting, std::vector<MessagePart> why) {
  why.insert(why.begin(), {MessagePart(setting, ""), ": "});
  throw SettingError(Operation("TaskCommands"), std::move(why));
}
// A setting's name in a message, without a value.
inline MessagePart setting(const std::string& name) { return MessagePart(name, ""); }

// `cause` about a setting (and its value): "<setting>: <cause>", a ValueError keeping its parts.
inline ValueError about(MessagePart setting, const Error& cause) {
  std::vector<MessagePart> parts = {std::move(setting), ": "};
  parts.insert(parts.end(), cause.parts().begin(), cause.parts().end());
  return ValueError(std::move(parts));
}

// The ids of a setting's text; an error names the setting and the character the model lacks.
inline std::vector<int64_t> encode_setting(const std::string& setting, const std::string& text,
                                           const data::Tokenizer& tokenizer) {
  try {
    return tokenizer.encode(text);
  } catch (const ValueError& e) {
    throw about(MessagePart(setting, ""), e);
  }
}

}  // namespace tinygpt::analysis
