#include <algorithm>
#include <filesystem>
#include <regex>

#include <fmt/format.h>

#include "tinygpt/analysis/heatmap_set.hpp"
#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/io/commit.hpp"

namespace tinygpt::analysis {
namespace fs = std::filesystem;
namespace {

// Inside the heatmaps' folder, where a set is drawn before it replaces the one there.
constexpr const char* kStageDir = ".tinygpt-drawing";

// The pictures this library draws in `dir`, except those named in `keep`, removed.
void remove_drawn(const std::string& dir, const std::vector<std::string>& keep) {
  static const std::regex kDrawn(R"(((encoder_|decoder_|cross_)?layer\d+(_head\d+)?|attribution_pos\d+)\.png)");
  std::error_code ec;
  if (fs::is_symlink(dir, ec) || !fs::is_directory(dir, ec)) return;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file(ec) && std::regex_match(name, kDrawn) &&
        std::find(keep.begin(), keep.end(), name) == keep.end()) {
      fs::remove(entry.path(), ec);
    }
  }
}

void stop_if_interrupted() {
  if (const int signal = io::interrupt_signal()) throw DrawingInterrupted(signal);
}

}  // namespace

DrawingInterrupted::DrawingInterrupted(int signal)
    : Error(fmt::format("interrupted by signal {} while drawing the pictures", signal)), signal_(signal) {}

void remove_heatmaps(const std::string& dir) {
  remove_drawn(dir, {});
  std::error_code ec;
  if (!fs::is_symlink(dir, ec)) fs::remove_all(fs::path(dir) / kStageDir, ec);  // a killed command's
  if (fs::is_directory(fs::symlink_status(dir, ec)) && fs::is_empty(dir, ec)) fs::remove(dir, ec);
}

HeatmapSet::HeatmapSet(std::string dir) : dir_(std::move(dir)), stage_((fs::path(dir_) / kStageDir).string()) {
  io::refuse_symlink(dir_);
  made_dir_ = io::create_directory(dir_, "heatmap directory");
  io::remove_all(stage_, "heatmap folder");  // what a killed command was drawing
  io::create_directory(stage_, "heatmap folder");
}

HeatmapSet::~HeatmapSet() {
  std::error_code ec;
  fs::remove_all(stage_, ec);
  if (made_dir_ && !committed_) fs::remove(dir_, ec);
}

std::string HeatmapSet::path(const std::string& name) {
  stop_if_interrupted();
  names_.push_back(name);
  return (fs::path(stage_) / name).string();
}

std::vector<std::string> HeatmapSet::commit() {
  stop_if_interrupted();
  // Each rename replaces one whole picture by another; only then do the earlier set's extra
  // pictures go, so no moment shows a picture half written.
  std::vector<std::string> paths;
  for (const std::string& name : names_) {
    paths.push_back((fs::path(dir_) / name).string());
    std::error_code ec;
    fs::rename(fs::path(stage_) / name, paths.back(), ec);
    if (ec) throw io::IOError(fmt::format("cannot write '{}': {}", paths.back(), ec.message()));
  }
  committed_ = true;
  remove_drawn(dir_, names_);
  io::remove_all(stage_, "heatmap folder");
  io::sync_directory(dir_);
  return paths;
}

}  // namespace tinygpt::analysis
