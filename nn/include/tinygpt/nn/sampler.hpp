#pragma once
// Text generation from a trained GPT.
#include <functional>
#include <vector>

#include "tinygpt/nn/gpt.hpp"

namespace tinygpt::nn {

struct SampleOptions {
  int64_t tokens = 200;       // new tokens to generate
  double temperature = 1.0;   // 0 = greedy
  int64_t top_k = 0;          // 0 = the whole vocabulary
  uint64_t seed = 1;
  bool use_cache = true;      // false recomputes every position (the reference for tests)
  // A token (e.g. the newline that opens a document) that, drawn before any other, goes into the
  // window but is neither returned nor counted: text starts at its first other token. At most a
  // context's worth are skipped, so a model that draws nothing else still ends. -1: none.
  int64_t skip_leading = -1;
  // bf16: the model's weight matrices rounded to bf16 once (GPT::set_generation_precision), each
  // one-position step's products on them, and the prompt's forward on Precision::bf16's products
  // where the CPU has them (elsewhere in f32). Attention and the KV cache stay f32.
  Precision precision = Precision::f32;
};

// The next id drawn from the last position's logits of `logits` (..., V) as `options` say: the
// largest at temperature 0, else from softmax(logits / temperature) over the top_k largest.
// ValueError naming `output_index` (the token being drawn) when a logit is not finite.
int64_t sample_next(const Tensor& logits, const SampleOptions& options, Generator& gen,
                    int64_t output_index);

// Continues `prompt` (non-empty token ids) and returns the new ids. With the key/value cache,
// each step runs the model on one new position. The window the model sees is the prompt plus
// what was generated; when it reaches the context length it restarts from its last half, or
// its last token for a context of 1 (the same rule with or without the cache, so both give the
// same tokens).
std::vector<int64_t> generate(nn::GPT& model, const std::vector<int64_t>& prompt,
                              const SampleOptions& options,
                              const std::function<void(int64_t)>& on_token = {});

}  // namespace tinygpt::nn
