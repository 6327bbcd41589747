// tinygpt prune: remove attention heads from a GPT checkpoint for good.
#include "commands.hpp"
#include "tinygpt/analysis/prune_checkpoint.hpp"
#include "tinygpt/io/atomic_file.hpp"

namespace tinygpt::cli {

void add_prune_command(CLI::App& app) {
  struct Flags {
    std::string model, heads, out;
    bool json = false, force = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand("prune", "Remove attention heads from a GPT checkpoint for good (smaller c_attn and c_proj)");
  cmd->add_option("--model", flags->model, "checkpoint directory of a GPT")->type_name("DIR")->required();
  cmd->add_option("--heads", flags->heads, "the heads to remove, LAYER.HEAD,...")->type_name("L.H,L.H")->required();
  cmd->add_option("--out", flags->out, "directory for the pruned model's files (config.json records pruned_heads)")
      ->type_name("DIR")->required();
  cmd->add_flag("--force", flags->force, "replace what --out holds (another model, other files); never a training run's folder or --model's");
  cmd->add_flag("--json", flags->json, "print the result as one JSON object: pruned_heads, parameters, loss");
  cmd->callback([flags] {
    const analysis::MethodOutput out = [&] {
      try {
        return analysis::prune_checkpoint(flags->model, flags->heads, flags->out, flags->force);
      } catch (const SettingError& e) {  // the head list or --out: the command line's mistake
        if (e.setting() == "out") throw UsageError(in_flag_terms(e));
        if (e.setting() != "pruned_heads") throw;
        throw UsageError("--heads: ", e);
      } catch (const io::IOError& e) {
        throw io::IOError(in_flag_terms(e));  // --out's refusal names --force
      }
    }();
    fmt::print("{}", flags->json ? out.json.dump(2) + "\n" : out.text);
  });
}

}  // namespace tinygpt::cli
