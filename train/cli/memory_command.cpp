// tinygpt memory: what a transformer of any shape holds in memory (parameters, activations,
// attention scores, KV cache), by the formulas the training memory estimate uses.
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tinygpt/io/atomic_file.hpp"

namespace tinygpt::cli {
namespace {

struct MemoryFlags {
  int64_t layers = 2, heads = 8, kv_heads = 0, d_model = 64, d_head = 0, block = 64, batch = 1, vocab = 0;
  std::string dtype = "f32", model, preset;
  bool json = false;
};

// The shape to start from: a preset's, a checkpoint's config.json, or the flags' defaults.
train::MemoryShape base_shape(const MemoryFlags& f) {
  if (!f.preset.empty()) {
    for (const train::MemoryPreset& p : train::memory_presets()) {
      if (p.name == f.preset) return p.shape;
    }
  }
  if (!f.model.empty()) {
    const std::string path = f.model + "/config.json";
    return train::memory_shape(train::config_from_json(io::read_file(path), path), 1);
  }
  return train::MemoryShape{};  // the flags' values fill it
}

// The base shape with every flag given on `cmd` put over it.
train::MemoryShape chosen_shape(const MemoryFlags& f, const CLI::App& cmd) {
  train::MemoryShape s = base_shape(f);
  const bool from_flags = f.preset.empty() && f.model.empty();
  const auto set = [&](const char* flag, int64_t& field, int64_t value) {
    if (from_flags || cmd.count(flag) > 0) field = value;
  };
  set("--layers", s.layers, f.layers);
  set("--heads", s.heads, f.heads);
  set("--d-model", s.d_model, f.d_model);
  set("--block", s.context, f.block);
  set("--batch", s.batch, f.batch);
  set("--vocab", s.vocab_size, f.vocab);
  if (cmd.count("--kv-heads") > 0) {
    s.kv_heads = f.kv_heads;
  } else if (from_flags || cmd.count("--heads") > 0) {
    s.kv_heads = s.heads;
  }
  if (cmd.count("--d-head") > 0) {
    s.d_head = f.d_head;
  } else if (from_flags || cmd.count("--heads") + cmd.count("--d-model") > 0) {
    s.d_head = s.d_model % s.heads == 0 ? s.d_model / s.heads : 0;  // 0: --d-head is needed
  }
  if (from_flags || cmd.count("--dtype") > 0) s.dtype = f.dtype;
  if (s.position_rows > 0) s.position_rows = s.context;  // a learned table covers the context
  return s;
}

std::string sizes(double bytes) {
  return fmt::format("{:>20.0f} bytes {:>12.2f} GB {:>12.2f} GiB", bytes, bytes / 1e9,
                     bytes / (1024.0 * 1024.0 * 1024.0));
}

nlohmann::json as_json(const train::MemoryShape& s, const train::ShapeMemory& m) {
  return {{"shape",
           {{"layers", s.layers}, {"heads", s.heads}, {"kv_heads", s.kv_heads}, {"d_model", s.d_model},
            {"d_head", s.d_head}, {"block", s.context}, {"batch", s.batch}, {"vocab", s.vocab_size},
            {"dtype", s.dtype}, {"bytes_per_value", s.value_bytes()}}},
          {"parameters", m.parameters},
          {"bytes",
           {{"parameters", m.parameter_bytes}, {"activations", m.activation_bytes},
            {"attention_scores", m.score_bytes}, {"kv_cache", m.kv_cache_bytes}}},
          {"formulas", train::shape_memory_formulas()}};
}

void print_text(const train::MemoryShape& s, const train::ShapeMemory& m) {
  fmt::print("shape: L {} layers, H {} heads, KV {} key/value heads, C {} d_model, dh {} d_head, "
             "T {} positions, B {} sequences, V {} vocabulary, {} ({} bytes a value)\n\n",
             s.layers, s.heads, s.kv_heads, s.d_model, s.d_head, s.context, s.batch, s.vocab_size,
             s.dtype, s.value_bytes());
  fmt::print("parameters       {:>20}\n", m.parameters);
  fmt::print("parameter bytes  {}\n", sizes(m.parameter_bytes));
  fmt::print("activations      {}\n", sizes(m.activation_bytes));
  fmt::print("attention scores {}\n", sizes(m.score_bytes));
  fmt::print("KV cache         {}\n\n", sizes(m.kv_cache_bytes));
  fmt::print("{}", train::shape_memory_formulas());
}

std::string preset_help() {
  std::string text = "a shape the source texts work on:";
  for (const train::MemoryPreset& p : train::memory_presets()) text += " " + p.name + " (" + p.what + ");";
  return text + " flags given with it change its shape";
}

}  // namespace

void add_memory_command(CLI::App& app) {
  auto f = std::make_shared<MemoryFlags>();
  CLI::App* cmd = app.add_subcommand(
      "memory", "Bytes of a transformer's parameters, activations, attention scores and KV cache, "
                "with the formulas (the training memory estimate's)");
  cmd->add_option("--layers", f->layers, "L, layers")->check(integer_in(1, 1 << 20))->capture_default_str();
  cmd->add_option("--heads", f->heads, "H, attention heads")->check(integer_in(1, 1 << 20))->capture_default_str();
  cmd->add_option("--kv-heads", f->kv_heads, "KV, key/value heads (default: --heads)")->check(integer_in(1, 1 << 20));
  cmd->add_option("--d-model", f->d_model, "C, the width")->check(integer_in(1, 1 << 24))->capture_default_str();
  cmd->add_option("--d-head", f->d_head, "dh, a head's width (default: --d-model / --heads)")
      ->check(integer_in(1, 1 << 24));
  cmd->add_option("--block", f->block, "T, positions of a sequence")->check(integer_in(1, 1 << 30))->capture_default_str();
  cmd->add_option("--batch", f->batch, "B, sequences at once")->check(integer_in(1, 1 << 30))->capture_default_str();
  cmd->add_option("--vocab", f->vocab, "V, vocabulary size (0: embeddings and logits left out)")
      ->check(integer_in(0, 1 << 30))->capture_default_str();
  cmd->add_option("--dtype", f->dtype, "bytes a value: f32 4, bf16 and f16 2")
      ->check(CLI::IsMember({"f32", "bf16", "f16"}))->capture_default_str();
  auto* model = cmd->add_option("--model", f->model, "a GPT checkpoint directory: its config.json's shape, one sequence")
                    ->type_name("DIR");
  std::vector<std::string> names;
  for (const train::MemoryPreset& p : train::memory_presets()) names.push_back(p.name);
  cmd->add_option("--preset", f->preset, preset_help())->check(CLI::IsMember(names))->excludes(model);
  cmd->add_flag("--json", f->json, "print the shape, parameters, bytes and formulas as one JSON object");
  cmd->callback([f, cmd] {
    const train::MemoryShape shape = chosen_shape(*f, *cmd);
    if (shape.d_head == 0) {
      throw UsageError(fmt::format("--d-model {} is not a multiple of --heads {}: give the head width, --d-head",
                                   shape.d_model, shape.heads));
    }
    try {
      shape.validate();
    } catch (const ValueError& e) {
      throw UsageError(in_flag_terms(e));
    }
    const train::ShapeMemory memory = train::shape_memory(shape);
    if (f->json) {
      fmt::print("{}\n", json_text(as_json(shape, memory), 2));
    } else {
      print_text(shape, memory);
    }
  });
}

}  // namespace tinygpt::cli
