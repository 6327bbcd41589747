// tinygpt heads: score every attention head's role and draw its attention pattern; optionally
// remove heads (ablation) and attribute one prediction to the tokens before it.
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <utility>

#include "commands.hpp"
#include "tinygpt/analysis/run_report.hpp"
#include "tinygpt/analysis/task_commands.hpp"
#include "tinygpt/autograd/threads.hpp"
#include "tinygpt/heads/ablation.hpp"
#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/train/checkpoint.hpp"
#include "tinygpt/train/run.hpp"

namespace tinygpt::cli {
namespace {

namespace fs = std::filesystem;

struct HeadsFlags {
  std::string model;
  std::string text;
  std::string out;
  std::string html;
  std::string mask_view;
  bool json = false;
  int threads = 0;
  std::string ablate = "zero";  // also when given without a mode
  std::string ablate_heads;     // "L.H,L.H"
  int64_t attribute = -1;       // query position, -1 = none
  int64_t pairs = 500;          // an encoder-decoder's held-out pairs to score on
  bool composition = false;
  bool importance = false;
  bool patch = false;
  bool counterfactual = false;
  bool prune_curve = false;
  double epsilon = heads::CounterfactualOptions{}.epsilon;
};

// --html names the page's file, which the page replaces: never a file of a checkpoint, by its
// name or through a link to it.
void check_page_target(const std::string& html) {
  std::error_code ec;
  const fs::path target = fs::is_symlink(html, ec) ? fs::canonical(html, ec) : fs::path(html);
  if (train::is_checkpoint_file(html) || (!ec && train::is_checkpoint_file(target.string()))) {
    throw UsageError(fmt::format("--html {} is a file of the checkpoint in {}; name another file",
                                 html, target.parent_path().string()));
  }
}

// Nor the text the model trained on (by any path or link to it, or another name of its bytes):
// the run could never be resumed or probed on it again. A path through a folder that does not
// exist ("x/../text.txt") is compared as the system would resolve it once written.
void check_page_not_data(const std::string& html, const std::string& model) {
  const std::optional<train::RunState> run = train::trained_on(model);
  std::error_code ec;
  if (!run || !fs::is_regular_file(run->data_source, ec)) return;
  if (fs::equivalent(html, run->data_source, ec) ||
      fs::weakly_canonical(html, ec) == fs::weakly_canonical(run->data_source, ec)) {
    throw UsageError(fmt::format("--html {} is the text the model in {} trained on ({}); name "
                                 "another file", html, model, run->data_source));
  }
}

// --ablate-heads as heads::parse_head_list reads it, refused while parsing when no model could
// have those heads ("x", "1.", "0.1,0.1"); which heads the model has is checked once it is loaded.
CLI::Validator head_list_syntax() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        constexpr int64_t kAny = std::numeric_limits<int64_t>::max();
        try {
          heads::parse_head_list(text, kAny, kAny);
        } catch (const ValueError& e) {
          return e.in_terms();
        }
        return "";
      },
      "");
}

// <model>/heads, or "" (no pictures, said once on stderr) when the checkpoint's folder cannot
// be written: the scores and the page need no pictures.
std::string default_heatmap_dir(const std::string& model) {
  try {
    io::check_writable(model);
  } catch (const io::IOError&) {
    fmt::print(stderr, "tinygpt: note: {} is not writable, so no heatmaps are drawn; pass --out "
                       "DIR to draw them elsewhere\n", model);
    return "";
  }
  return (fs::path(model) / analysis::kHeatmapDir).string();
}

// draw(), ended by a stop signal while it draws the heatmaps into `dir`: none are written then.
// Without a `dir` nothing is drawn, and a signal ends the command at once as usual.
void draw_or_stop(const std::string& dir, const std::function<void()>& draw) {
  if (dir.empty()) return draw();
  if (const int signal = draw_unless_stopped(draw)) {
    fmt::print(stderr, "tinygpt: interrupted while drawing the heatmaps; none were written to {} "
                       "(an earlier set there is as it was)\n", dir);
    throw Interrupted{signal};
  }
}

// The flags of a language model's head tools and an encoder-decoder's, by their settings'
// names: a family refuses those given that it does not take.
constexpr std::pair<const char*, const char*> kFamilyFlags[] = {
    {"--text", "text"},         {"--ablate-heads", "ablate_heads"}, {"--attribute", "attribute"},
    {"--composition", "composition"}, {"--importance", "importance"}, {"--patch", "patch"},
    {"--counterfactual", "counterfactual"}, {"--prune-curve", "prune_curve"}, {"--pairs", "pairs"}};

analysis::HeadsRequest heads_request(const HeadsFlags& f, const CLI::App& cmd) {
  analysis::HeadsRequest r;
  r.text = f.text;
  r.heatmap_dir = f.out.empty() ? default_heatmap_dir(f.model) : f.out;
  r.html = f.html;
  r.mask_view_dir = f.mask_view;
  r.json = f.json;
  r.ablate_each = cmd.count("--ablate") > 0;
  r.ablate = f.ablate;
  r.ablate_heads = f.ablate_heads;
  r.attribute = f.attribute;
  r.pairs = f.pairs;
  r.composition = f.composition;
  r.importance = f.importance;
  r.patch = f.patch;
  r.counterfactual = f.counterfactual;
  r.prune_curve = f.prune_curve;
  r.epsilon = f.epsilon;
  for (const auto& [flag, setting] : kFamilyFlags) {
    if (cmd.count(flag) > 0) r.given.insert(setting);
  }
  r.run_text = [](const train::RunState& state, const char* setting) {
    return read_run_text(state, flag_of(setting).c_str());
  };
  r.draw = [dir = r.heatmap_dir](const std::function<void()>& draw) { draw_or_stop(dir, draw); };
  return r;
}

}  // namespace

void add_heads_command(CLI::App& app) {
  auto flags = std::make_shared<HeadsFlags>();
  CLI::App* cmd = app.add_subcommand("heads", "Score each attention head's role and draw its attention");
  set_memory_advice(*cmd, "lower --pairs (an encoder-decoder's) or pass a shorter --text, or "
                          "look at a smaller model than --model's");
  cmd->add_option("--model", flags->model, "checkpoint directory written by tinygpt train")->type_name("DIR")->required();
  cmd->add_option("--text", flags->text, "probe text (default: windows of the run's own data)");
  cmd->add_option("--out", flags->out, "directory for the heatmaps (default: <model>/heads)")->type_name("DIR");
  cmd->add_flag("--json", flags->json, "print the report as one JSON object instead of the table: heads (scores and role of each), in_context (first/second copy loss), and what --ablate-heads or --attribute add; an encoder's: heads (with copy scores) and copy (the second-copy masked accuracy with and without its copy heads)");
  cmd->add_option("--html", flags->html,
                  "also write the attention explorer, one self-contained HTML page, to this file (an "
                  "encoder-decoder's shows the first held-out pair with its cross-attention; an "
                  "encoder's, bidirectional, has a [MASK] view: pick a masked position of --text (or, "
                  "without [MASK]s in it, of every seventh character masked) and see every head's "
                  "attention row from it and the model's guesses there)")
      ->type_name("FILE");
  cmd->add_option("--mask-view", flags->mask_view,
                  "an encoder: for each [MASK] of --text, draw DIR/mask_<position>.png, every head's "
                  "attention row from it (a row per head, layer by layer) with the model's guesses; "
                  "--json adds \"mask_view\" (the framed tokens and, per mask, its position, top "
                  "guesses and each head's row)")
      ->type_name("DIR");
  cmd->add_option("--ablate", flags->ablate,
                  "remove each head in turn (zero: its output set to 0; mean: to its mean output "
                  "on the text) and report the in-context ratio and text loss without it; an encoder's: "
                  "the second-copy masked accuracy without it, zero only)")
      ->expected(0, 1)->type_name("[zero|mean]")
      ->check(CLI::IsMember({"zero", "mean"}).description(""))->capture_default_str();
  cmd->add_option("--ablate-heads", flags->ablate_heads,
                  "remove these heads together (LAYER.HEAD,...; mode from --ablate, default zero)")
      ->type_name("L.H,L.H")->check(head_list_syntax());
  cmd->add_option("--attribute", flags->attribute,
                  "for this query position of the picture text (from 1): raw attention per layer, "
                  "attention rollout and gradient x input of each earlier token (printed and drawn)")
      ->check(integer_in(1, std::numeric_limits<int64_t>::max()));
  cmd->add_option("--pairs", flags->pairs,
                  "an encoder-decoder: score its heads (and --ablate its cross-attention heads) on "
                  "this many held-out pairs of its run's data")
      ->check(integer_in(1, int64_t{1} << 30))->capture_default_str();
  cmd->add_flag("--composition", flags->composition,
                "Q-, K- and V-composition of every head pair from the weights, beside random "
                "matrices of the same shapes (JSON \"composition\", picture composition.png; with --html the "
                "page draws the top pairs as arrows between heads)");
  cmd->add_flag("--importance", flags->importance,
                "each head's importance: mean |dL/dgate| of a gate on its output over the probe "
                "windows and over the in-context probe, raw and normalised per layer (JSON "
                "\"importance\", \"importance_in_context\")");
  cmd->add_flag("--patch", flags->patch,
                "activation patching from random sequences said twice into the same second copies "
                "after other first copies: recovery per head, per residual layer and position band, "
                "and along the previous-token -> induction paths (JSON \"patching\", "
                "\"residual_patching\", \"path_patching\"; pictures patching*.png)");
  cmd->add_flag("--counterfactual", flags->counterfactual,
                "replace each head's attention by a uniform, a permuted and an adversarial pattern "
                "(the farthest in Jensen-Shannon divergence that moves no prediction by more than "
                "--epsilon in total variation) (JSON \"counterfactual\")");
  cmd->add_option("--epsilon", flags->epsilon,
                  "--counterfactual: how far in total variation the adversarial pattern may move a prediction")
      ->check(CLI::Range(1e-6, 1.0))->capture_default_str();
  cmd->add_flag("--prune-curve", flags->prune_curve,
                "held-out loss and in-context ratio against the number of heads removed, least "
                "important first, least ablation effect first and at random (JSON \"prune_curve\", "
                "picture prune_curve.png)");
  add_threads_flag(*cmd, flags->threads);
  cmd->callback([flags, cmd] {
    set_num_threads(flags->threads);
    if (!flags->html.empty()) check_page_target(flags->html);
    const std::unique_ptr<train::Task> task = train::load_task(flags->model);
    if (!flags->html.empty()) check_page_not_data(flags->html, flags->model);
    const std::unique_ptr<analysis::TaskCommands> commands = analysis::commands_for(*task, flags->model);
    const analysis::HeadsRequest request = heads_request(*flags, *cmd);
    const nlohmann::json report = in_flag_terms_of([&] { return commands->heads(request); });
    if (flags->json) fmt::print("{}\n", json_text(report, 2));
  });
}

}  // namespace tinygpt::cli
