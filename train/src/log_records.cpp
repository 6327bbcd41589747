#include "tinygpt/train/log_records.hpp"

#include <fstream>
#include <sstream>

namespace tinygpt::train {
using nlohmann::json;

LogRecords LogRecords::parse(const std::string& text, int64_t last_step) {
  LogRecords log;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    json record = json::parse(line, nullptr, false);
    if (record.is_discarded() || !record.is_object() || !record.contains("step") ||
        !record["step"].is_number() || record["step"].get<double>() > static_cast<double>(last_step)) {
      continue;
    }
    log.records_.push_back(std::move(record));
    log.lines_.push_back(std::move(line));
  }
  return log;
}

LogRecords LogRecords::read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str());
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
