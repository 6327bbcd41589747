#pragma once
// The folder of heatmaps a model's report draws: each new set replaces the earlier one whole.
#include <string>
#include <vector>

#include "tinygpt/autograd/error.hpp"

namespace tinygpt::analysis {

// The heatmaps of the set drawn last in `dir` (as its record names them: layer<L>_head<H>.png,
// layer<L>.png, attribution_pos<P>.png, {encoder,decoder,cross}_layer<L>.png, and the circuit
// methods' composition.png, patching.png, patching_residual.png, prune_curve.png) removed, with the
// record and any drawing folder of a killed command; other files stay, and the folder goes if it
// is left empty.
void remove_heatmaps(const std::string& dir);

// Thrown by HeatmapSet::path() and commit() once a stop signal has come (io::interrupt_signal):
// the set is dropped whole, and the caller says that its pictures were skipped.
class DrawingInterrupted : public Error {
 public:
  explicit DrawingInterrupted(int signal);
  int signal() const { return signal_; }

 private:
  int signal_;
};

// A new set of heatmaps for `dir`, whole or not at all. The pictures are drawn into a hidden
// folder of this set's own inside `dir` (path() says where) and commit() moves them over the
// earlier set, then removes the earlier set's pictures it did not replace (a model with more
// layers or heads drew more) -- only those: `dir` records the names of the set drawn last, so a
// file tinygpt did not draw stays. Until then the earlier set is untouched: a disk that fills
// while the pictures are drawn, or any error, leaves it as it was, and the destructor removes the
// drawn pictures (and `dir`, if it made it). Sets drawn at once by several processes do not
// disturb each other. Refuses `dir` if it is a symbolic link: the pictures go into a real folder,
// never through a link.
class HeatmapSet {
 public:
  explicit HeatmapSet(std::string dir);
  HeatmapSet(const HeatmapSet&) = delete;
  HeatmapSet& operator=(const HeatmapSet&) = delete;
  ~HeatmapSet();

  // Where to draw the picture `name` (a name remove_heatmaps knows); it lands in `dir` at commit().
  std::string path(const std::string& name);
  // The pictures moved into `dir`; returns their final paths, in the order path() was asked.
  std::vector<std::string> commit();
  // The folder the pictures land in.
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_, stage_;
  std::vector<std::string> names_;
  bool made_dir_ = false, committed_ = false;
};

}  // namespace tinygpt::analysis
