#include "tinygpt/train/log_records.hpp"

#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/io/atomic_file.hpp"

namespace tinygpt::train {
using nlohmann::json;
namespace {

constexpr int64_t kMaxIndex = 65535;

// Every field a reader of the log takes, of the type it takes it as; `where` is "<source> line N".
void check_fields(const json& record, const std::string& where) {
  const auto refuse = [&](const std::string& field, const json& value, const std::string& expected) {
    throw ValueError(fmt::format("{}: field '{}' is {}, not {}", where, field, value.type_name(), expected));
  };
  const auto number_or_null = [&](const std::string& field, const json& value) {
    if (!value.is_number() && !value.is_null()) refuse(field, value, "a number");
  };
  for (const auto& [key, value] : record.items()) {
    if (key == "heads" || key == "cross_attention") {  // a GPT's heads, an encoder-decoder's
      if (!value.is_array()) refuse(key, value, "an array");
      for (size_t i = 0; i < value.size(); ++i) {
        const json& head = value[i];
        const std::string at = fmt::format("{}[{}]", key, i);
        if (!head.is_object()) refuse(at, head, "an object");
        for (const auto& [name, field] : head.items()) {
          if (name == "layer" || name == "head") {  // indices: the CLI takes at most 64 of either
            if (!field.is_number_integer() || field.get<int64_t>() < 0 || field.get<int64_t>() > kMaxIndex) {
              refuse(at + "." + name, field, fmt::format("an integer in [0, {}]", kMaxIndex));
            }
          } else if (name == "role") {
            if (!field.is_string()) refuse(at + "." + name, field, "a string");
          } else {
            number_or_null(at + "." + name, field);
          }
        }
      }
    } else if (key == "in_context") {
      if (!value.is_object()) refuse(key, value, "an object");
      for (const auto& [name, field] : value.items()) number_or_null(key + "." + name, field);
    } else {
      number_or_null(key, value);
    }
  }
}

}  // namespace

LogRecords LogRecords::parse(const std::string& text, int64_t last_step, const std::string& source) {
  LogRecords log;
  std::istringstream in(text);
  int64_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    json record = json::parse(line, nullptr, false);
    if (record.is_discarded() || !record.is_object() || !record.contains("step") ||
        !record["step"].is_number() || !(record["step"].get<double>() >= 0) ||
        record["step"].get<double>() > static_cast<double>(last_step)) {
      continue;
    }
    check_fields(record, fmt::format("{} line {}", source, number));
    log.records_.push_back(std::move(record));
    log.lines_.push_back(std::move(line));
  }
  return log;
}

LogRecords LogRecords::read(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return {};
  return parse(io::read_file(path, io::kMaxLogBytes), INT64_MAX, path);
}

std::vector<LogPoint> LogRecords::series(const char* key) const {
  std::vector<LogPoint> out;
  for (const json& r : records_) {
    const auto it = r.find(key);
    if (it != r.end() && it->is_number()) out.push_back({r["step"].get<double>(), it->get<double>()});
  }
  return out;
}

std::vector<LogPoint> LogRecords::step_losses() const { return series("loss"); }
std::vector<LogPoint> LogRecords::eval_train_losses() const { return series("train_loss"); }
std::vector<LogPoint> LogRecords::val_losses() const { return series("val_loss"); }

std::vector<json> LogRecords::head_records() const {
  std::vector<json> out;
  for (const json& r : records_) {
    if (r.contains("heads") && r["heads"].is_array()) out.push_back(r);
  }
  return out;
}

}  // namespace tinygpt::train
