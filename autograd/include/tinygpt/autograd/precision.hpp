#pragma once
// The precision of the f32 matrix products (matmul, linear and the fused attention's products).
// Precision::bf16 rounds both inputs of every product to bfloat16 and accumulates in f32, as
// torch.autocast("cpu", dtype=torch.bfloat16) does for these ops; all else -- master weights,
// gradients, optimiser state, layer norm, softmax and its statistics, the loss -- stays f32.
// One setting for the process: the products run on OpenMP's threads.
#include <optional>
#include <string>

namespace tinygpt {

enum class Precision { f32, bf16 };

const char* precision_name(Precision precision);  // "f32", "bf16"
std::optional<Precision> precision_from_name(const std::string& name);  // nullopt if not a name
Precision parse_precision(const std::string& name);  // throws ValueError naming the choices

// Why bf16 products cannot run natively here ("" when they can): oneDNN must dispatch to kernels
// with the avx512_bf16 (or AMX) instructions.
std::string bf16_unsupported_reason();

// Throws ValueError with bf16_unsupported_reason() when asked for bf16 where it cannot run.
void set_matmul_precision(Precision precision);
Precision matmul_precision();

// Sets a precision for a scope and puts the previous one back.
class PrecisionGuard {
 public:
  explicit PrecisionGuard(Precision precision);
  ~PrecisionGuard();
  PrecisionGuard(const PrecisionGuard&) = delete;
  PrecisionGuard& operator=(const PrecisionGuard&) = delete;

 private:
  Precision saved_;
};

}  // namespace tinygpt
