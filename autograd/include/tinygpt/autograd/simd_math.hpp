#pragma once
// exp and the functions built on it, written so that the compiler vectorises loops that call
// them (branch-free, no library call), for the float kernels of training: softmax inside
// attention, cross-entropy, GELU. glibc's expf/tanhf are scalar calls, which would leave these
// loops unvectorised.
//
// float: Cephes' expf polynomial after reduction by ln 2 rounded to nearest, within a few ulp
// of the exact value (tested against std::exp); below -87.3 it gives exactly 0 and above
// ln(FLT_MAX) inf, so exp(-inf) = 0, exp(inf) = inf and sigmoid saturates to exact 0 and 1. double keeps std::exp, so float64 gradient checks compare
// against the library's own functions.
#include <cstdint>
#include <cstring>

#include <cmath>
#include <limits>

namespace tinygpt::simd {

inline __attribute__((always_inline)) float exp(float x) {
  constexpr float kLow = -87.33654f;          // below FLT_MIN: 0
  constexpr float kHigh = 88.72283935546875f;  // above ln(FLT_MAX): inf
  const float in = x;
  // Clamped into range rather than replaced by a constant (a constant arm makes GCC evaluate the
  // polynomial twice, once for it); the ends are set at the end. NaN passes through the clamps
  // and the arithmetic, so it comes out NaN with no test of its own.
  x = x < kLow ? kLow : x;
  x = x > kHigh ? kHigh : x;
  // n = round(x / ln 2), by the 1.5 * 2^23 trick (round-to-nearest, no library call): n sits in
  // the low bits of `shifted`, read as an integer (no float-to-int conversion, which NaN would
  // make undefined). At most 127, so that 2^n stays finite (just below ln(FLT_MAX), r then
  // reaches ln 2); clamped as an integer, since clamping the float gives GCC a constant arm.
  const float shifted = x * 1.44269504088896341f + 12582912.0f;
  uint32_t shifted_bits;
  std::memcpy(&shifted_bits, &shifted, sizeof shifted_bits);
  int32_t ni = static_cast<int32_t>(shifted_bits - 0x4B400000u);
  ni = ni < 127 ? ni : 127;
  const float n = static_cast<float>(ni);
  // r = x - n ln 2 in two parts (Cody-Waite), |r| <= ln 2 / 2.
  float r = x - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n through the exponent bits: n is in [-126, 127] here.
  const uint32_t bits = static_cast<uint32_t>(ni + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  const float y = p * scale;
  if (in < kLow) return 0.0f;
  return in > kHigh ? std::numeric_limits<float>::infinity() : y;
}

inline double exp(double x) { return std::exp(x); }

// 1 / (1 + exp(-x)): 0 and 1 at the far ends, no overflow or NaN for any finite x.
template <class T>
inline __attribute__((always_inline)) T sigmoid(T x) {
  return T(1) / (T(1) + simd::exp(-x));
}

// GPT-2's tanh-approximated GELU, as 0.5 x (1 + tanh(u)) = x sigmoid(2u) with
// u = sqrt(2/pi) (x + 0.044715 x^3).
constexpr double kGeluC = 0.7978845608028654;  // sqrt(2/pi)
constexpr double kGeluA = 0.044715;

template <class T>
inline __attribute__((always_inline)) T gelu(T x) {
  const T u = T(kGeluC) * (x + T(kGeluA) * x * x * x);
  return x * sigmoid(T(2) * u);
}

// d gelu / dx = s + 2 x s (1 - s) u'(x), with s = sigmoid(2u) and u' = sqrt(2/pi) (1 + 3a x^2);
// the same as 0.5 (1 + t) + 0.5 x (1 - t^2) u' for t = tanh(u), since 1 - t^2 = 4 s (1 - s).
// 1 - s is taken as e / (1 + e) = e s with e = exp(-2u), not by subtraction, which would lose
// its digits as s -> 1; where e overflows, s = 0 and 1 - s = 1.
// gelu_with_grad returns gelu(x) too, from the same s: one exp for both.
template <class T>
inline __attribute__((always_inline)) T gelu_with_grad(T x, T& grad) {
  const T u = T(kGeluC) * (x + T(kGeluA) * x * x * x);
  const T e = simd::exp(T(-2) * u);
  const T s = T(1) / (T(1) + e);
  const T one_minus_s = e == std::numeric_limits<T>::infinity() ? T(1) : e * s;
  const T du = T(kGeluC) * (T(1) + T(3 * kGeluA) * x * x);
  grad = s + T(2) * x * s * one_minus_s * du;
  return x * s;
}

template <class T>
inline __attribute__((always_inline)) T gelu_grad(T x) {
  T grad;
  gelu_with_grad(x, grad);
  return grad;
}

// Linear attention's feature map phi(x) = elu(x) + 1 (x + 1 above 0, exp(x) below; always > 0),
// and its slope from phi(x) itself: 1 where x > 0 (phi > 1), exp(x) = phi(x) elsewhere.
template <class T>
inline __attribute__((always_inline)) T elu_plus_one(T x) {
  return x > T(0) ? x + T(1) : simd::exp(x);
}

template <class T>
inline __attribute__((always_inline)) T elu_plus_one_slope(T phi_x) {
  return phi_x < T(1) ? phi_x : T(1);
}

}  // namespace tinygpt::simd
