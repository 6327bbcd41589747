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

void MemoryShape::validate() const {
  const Operation op("MemoryShape");
  if (kv_heads <= 0 || heads % kv_heads != 0) {
    throw SettingError(op, {named("n_kv_head", kv_heads), " does not divide ", named("n_head", heads)});
  }
  if (d_head <= 0) {
    throw SettingError(op, {named("n_embd", d_model), " is not divisible by ", named("n_head", heads),
                            "; give the head width (d_head)"});
  }
  if (dtype != "f32" && dtype != "bf16" && dtype != "f16") {
    throw SettingError(op, "dtype", dtype, fmt::format("dtype must be f32, bf16 or f16, got {}", dtype));
  }
}

MemoryShape memory_shape(const nn::GPTConfig& c, int64_t batch) {
  MemoryShape s;
  s.layers = c.n_layer;
  s.heads = c.n_head;
  s.kv_heads = c.kv_heads();
  s.d_model = c.n_embd;
  s.d_head = c.n_embd / c.n_head;
  s.context = c.block_size;
  s.batch = batch;
  s.vocab_size = c.vocab_size;
  s.position_rows = c.position_embedding == nn::PositionEmbedding::learned ? c.block_size : 0;
  s.bias = c.bias;
  s.tie_weights = c.tie_weights;
  return s;
}

namespace {

int64_t shape_parameters(const MemoryShape& s) {
  const int64_t C = s.d_model, bias = s.bias ? 1 : 0;
  const int64_t queries = s.heads * s.d_head, keys_values = 2 * s.kv_heads * s.d_head;
  const auto linear = [&](int64_t in, int64_t out) { return in * out + bias * out; };
  const int64_t layer_norm = 2 * C;  // weight and bias
  const int64_t block = layer_norm + linear(C, queries + keys_values) + linear(queries, C) +
                        layer_norm + linear(C, 4 * C) + linear(4 * C, C);
  const int64_t head = s.tie_weights ? 0 : s.vocab_size * C;
  return s.vocab_size * C + s.position_rows * C + s.layers * block + layer_norm + head;
}

}  // namespace

ShapeMemory shape_memory(const MemoryShape& s) {
  const auto d = [](int64_t v) { return static_cast<double>(v); };
  ShapeMemory m;
  m.parameters = shape_parameters(s);
  m.parameter_bytes = s.value_bytes() * d(m.parameters);
  const double tokens = d(s.batch) * d(s.context);
  m.activation_bytes =
      s.value_bytes() * tokens * (d(s.layers) * d(kActivationWidths * s.d_model) + 3.0 * d(s.vocab_size));
  m.score_bytes = s.value_bytes() * d(s.batch) * d(s.layers) * d(s.heads) * d(s.context) * d(s.context);
  m.kv_cache_bytes = s.value_bytes() * 2.0 * tokens * d(s.layers) * d(s.kv_heads) * d(s.d_head);
  return m;
}

std::string shape_memory_formulas() {
  return fmt::format(
      "parameters       = V C + P C + L (4 C + C (H + 2 KV) dh + H dh C + 8 C^2 + biases) + 2 C "
      "(+ V C untied)\n"
      "parameter bytes  = parameters x bytes\n"
      "activations      = B x T x (L x {} x C + 3 x V) x bytes   (kept for the backward)\n"
      "attention scores = B x L x H x T^2 x bytes   (one T x T map per head and layer)\n"
      "KV cache         = 2 x B x L x KV x dh x T x bytes   (keys and values)\n",
      kActivationWidths);
}

namespace {

MemoryShape preset_shape(int64_t layers, int64_t heads, int64_t d_model, int64_t d_head,
                         int64_t context, int64_t vocab_size, const char* dtype) {
  MemoryShape s;
  s.layers = layers;
  s.heads = s.kv_heads = heads;
  s.d_model = d_model;
  s.d_head = d_head;
  s.context = context;
  s.vocab_size = vocab_size;
  s.position_rows = vocab_size > 0 ? context : 0;
  s.dtype = dtype;
  return s;
}

}  // namespace

const std::vector<MemoryPreset>& memory_presets() {
  static const std::vector<MemoryPreset> presets = {
      {"gpt3-kv", "GPT-3 175B in f16 at 2,048 tokens: its KV cache",
       preset_shape(96, 96, 12288, 128, 2048, 50257, "f16")},
      {"bert-base-scores", "BERT-base in f32 at 512 tokens: its attention scores",
       preset_shape(12, 12, 768, 64, 512, 30522, "f32")},
      {"128k-head", "one head at a 128K (131,072-token) context in f16: its score matrix",
       preset_shape(1, 1, 128, 128, 131072, 0, "f16")}};
  return presets;
}

int64_t parameter_count(const nn::GPTConfig& c) { return shape_memory(memory_shape(c, 1)).parameters; }

MemoryEstimate estimate_training_memory(const nn::GPTConfig& c, int64_t micro_batch_rows,
                                        const std::string& optimizer, double momentum) {
  const ShapeMemory shape = shape_memory(memory_shape(c, micro_batch_rows));
  MemoryEstimate e = model_memory(shape.parameters, optimizer, momentum);
  const double attention_maps = c.dropout > 0.0 ? 4.0 : 0.0;  // the unfused path's (T,T) buffers
  e.activation_bytes = shape.activation_bytes + attention_maps * shape.score_bytes;
  return e;
}

namespace {

int64_t linear_parameters(int64_t in, int64_t out) { return in * out + out; }

// A post-LN encoder layer of width C, feed-forward width F: its attention's four projections,
// the feed-forward's two and two LayerNorms (the encoder-decoder's encoder and BERT alike).
int64_t encoder_layer_parameters(int64_t C, int64_t F) {
  return 4 * linear_parameters(C, C) + linear_parameters(C, F) + linear_parameters(F, C) + 2 * 2 * C;
}

// Per position, what an encoder layer keeps for the backward: 12 vectors of width C, the
// feed-forward's 2 of width F, and the unfused attention's two (P,P) maps per head.
double encoder_layer_widths(int64_t C, int64_t F, int64_t H, int64_t P) {
  return 12.0 * static_cast<double>(C) + 2.0 * static_cast<double>(F) +
         2.0 * static_cast<double>(H) * static_cast<double>(P);
}

// The model's copies, and as activations `per_position` floats kept for the backward at each of
// the P positions of `rows` sequences.
MemoryEstimate sequence_memory(int64_t parameters, int64_t rows, int64_t P, double per_position,
                               const std::string& optimizer, double momentum) {
  MemoryEstimate e = model_memory(parameters, optimizer, momentum);
  e.activation_bytes = 4.0 * static_cast<double>(rows) * static_cast<double>(P) * per_position;
  return e;
}

}  // namespace

int64_t parameter_count(const nn::EncoderDecoderConfig& c) {
  const int64_t C = c.d_model;
  const int64_t layer_norm = 2 * C, cross_attention = 4 * linear_parameters(C, C) + layer_norm;
  const int64_t stack = c.max_position_embeddings * C + layer_norm;  // positions, final norm
  return c.vocab_size * C + 2 * stack + c.encoder_layers * encoder_layer_parameters(C, c.encoder_ffn_dim) +
         c.decoder_layers * (encoder_layer_parameters(C, c.decoder_ffn_dim) + cross_attention);
}

MemoryEstimate estimate_training_memory(const nn::EncoderDecoderConfig& c, int64_t micro_batch_rows,
                                        const std::string& optimizer, double momentum) {
  const int64_t P = c.max_position_embeddings;
  // The decoder's layer: an encoder layer's, its cross-attention's 6 C and two more (P,P) maps.
  const double per_token =
      static_cast<double>(c.encoder_layers) *
          encoder_layer_widths(c.d_model, c.encoder_ffn_dim, c.encoder_attention_heads, P) +
      static_cast<double>(c.decoder_layers) *
          (encoder_layer_widths(c.d_model, c.decoder_ffn_dim, c.decoder_attention_heads, P) +
           6.0 * static_cast<double>(c.d_model) +
           2.0 * static_cast<double>(c.decoder_attention_heads) * static_cast<double>(P)) +
      3.0 * static_cast<double>(c.vocab_size);
  return sequence_memory(parameter_count(c), micro_batch_rows, P, per_token, optimizer, momentum);
}

int64_t parameter_count(const nn::BertConfig& c) {
  const int64_t C = c.hidden_size, layer_norm = 2 * C;
  const int64_t positions = c.position == nn::PositionEmbedding::learned ? c.max_position_embeddings : 0;
  const int64_t embeddings = (c.vocab_size + positions + c.type_vocab_size) * C + layer_norm;
  const int64_t final_norm = c.pre_layer_norm ? layer_norm : 0;
  const int64_t mlm_head = linear_parameters(C, C) + layer_norm + c.vocab_size;  // tied decoder, bias
  return embeddings + c.num_hidden_layers * encoder_layer_parameters(C, c.intermediate_size) +
         final_norm + mlm_head;
}

MemoryEstimate estimate_training_memory(const nn::BertConfig& c, int64_t micro_batch_rows,
                                        const std::string& optimizer, double momentum) {
  const int64_t P = c.max_position_embeddings;
  // The encoder-decoder's encoder layers, and the MLM head's logits, softmax and gradient.
  const double per_token =
      static_cast<double>(c.num_hidden_layers) *
          encoder_layer_widths(c.hidden_size, c.intermediate_size, c.num_attention_heads, P) +
      3.0 * static_cast<double>(c.vocab_size);
  return sequence_memory(parameter_count(c), micro_batch_rows, P, per_token, optimizer, momentum);
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
