#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>
#include <system_error>

#include <fmt/format.h>

#include "tinygpt/analysis/heatmap_set.hpp"
#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/io/commit.hpp"

namespace tinygpt::analysis {
namespace fs = std::filesystem;
namespace {

// Inside the heatmaps' folder, where a set is drawn before it replaces the one there: a folder of
// each set's own, named after its process, so that two commands drawing for one run at once
// (heads while train ends, or two heads) never draw into, or clear, each other's.
constexpr const char* kStagePrefix = ".tinygpt-drawing";
// Beside the pictures, the names of the set drawn last: the next set removes those it does not
// replace, and nothing else, so a user's file with a picture's name stays.
constexpr const char* kRecord = ".tinygpt-heatmaps";

bool is_picture_name(const std::string& name) {
  static const std::regex kDrawn(R"(((encoder_|decoder_|cross_)?layer\d+(_head\d+)?|attribution_pos\d+|)"
                                 R"(composition|patching|patching_residual|prune_curve)\.png)");
  return std::regex_match(name, kDrawn);
}

// The pictures `dir`'s record names (only picture names: a damaged record names nothing else).
std::vector<std::string> recorded_pictures(const std::string& dir) {
  std::vector<std::string> names;
  std::string text;
  try {
    text = io::read_file((fs::path(dir) / kRecord).string());
  } catch (const io::IOError&) {
    return names;  // none drawn yet
  }
  std::istringstream lines(text);
  for (std::string name; std::getline(lines, name);) {
    if (is_picture_name(name)) names.push_back(name);
  }
  return names;
}

// The pictures of the set drawn last in `dir`, except those named in `keep`, removed.
void remove_drawn(const std::string& dir, const std::vector<std::string>& keep) {
  std::error_code ec;
  if (fs::is_symlink(dir, ec) || !fs::is_directory(dir, ec)) return;
  for (const std::string& name : recorded_pictures(dir)) {
    const fs::path picture = fs::path(dir) / name;
    if (std::find(keep.begin(), keep.end(), name) == keep.end() &&
        fs::is_regular_file(fs::symlink_status(picture, ec))) {
      fs::remove(picture, ec);
    }
  }
}

// The drawing folders in `dir` of processes that are gone (killed while they drew).
void remove_abandoned_stages(const std::string& dir) {
  std::error_code ec;
  if (fs::is_symlink(dir, ec)) return;
  const std::string prefix = std::string(kStagePrefix) + "-";
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kStagePrefix, 0) != 0) continue;
    // ".tinygpt-drawing-<pid>-<n>"; an unnumbered one is an older tinygpt's
    const long pid = name.rfind(prefix, 0) == 0 ? std::strtol(name.c_str() + prefix.size(), nullptr, 10) : 0;
    if (pid <= 0 || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)) fs::remove_all(entry.path(), ec);
  }
}

// A new drawing folder of this process in `dir`, created exclusively.
std::string create_stage(const std::string& dir) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0;; ++attempt) {
    const std::string stage =
        (fs::path(dir) / fmt::format("{}-{}-{}", kStagePrefix, ::getpid(), counter.fetch_add(1))).string();
    if (::mkdir(stage.c_str(), 0777) == 0) return stage;
    const int error = errno;
    if (attempt < 100 && error == ENOENT) {  // a run clearing its report removed the empty folder
      io::create_directory(dir, "heatmap directory");
    } else if (attempt == 100 || error != EEXIST) {
      throw io::IOError(fmt::format("cannot create heatmap folder {}: {}", stage,
                                    std::error_code(error, std::generic_category()).message()));
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
  if (fs::is_directory(fs::symlink_status(dir, ec))) {
    fs::remove(fs::path(dir) / kRecord, ec);
    remove_abandoned_stages(dir);
    if (fs::is_empty(dir, ec)) fs::remove(dir, ec);
  }
}

HeatmapSet::HeatmapSet(std::string dir) : dir_(std::move(dir)) {
  io::refuse_symlink(dir_);
  made_dir_ = io::create_directory(dir_, "heatmap directory");
  remove_abandoned_stages(dir_);
  stage_ = create_stage(dir_);
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
  std::string record;
  for (const std::string& name : names_) record += name + "\n";
  io::write_file_atomic((fs::path(dir_) / kRecord).string(), record);
  io::remove_all(stage_, "heatmap folder");
  io::sync_directory(dir_);
  return paths;
}

}  // namespace tinygpt::analysis
