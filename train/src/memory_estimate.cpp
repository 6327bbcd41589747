#include "tinygpt/train/memory_estimate.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "tinygpt/autograd/memory.hpp"

namespace tinygpt::train {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// "MemAvailable:  123456 kB" of /proc/meminfo, in bytes; 0 when absent.
double mem_available() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string key;
    double kib = 0.0;
    if (fields >> key >> kib && key == "MemAvailable:") return kib * 1024.0;
  }
  return 0.0;
}

// memory.max - memory.current of this process's cgroup (v2), or 0 without a limit.
double cgroup_room() {
  std::ifstream cgroup("/proc/self/cgroup");
  std::string line;
  if (!std::getline(cgroup, line) || line.rfind("0::", 0) != 0) return 0.0;
  const std::string dir = "/sys/fs/cgroup" + line.substr(3);
  double max = 0.0, current = 0.0;
  std::ifstream max_file(dir + "/memory.max"), current_file(dir + "/memory.current");
  if (!(max_file >> max) || !(current_file >> current)) return 0.0;  // "max": no limit
  return std::max(0.0, max - current);
}

// The parameters' bytes with their gradients and the optimiser's state.
MemoryEstimate model_memory(int64_t parameters, const std::string& optimizer, double momentum) {
  MemoryEstimate e;
  e.parameters = parameters;
  const double copies = optimizer == "sgd" ? (momentum > 0.0 ? 3.0 : 2.0) : 4.0;
  e.model_bytes = 4.0 * copies * static_cast<double>(parameters);
  return e;
}

}  // namespace

MemoryEstimate measure_training_memory(nn::CausalLM& model, int64_t micro_batch_rows,
                                       const std::string& optimizer, double momentum) {
  MemoryEstimate e = model_memory(model.num_parameters(), optimizer, momentum);
  const int64_t block = model.shape().block_size;
  const bool training = model.is_training();
  model.eval();
  const int64_t before = memory_stats().bytes_in_use;
  reset_peak_memory();
  {
    const Tensor ids = Tensor::from_ids(std::vector<int64_t>(static_cast<size_t>(block), 0), Shape({1, block}));
    model.loss(ids, ids).backward();
  }
  const double row_peak = static_cast<double>(memory_stats().peak_bytes_in_use - before);
  model.zero_grad();
  model.train(training);
  const double gradients = 4.0 * static_cast<double>(e.parameters);
  e.activation_bytes = std::max(0.0, row_peak - gradients) * static_cast<double>(micro_batch_rows);
  return e;
}

int64_t parameter_count(const nn::GPTConfig& c) {
  const int64_t C = c.n_embd, bias = c.bias ? 1 : 0;
  const int64_t kv_width = 2 * c.kv_heads() * (C / c.n_head);  // keys and values
  const auto linear = [&](int64_t in, int64_t out) { return in * out + bias * out; };
  const int64_t layer_norm = 2 * C;  // weight and bias
  const int64_t block = layer_norm + linear(C, C + kv_width) + linear(C, C) + layer_norm +
                        linear(C, 4 * C) + linear(4 * C, C);
  const int64_t positions =
      c.position_embedding == nn::PositionEmbedding::learned ? c.block_size * C : 0;
  const int64_t head = c.tie_weights ? 0 : c.vocab_size * C;
  return c.vocab_size * C + positions + c.n_layer * block + layer_norm + head;
}

MemoryEstimate estimate_training_memory(const nn::GPTConfig& c, int64_t micro_batch_rows,
                                        const std::string& optimizer, double momentum) {
  MemoryEstimate e = model_memory(parameter_count(c), optimizer, momentum);
  const double tokens = static_cast<double>(micro_batch_rows) * static_cast<double>(c.block_size);
  const double attention_maps = c.dropout > 0.0 ? 4.0 : 0.0;  // the unfused path's (T,T) buffers
  const double per_token =
      static_cast<double>(c.n_layer) *
          (static_cast<double>(kActivationWidths * c.n_embd) +
           attention_maps * static_cast<double>(c.n_head) * static_cast<double>(c.block_size)) +
      3.0 * static_cast<double>(c.vocab_size);
  e.activation_bytes = 4.0 * tokens * per_token;
  return e;
}

int64_t parameter_count(const nn::EncoderDecoderConfig& c) {
  const int64_t C = c.d_model;
  const auto linear = [&](int64_t in, int64_t out) { return in * out + out; };
  const int64_t layer_norm = 2 * C, attention = 4 * linear(C, C);
  const int64_t encoder_layer = attention + layer_norm + linear(C, c.encoder_ffn_dim) +
                                linear(c.encoder_ffn_dim, C) + layer_norm;
  const int64_t decoder_layer = 2 * (attention + layer_norm) + linear(C, c.decoder_ffn_dim) +
                                linear(c.decoder_ffn_dim, C) + layer_norm;
  const int64_t stack = c.max_position_embeddings * C + layer_norm;  // positions, final norm
  return c.vocab_size * C + 2 * stack + c.encoder_layers * encoder_layer +
         c.decoder_layers * decoder_layer;
}

MemoryEstimate estimate_training_memory(const nn::EncoderDecoderConfig& c, int64_t micro_batch_rows,
                                        const std::string& optimizer, double momentum) {
  MemoryEstimate e = model_memory(parameter_count(c), optimizer, momentum);
  const double C = static_cast<double>(c.d_model), P = static_cast<double>(c.max_position_embeddings);
  const double per_token =
      static_cast<double>(c.encoder_layers) *
          (12.0 * C + 2.0 * static_cast<double>(c.encoder_ffn_dim) +
           2.0 * static_cast<double>(c.encoder_attention_heads) * P) +
      static_cast<double>(c.decoder_layers) *
          (18.0 * C + 2.0 * static_cast<double>(c.decoder_ffn_dim) +
           4.0 * static_cast<double>(c.decoder_attention_heads) * P) +
      3.0 * static_cast<double>(c.vocab_size);
  e.activation_bytes = 4.0 * static_cast<double>(micro_batch_rows) * P * per_token;
  return e;
}

MemoryEstimate estimate_eval_memory(const nn::GPTConfig& c, int64_t rows, int64_t block) {
  MemoryEstimate e;
  e.parameters = parameter_count(c);
  const double per_token = static_cast<double>(kEvalWidths * c.n_embd + c.vocab_size);
  e.activation_bytes = 4.0 * static_cast<double>(rows) * static_cast<double>(block) * per_token;
  return e;
}

MemoryEstimate estimate_eval_memory(const nn::EncoderDecoderConfig& c, int64_t rows,
                                    int64_t positions) {
  MemoryEstimate e;
  e.parameters = parameter_count(c);
  const double P = static_cast<double>(positions);
  const double heads = static_cast<double>(std::max(c.encoder_attention_heads, c.decoder_attention_heads));
  const double per_position =
      32.0 * static_cast<double>(c.d_model) + 3.0 * heads * P + static_cast<double>(c.vocab_size);
  e.activation_bytes = 4.0 * static_cast<double>(rows) * P * per_position;
  return e;
}

double available_memory_bytes() {
  double available = mem_available();
  if (available <= 0.0) {
    available = static_cast<double>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  }
  const double room = cgroup_room();
  return room > 0.0 ? std::min(available, room) : available;
}

namespace {

std::string describe(const MemoryEstimate& e, double available, const std::string& activation_knobs,
                     const std::string& model_knobs) {
  if (e.model_bytes == 0.0) {
    return fmt::format("this needs about {:.1f} GiB of activations but the machine has {:.1f} GiB "
                       "available; lower {}",
                       e.activation_bytes / kGiB, available / kGiB, activation_knobs);
  }
  return fmt::format(
      "this run needs about {:.1f} GiB (model {:.1f} GiB, activations {:.1f} GiB) but the machine "
      "has {:.1f} GiB available; lower {} (activations) or {} (model)",
      e.total_bytes() / kGiB, e.model_bytes / kGiB, e.activation_bytes / kGiB, available / kGiB,
      activation_knobs, model_knobs);
}

}  // namespace

MemoryError::MemoryError(const MemoryEstimate& estimate, double available)
    : Error(describe(estimate, available, "the batch or the context", "the layers or the width")),
      estimate_(estimate),
      available_(available) {}

std::string MemoryError::message(const std::string& activation_knobs,
                                 const std::string& model_knobs) const {
  return describe(estimate_, available_, activation_knobs, model_knobs);
}

void check_memory(const MemoryEstimate& estimate) {
  const double available = available_memory_bytes();
  if (estimate.total_bytes() > available) throw MemoryError(estimate, available);
}

}  // namespace tinygpt::train
