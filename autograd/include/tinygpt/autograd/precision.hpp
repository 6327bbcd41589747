#pragma once
// The precision of the f32 matrix products (matmul, linear and the fused attention's products).
// Precision::bf16 rounds both inputs of every product to bfloat16 and accumulates in f32, as
// torch.autocast("cpu", dtype=torch.bfloat16) does for these ops; all else -- master weights,
// gradients, optimiser state, layer norm, softmax and its statistics, the loss -- stays f32.
// One setting for the process (the products run on OpenMP's threads), meant to be set for a
// scope, as autocast is entered: PrecisionGuard below (the trainer holds one around each step).
//
// Where it is read: inside autograd, matmul_precision() and bf16_products() are read in one
// place only, kernels::product_backend() (autograd/src/kernels/product.cpp), which turns them,
// the dtype and the CPU into the backend of a product. Each op (matmul, linear, gelu_linear,
// the fused attentions) asks it once when it runs forward, and its backward pass runs on that
// same backend; a change of precision takes effect at the next op.
#include <optional>
#include <string>
#include <vector>

namespace tinygpt {

enum class Precision { f32, bf16 };

const char* precision_name(Precision precision);  // "f32", "bf16"
std::optional<Precision> precision_from_name(const std::string& name);  // nullopt if not a name
Precision parse_precision(const std::string& name);  // throws ValueError naming the choices

// Why bf16 products cannot run natively here ("" when they can): oneDNN must dispatch to kernels
// with the avx512_bf16 (or AMX) instructions, and TINYGPT_BF16_PRODUCTS (below) name a kernel.
std::string bf16_unsupported_reason();

// Throws ValueError with bf16_unsupported_reason() when asked for bf16 where it cannot run.
void set_matmul_precision(Precision precision);
Precision matmul_precision();

// Where Precision::bf16's products run. All keep its contract -- operands rounded to bf16, sums
// in f32 -- but not its bits (the sums run in a different order):
//   dot_pairs  the CPU's bf16 dot products (vdpbf16ps: two bf16 products per f32 lane) on
//              oneDNN's bf16 kernels and the fused attention's bf16 tiles;
//   f32_fma    the rounded operands widened back to f32, which is exact, on the f32 kernels: a
//              product of two bf16 values is exact in f32, so only the order of the sums differs;
//   amx        oneDNN's bf16 kernels on the AMX tiles (tdpbf16ps), and the fused attention's small
//              products on tiles of its own (attention_products.cpp).
// The default is the faster on this CPU, told by its vendor and instruction set (a timing could
// differ between runs and so break bit-identical resumes): dot_pairs outruns the f32 FMAs on
// AMD's Zen 4 but trails them on Intel Xeons (docs/PERFORMANCE.md, "bf16 mixed precision"), so amx
// on an Intel CPU whose AMX oneDNN uses, else f32_fma on Intel.
// TINYGPT_BF16_PRODUCTS=dot_pairs|f32_fma|amx overrides it; set_bf16_products (tests,
// comparisons) too.
enum class Bf16Products { dot_pairs, f32_fma, amx };
const char* bf16_products_name(Bf16Products products);  // "dot_pairs", "f32_fma", "amx"
// Where they run, for people: "the CPU's bf16 dot products", "the f32 FMAs, ...".
const char* bf16_products_description(Bf16Products products);
// Throws ValueError naming the choices when TINYGPT_BF16_PRODUCTS holds none of them, or names amx
// where oneDNN does not use AMX.
Bf16Products bf16_products();
void set_bf16_products(Bf16Products products);
// The choices this machine can run: none without bf16 products (bf16_unsupported_reason), else
// dot_pairs and f32_fma, and amx where oneDNN uses AMX.
std::vector<Bf16Products> available_bf16_products();

// Whether this CPU has the AMX tiles with bf16 (CPUID.(7,0):EDX bits 24 and 22) and Linux has
// granted this process their state (asked once; oneDNN asks too, and the request is idempotent).
bool amx_tiles_usable();

// The calling thread's eight AMX tiles configured as 16 rows of 64 bytes while this lives, and
// released after, as oneDNN's AMX kernels do around each of their calls (so neither disturbs the
// other). Throws Error where !amx_tiles_usable() (the instructions would fault).
class AmxTiles {
 public:
  AmxTiles();
  ~AmxTiles();
  AmxTiles(const AmxTiles&) = delete;
  AmxTiles& operator=(const AmxTiles&) = delete;
};

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

// The same for bf16_products().
class Bf16ProductsGuard {
 public:
  explicit Bf16ProductsGuard(Bf16Products products);
  ~Bf16ProductsGuard();
  Bf16ProductsGuard(const Bf16ProductsGuard&) = delete;
  Bf16ProductsGuard& operator=(const Bf16ProductsGuard&) = delete;

 private:
  Bf16Products saved_;
};

}  // namespace tinygpt
