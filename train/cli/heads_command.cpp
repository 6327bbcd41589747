// tinygpt heads: score every attention head's role and draw its attention pattern.
#include <cctype>
#include <filesystem>

#include "commands.hpp"
#include "tinygpt/autograd/threads.hpp"
#include "tinygpt/data/dataset.hpp"
#include "tinygpt/data/toy_corpus.hpp"
#include "tinygpt/io/commit.hpp"
#include "tinygpt/train/checkpoint.hpp"

namespace tinygpt::cli {
namespace {

namespace fs = std::filesystem;

struct HeadsFlags {
  std::string model;
  std::string text;
  std::string out;
  bool json = false;
  int threads = 0;
};

// Windows of the text a run trained on (its validation split when it has one).
std::vector<std::vector<int64_t>> probe_windows(const std::string& source,
                                                const data::CharTokenizer& tokenizer,
                                                int64_t block, int64_t count) {
  const data::TextDataset dataset = make_dataset(load_text(source), source, tokenizer, block, 0.1);
  const data::Split split = dataset.num_windows(data::Split::val) > 0 ? data::Split::val : data::Split::train;
  const int64_t windows = dataset.num_windows(split);
  const int64_t stride = std::max<int64_t>(1, windows / count);
  std::vector<std::vector<int64_t>> out;
  for (int64_t w = 0; w < windows && static_cast<int64_t>(out.size()) < count; w += stride) {
    const Tensor inputs = dataset.window_batch(split, w, 1).inputs;  // (1,T)
    out.emplace_back(inputs.data<int64_t>(), inputs.data<int64_t>() + inputs.numel());
  }
  return out;
}

}  // namespace

HeadProbeSet make_probes(const data::CharTokenizer& tokenizer, int64_t block,
                         const std::string& text, const std::string& data_source) {
  HeadProbeSet set;
  if (!text.empty()) {
    std::vector<int64_t> ids = encode_flag("--text", text, tokenizer);
    if (static_cast<int64_t>(ids.size()) > block) ids.resize(static_cast<size_t>(block));
    if (ids.size() < 2) throw ValueError("--text needs at least two characters");
    set.probes.texts = {ids};
    set.picture = ids;
  } else {
    set.probes.texts = probe_windows(data_source, tokenizer, block, 16);
    if (set.probes.texts.empty()) {
      throw ValueError(fmt::format("{} is too short to probe the heads; pass --text", data_source));
    }
    // A document of the toy corpus shows its structure best; other texts show their first window.
    set.picture = data_source == kToyCorpus ? tokenizer.encode(data::toy_probe_text(1))
                                            : set.probes.texts[0];
    const auto longest = static_cast<size_t>(std::min<int64_t>(64, block));  // legible pictures
    if (set.picture.size() > longest) set.picture.resize(longest);
  }
  // Random sequences for induction are drawn from the letters and digits of the vocabulary
  // (the characters random spans are made of in ordinary text), or all of it if it has few.
  for (int64_t id = 0; id < tokenizer.vocab_size(); ++id) {
    const std::string token = tokenizer.token(id);
    if (token.size() == 1 && std::isalnum(static_cast<unsigned char>(token[0]))) {
      set.probes.alphabet.push_back(id);
    }
  }
  if (set.probes.alphabet.size() < 8) {
    set.probes.alphabet.clear();
    for (int64_t id = 0; id < tokenizer.vocab_size(); ++id) set.probes.alphabet.push_back(id);
  }
  return set;
}

void add_heads_command(CLI::App& app) {
  auto flags = std::make_shared<HeadsFlags>();
  CLI::App* cmd = app.add_subcommand("heads", "Score each attention head's role and draw its attention");
  cmd->add_option("--model", flags->model, "checkpoint directory written by tinygpt train")->required();
  cmd->add_option("--text", flags->text, "probe text (default: windows of the run's own data)");
  cmd->add_option("--out", flags->out, "directory for the heatmaps (default: <model>/heads)");
  cmd->add_flag("--json", flags->json, "print one JSON object per head instead of the table");
  cmd->add_option("--threads", flags->threads, "threads for OpenMP and OpenBLAS (0: all cores)")->check(integer_in(0, 256));
  cmd->callback([flags] {
    set_num_threads(flags->threads);
    train::LoadedModel loaded = train::load_model(flags->model);
    // The induction probe is a random sequence of at least 2 characters, repeated.
    if (loaded.config.block_size < 4) {
      throw ValueError(fmt::format(
          "{} has a context of {}; the head probes need at least 4 characters", flags->model,
          loaded.config.block_size));
    }
    std::string source;
    if (flags->text.empty()) {
      if (!io::CommittedFiles(flags->model).contains("trainer_state.json")) {
        throw ValueError(fmt::format("{} does not say what it was trained on; pass --text", flags->model));
      }
      source = train::load_run_state(flags->model).data_source;
    }
    const HeadProbeSet set = make_probes(loaded.tokenizer, loaded.config.block_size, flags->text, source);
    const std::string out = flags->out.empty() ? (fs::path(flags->model) / "heads").string() : flags->out;
    show_heads(*loaded.model, loaded.tokenizer, set, out, flags->json);
  });
}

}  // namespace tinygpt::cli
