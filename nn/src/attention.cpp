#include "tinygpt/nn/attention.hpp"

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "tinygpt/autograd/ops.hpp"

namespace tinygpt::nn {

namespace {

void check_qkv(const Tensor& q, const Tensor& k, const Tensor& v, const char* op) {
  const bool ok = q.ndim() == 4 && k.ndim() == 4 && v.ndim() == 4 && k.shape() == v.shape() &&
                  q.size(0) == k.size(0) && q.size(1) == k.size(1) && q.size(3) == k.size(3);
  if (!ok) {
    throw ShapeError(Operation(op), fmt::format(
        "expects q (B,H,Tq,d), k and v (B,H,Tk,d); got q {}, k {}, v {}",
        q.shape().str(), k.shape().str(), v.shape().str()));
  }
}

// fq (B,H,Tq,M), fk and v (B,H/group,Tk,M) and (B,H/group,Tk,d): features of queries and
// keys and the values they weigh; `group` 0 lets fk have any number of heads dividing H.
void check_features(const Tensor& fq, const Tensor& fk, const Tensor& v, int64_t group,
                    const char* op) {
  const bool ok = fq.ndim() == 4 && fk.ndim() == 4 && v.ndim() == 4 && fq.size(0) == fk.size(0) &&
                  fk.size(1) > 0 && fq.size(1) % fk.size(1) == 0 &&
                  (group == 0 || fq.size(1) == group * fk.size(1)) && fq.size(3) == fk.size(3) &&
                  fk.size(0) == v.size(0) && fk.size(1) == v.size(1) && fk.size(2) == v.size(2);
  if (!ok) {
    throw ShapeError(Operation(op), fmt::format(
        "expects q features (B,H,Tq,M), k features (B,Hkv,Tk,M) and v (B,Hkv,Tk,d) with Hkv {}; "
        "got {}, {}, {}", group == 0 ? "dividing H" : "= H", fq.shape().str(), fk.shape().str(),
        v.shape().str()));
  }
}

// Gram-Schmidt on the d rows of a (d,d) matrix: they become orthonormal, in order.
void orthonormalise_rows(std::vector<double>& a, int64_t d) {
  for (int64_t r = 0; r < d; ++r) {
    double* row = a.data() + r * d;
    for (int64_t p = 0; p < r; ++p) {
      const double* prev = a.data() + p * d;
      double dot = 0.0;
      for (int64_t e = 0; e < d; ++e) dot += row[e] * prev[e];
      for (int64_t e = 0; e < d; ++e) row[e] -= dot * prev[e];
    }
    double norm = 0.0;
    for (int64_t e = 0; e < d; ++e) norm += row[e] * row[e];
    norm = std::sqrt(norm);
    for (int64_t e = 0; e < d; ++e) row[e] /= norm;
  }
}

// The weights after the attn.pattern hook, dropout on them when training, and their product
// with v (B,H,Tq,d).
AttentionResult weigh_values(Tensor weights, const Tensor& v, double dropout_p, bool training,
                             Generator* gen, const Hook& edit_weights, const char* op) {
  if (edit_weights) weights = edit_weights(weights);
  Tensor dropped = weights;
  if (training && dropout_p > 0.0) {
    if (gen == nullptr) throw ValueError(Operation(op), "dropout needs a generator");
    dropped = dropout(weights, dropout_p, true, *gen);
  }
  return {matmul(dropped, v), weights};
}

}  // namespace

AttentionResult scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const Tensor& mask, double dropout_p, bool training,
                                             Generator* gen, bool alibi, const Hook& edit_weights,
                                             const std::vector<int64_t>& key_positions,
                                             int64_t first_query, AlibiForm alibi_form) {
  check_qkv(q, k, v, "scaled_dot_product_attention");
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
  Tensor scores = matmul(q, k, false, true) * scale;  // (B,H,Tq,Tk)
  if (alibi) scores = alibi_bias(scores, key_positions, first_query, alibi_form);
  return attend_by_scores(scores, v, mask, dropout_p, training, gen, edit_weights);
}

AttentionResult attend_by_scores(Tensor scores, const Tensor& v, const Tensor& mask,
                                 double dropout_p, bool training, Generator* gen,
                                 const Hook& edit_weights) {
  if (mask.defined()) {
    scores = masked_fill(scores, mask, -std::numeric_limits<double>::infinity());
  }
  return weigh_values(softmax(scores, -1), v, dropout_p, training, gen, edit_weights, "attention");
}

Tensor additive_scores(const Tensor& q, const Tensor& k, const Tensor& v_a) {
  const bool ok = q.ndim() == 4 && k.ndim() == 4 && q.size(0) == k.size(0) &&
                  q.size(1) == k.size(1) && q.size(3) == k.size(3) && v_a.ndim() == 2 &&
                  v_a.size(0) == q.size(1) && v_a.size(1) == q.size(3);
  if (!ok) {
    throw ShapeError(Operation("additive_scores"), fmt::format(
        "expects q (B,H,Tq,d), k (B,H,Tk,d) and v_a (H,d); got q {}, k {}, v_a {}",
        q.shape().str(), k.shape().str(), v_a.shape().str()));
  }
  const int64_t b = q.size(0), h = q.size(1), tq = q.size(2), tk = k.size(2), d = q.size(3);
  // Every (query, key) pair's tanh(q_i + k_j) (B,H,Tq,Tk,d), then its dot product with v_a.
  const Tensor hidden = tanh(reshape(q, {b, h, tq, 1, d}) + reshape(k, {b, h, 1, tk, d}));
  return sum(hidden * reshape(v_a, {1, h, 1, 1, d}), {-1});
}

AttentionResult linear_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                 const Tensor& mask, double dropout_p, bool training,
                                 Generator* gen, const Hook& edit_weights) {
  check_qkv(q, k, v, "linear_attention");
  return feature_attention(elu_plus_one(q), elu_plus_one(k), v, mask, dropout_p, training, gen,
                           edit_weights);
}

AttentionResult feature_attention(const Tensor& fq, const Tensor& fk, const Tensor& v,
                                  const Tensor& mask, double dropout_p, bool training,
                                  Generator* gen, const Hook& edit_weights) {
  check_features(fq, fk, v, 1, "feature_attention");
  // The implied weights phi(q_i).phi(k_j) / sum_j' phi(q_i).phi(k_j'), phi > 0, over the keys
  // the mask leaves; what the running-sum kernels compute without forming them.
  Tensor scores = matmul(fq, fk, false, true);  // (B,H,Tq,Tk)
  if (mask.defined()) scores = masked_fill(scores, mask, 0.0);
  const Tensor weights = scores / sum(scores, {-1}, true);
  return weigh_values(weights, v, dropout_p, training, gen, edit_weights, "feature_attention");
}

Tensor recurrent_linear_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                  KVCache& cache) {
  check_features(q, k, v, 0, "recurrent_linear_attention");
  if (q.size(3) != k.size(3) || q.size(3) != v.size(3)) {
    throw ShapeError(Operation("recurrent_linear_attention"),
                     fmt::format("expects q, k and v of one head width; got q {}, k {}, v {}",
                                 q.shape().str(), k.shape().str(), v.shape().str()));
  }
  return recurrent_feature_attention(elu_plus_one(q), elu_plus_one(k), v, cache);
}

Tensor recurrent_feature_attention(const Tensor& fq, const Tensor& fk, const Tensor& v,
                                   KVCache& cache) {
  check_features(fq, fk, v, 0, "recurrent_feature_attention");
  if (fq.size(2) != fk.size(2)) {
    throw ShapeError(Operation("recurrent_feature_attention"),
                     fmt::format("expects as many queries as keys; got {} and {}", fq.size(2),
                                 fk.size(2)));
  }
  const int64_t b = fk.size(0), kvh = fk.size(1), t = fk.size(2), m = fk.size(3);
  const int64_t group = fq.size(1) / kvh;
  Tensor scores = matmul(fq, repeat_heads(fk, group), false, true);  // (B,H,T,T)
  scores = masked_fill(scores, causal_mask(t, t), 0.0);
  Tensor num = matmul(scores, repeat_heads(v, group));  // (B,H,T,d)
  Tensor den = sum(scores, {-1}, true);                 // (B,H,T,1)
  if (cache.s.defined()) {
    num = num + matmul(fq, repeat_heads(cache.s, group));  // phi(q) S
    den = den + matmul(fq, repeat_heads(cache.z, group));  // phi(q) . z
  }
  const Tensor s_new = matmul(fk, v, true, false);                      // (B,Hkv,M,d)
  const Tensor z_new = reshape(sum(fk, {2}), {b, kvh, m, 1});           // (B,Hkv,M,1)
  cache.s = (cache.s.defined() ? cache.s + s_new : s_new).detach();
  cache.z = (cache.z.defined() ? cache.z + z_new : z_new).detach();
  cache.seen += t;
  return num / den;
}

Tensor orthogonal_random_features(int64_t features, int64_t d, Generator& gen) {
  if (features < 1 || d < 1) {
    throw ValueError(Operation("orthogonal_random_features"),
                     fmt::format("needs features >= 1 and width >= 1, got {} and {}", features, d));
  }
  Tensor omega = Tensor::empty({features, d});
  float* w = omega.data<float>();
  std::vector<double> block(static_cast<size_t>(d * d));
  for (int64_t first = 0; first < features; first += d) {
    for (double& x : block) x = gen.normal();
    orthonormalise_rows(block, d);
    for (int64_t r = first; r < std::min(features, first + d); ++r) {
      double squares = 0.0;  // chi(d): the length of a fresh Gaussian vector
      for (int64_t e = 0; e < d; ++e) {
        const double x = gen.normal();
        squares += x * x;
      }
      const double* row = block.data() + (r - first) * d;
      for (int64_t e = 0; e < d; ++e) w[r * d + e] = static_cast<float>(std::sqrt(squares) * row[e]);
    }
  }
  return omega;
}

void check_pattern_positions(const AttentionPattern& pattern, PositionEmbedding position,
                             const char* op) {
  if (pattern.is_linear() &&
      (position == PositionEmbedding::rope || position == PositionEmbedding::alibi)) {
    throw SettingError(Operation(op), "position_embedding", position_embedding_name(position),
                       fmt::format("linear attention takes learned, sinusoidal or no positions, "
                                   "not {}", position_embedding_name(position)));
  }
}

Tensor causal_mask(int64_t tq, int64_t tk) { return pattern_mask(AttentionPattern{}, tq, tk); }

Tensor pattern_mask(const AttentionPattern& pattern, int64_t tq, int64_t tk) {
  if (tq > tk) {
    throw ShapeError(Operation("causal_mask"),
                     fmt::format("{} queries cannot be the last of {} keys", tq, tk));
  }
  std::vector<int64_t> positions(static_cast<size_t>(tk));
  for (int64_t j = 0; j < tk; ++j) positions[static_cast<size_t>(j)] = j;
  return pattern_mask(pattern, tk - tq, tq, positions);
}

Tensor pattern_mask(const AttentionPattern& pattern, int64_t first_query, int64_t tq,
                    const std::vector<int64_t>& key_positions) {
  const auto tk = static_cast<int64_t>(key_positions.size());
  Tensor mask = Tensor::zeros({tq, tk});
  float* m = mask.data<float>();
  for (int64_t r = 0; r < tq; ++r) {
    const int64_t i = first_query + r;  // the query's position
    for (int64_t c = 0; c < tk; ++c) {
      const int64_t j = key_positions[static_cast<size_t>(c)];
      m[r * tk + c] = j >= 0 && pattern.visible(i, j) ? 0.0f : 1.0f;
    }
  }
  return mask;
}

Tensor padding_mask(const std::vector<int64_t>& lengths, int64_t tk) {
  const auto b = static_cast<int64_t>(lengths.size());
  Tensor mask = Tensor::zeros({b, 1, 1, tk});
  float* m = mask.data<float>();
  for (int64_t i = 0; i < b; ++i) {
    if (lengths[static_cast<size_t>(i)] < 0 || lengths[static_cast<size_t>(i)] > tk) {
      throw IndexError(Operation("padding_mask"), fmt::format("length {} of sequence {} is outside [0, {}]",
                                   lengths[static_cast<size_t>(i)], i, tk));
    }
    for (int64_t j = lengths[static_cast<size_t>(i)]; j < tk; ++j) m[i * tk + j] = 1.0f;
  }
  return mask;
}

MultiHeadSelfAttention::MultiHeadSelfAttention(const AttentionOptions& options, Generator& init,
                                               std::shared_ptr<Generator> noise)
    : options_(options), noise_(noise) {
  const int64_t c = options.d_model;
  if (c <= 0 || options.n_heads <= 0 || (options.head_dim == 0 && c % options.n_heads != 0)) {
    throw ValueError(Operation("MultiHeadSelfAttention"), fmt::format(
        "d_model {} must be a positive multiple of n_heads {}", c,
        options.n_heads));
  }
  if (options.n_kv_heads < 0 || options.n_heads % options.kv_heads() != 0) {
    throw ValueError(Operation("MultiHeadSelfAttention"),
                     fmt::format("n_kv_heads {} does not divide n_heads {}",
                                 options.n_kv_heads, options.n_heads));
  }
  options.pattern.validate("MultiHeadSelfAttention");
  check_pattern_positions(options.pattern, options.position, "MultiHeadSelfAttention");
  if (!options.causal && !options.pattern.is_full()) {
    throw ValueError(Operation("MultiHeadSelfAttention"), fmt::format("a {} pattern needs causal attention",
                                 options.pattern.str()));
  }
  const int64_t kv = options.kv_heads() * options.head_width();  // (KV) columns of k and of v
  const int64_t qc = options.n_heads * options.head_width();      // of q: C unless pruned
  c_attn = register_module("c_attn", std::make_shared<Linear>(c, qc + 2 * kv, options.bias, init));
  c_proj = register_module("c_proj", std::make_shared<Linear>(qc, c, options.bias, init));
  resid_dropout =
      register_module("resid_dropout", std::make_shared<Dropout>(options.dropout, noise));
  if (options.pattern.is_performer()) {
    features_ = register_buffer("performer_features",
                                orthogonal_random_features(options.pattern.features,
                                                           options.head_width(), init));
  }
}

void MultiHeadSelfAttention::redraw_features(Generator& gen) {
  if (!features_.defined()) {
    throw ValueError(Operation("MultiHeadSelfAttention::redraw_features"),
                     fmt::format("{} attention has no random features", options_.pattern.str()));
  }
  features_.copy_(orthogonal_random_features(features_.size(0), features_.size(1), gen));
}

Tensor MultiHeadSelfAttention::phi(const Tensor& x, bool query) const {
  return options_.pattern.is_performer() ? tinygpt::performer_features(x, features_, query)
                                         : elu_plus_one(x);
}

Tensor MultiHeadSelfAttention::fused_performer(const Tensor& packed) const {
  const int64_t b = packed.size(0), t = packed.size(1), h = options_.n_heads,
                kvh = options_.kv_heads(), d = options_.head_width(), m = features_.size(0);
  const auto features_of = [&](int64_t first, int64_t heads, bool query) {
    const Tensor x = reshape(narrow(packed, 2, first, heads * d), {b, t, heads, d});
    return reshape(phi(x, query), {b, t, heads * m});
  };
  const Tensor fq = features_of(0, h, true), fk = features_of(h * d, kvh, false);
  const Tensor v = narrow(packed, 2, (h + kvh) * d, kvh * d);
  return causal_feature_attention(concat({fq, fk, v}, 2), h, kvh, m);
}

void redraw_performer_features(Module& model, int64_t step, uint64_t seed) {
  int64_t index = 0;
  const std::function<void(Module&)> visit = [&](Module& m) {
    if (auto* attn = dynamic_cast<MultiHeadSelfAttention*>(&m)) {
      const int64_t every = attn->options().pattern.redraw_every;
      if (attn->options().pattern.is_performer() && every > 0 && step > 0 && step % every == 0) {
        Generator gen(seed ^ (0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(step + 1)) ^
                      (0xbf58476d1ce4e5b9ULL * static_cast<uint64_t>(index + 1)));
        attn->redraw_features(gen);
      }
      ++index;
    }
    for (const auto& [_, child] : m.children()) visit(*child);
  };
  visit(model);
}

Tensor MultiHeadSelfAttention::forward(const Tensor& x, const std::vector<int64_t>& lengths,
                                       KVCache* cache) {
  const int64_t c = options_.d_model, h = options_.n_heads, d = options_.head_width(), qc = h * d;
  if (x.ndim() != 3 || x.size(2) != c) {
    throw ShapeError(Operation("MultiHeadSelfAttention"), fmt::format("expects x (B,T,{}), got {}", c,
                                 x.shape().str()));
  }
  const int64_t b = x.size(0), t = x.size(1);
  if (!options_.causal && cache != nullptr) {
    throw ValueError(Operation("MultiHeadSelfAttention"), "a KV cache continues causal attention; this "
                     "attention is not causal");
  }
  if (!lengths.empty() && cache != nullptr && (cache->ring > 0 || cache->recurrent)) {
    throw ValueError(Operation("MultiHeadSelfAttention"), fmt::format("padding lengths need a cache that "
                                 "keeps every position, not a {} cache",
                                 cache->recurrent ? "recurrent" : "ring"));
  }
  if (!lengths.empty() && static_cast<int64_t>(lengths.size()) != b) {
    throw ShapeError(Operation("MultiHeadSelfAttention"), fmt::format("{} lengths for a batch of {}",
                                 lengths.size(), b));
  }
  const int64_t kvh = options_.kv_heads(), kv = kvh * d;
  const bool alibi = options_.position == PositionEmbedding::alibi;
  const bool rope = options_.position == PositionEmbedding::rope;
  const bool hooked = hooks_ != nullptr && hooks_->attention_hooked();
  // The key bias adds q.b_k to every score of a query's row, and softmax ignores a shift of the
  // whole row, so b_k's exact gradient is zero, unless RoPE turns each key by its position or a
  // hook edits q, k or the weights. Computed in floats it is rounding noise (~1e-9) that AdamW,
  // dividing each gradient by its own size, turns into full-size steps: a random walk of a weight
  // that does nothing, different for a batch taken whole, in micro-batches or over ranks. So the
  // key bias enters detached, and its gradient is the exact zero. Linear attention has no
  // softmax: there the key bias changes every weight and trains.
  Tensor bias = c_attn->bias;
  if (bias.defined() && !rope && !hooked && !options_.pattern.is_linear()) {
    const std::vector<Tensor> qkv = split(bias, {qc, kv, kv}, 0);
    bias = concat({qkv[0], qkv[1].detach(), qkv[2]}, 0);
  }
  Tensor packed = c_attn->forward(x, bias);  // (B,T,C+2KV)
  if (rope) {
    // q and k turn by their absolute positions: with a cache these continue the cached ones.
    packed = rotary_embedding(packed, d, qc + kv, cache != nullptr ? cache->seen : 0,
                              options_.rope_theta);
  }
  if (!options_.scale_scores) {
    // Every path divides q.k by sqrt(d); queries made sqrt(d) times longer cancel it there.
    packed = concat({narrow(packed, 2, 0, qc) * std::sqrt(static_cast<double>(d)),
                     narrow(packed, 2, qc, 2 * kv)}, 2);
  }
  const bool dropping = is_training() && options_.dropout > 0.0;
  last_weights_ = Tensor();
  if (options_.causal && lengths.empty() && cache == nullptr && !dropping && !keep_weights_ &&
      !hooked) {
    const Tensor y = options_.pattern.is_performer() ? fused_performer(packed)
                     : options_.pattern.is_linear()  ? causal_linear_attention(packed, h, kvh)
                     : causal_self_attention(packed, h, kvh, alibi, options_.pattern);
    return resid_dropout->forward(c_proj->forward(y));
  }
  // (B,T,C+2KV) -> q (B,H,T,d), k and v (B,Hkv,T,d): every head from one projection.
  const std::vector<Tensor> parts = split(packed, {qc, kv, kv}, 2);
  const auto heads = [&](const Tensor& part, int64_t n) {
    return permute(reshape(part, {b, t, n, d}), {0, 2, 1, 3});
  };
  Tensor q = heads(parts[0], h);
  Tensor k = heads(parts[1], kvh);
  Tensor v = heads(parts[2], kvh);
  if (cache != nullptr && cache->recurrent) return forward_recurrent(q, k, v, *cache);
  std::vector<int64_t> key_positions;  // empty: key j at position j
  const int64_t first_query = cache != nullptr ? cache->seen : 0;
  if (cache != nullptr) {
    KVCache::Attended kept = cache->extend(k, v);  // (B,Hkv,Tk,d)
    k = kept.k;
    v = kept.v;
    key_positions = std::move(kept.positions);
  }
  if (hooked) {
    q = hooks_->run(HookPoint::attn_q, q);
    k = hooks_->run(HookPoint::attn_k, k);  // (B,Hkv,Tk,d)
    v = hooks_->run(HookPoint::attn_v, v);
  }
  k = repeat_heads(k, h / kvh);  // (B,H,Tk,d): query head i reads key/value head i / (H / Hkv)
  v = repeat_heads(v, h / kvh);
  const int64_t tk = k.size(2);
  Tensor mask;
  if (options_.causal) {
    mask = key_positions.empty()
               ? pattern_mask(options_.pattern, t, tk)
               : pattern_mask(options_.pattern, first_query, t, key_positions);  // (T,Tk)
  }
  if (!lengths.empty()) {
    const Tensor pad = padding_mask(lengths, tk);  // (B,1,1,Tk)
    mask = mask.defined() ? mask + pad : pad;      // (B,1,T,Tk)
  }
  Hook edit_pattern;
  if (hooked && hooks_->has(HookPoint::attn_pattern)) {
    edit_pattern = [this](const Tensor& w) { return hooks_->run(HookPoint::attn_pattern, w); };
  }
  auto [y, weights] =
      options_.pattern.is_linear()
          ? feature_attention(phi(q, true), phi(k, false), v, mask, options_.dropout,
                              is_training(), noise_.get(), edit_pattern)
          : scaled_dot_product_attention(q, k, v, mask, options_.dropout, is_training(),
                                         noise_.get(), alibi, edit_pattern, key_positions,
                                         first_query);
  last_weights_ = weights.detach();
  if (hooked) y = hooks_->run(HookPoint::attn_z, y);
  return project_heads(y);
}

Tensor MultiHeadSelfAttention::project_heads(const Tensor& y) {
  // (B,H,T,d) -> (B,T,H,d) -> (B,T,C)
  const Tensor merged = reshape(permute(y, {0, 2, 1, 3}), {y.size(0), y.size(2), y.size(1) * y.size(3)});
  return resid_dropout->forward(c_proj->forward(merged));
}

// Linear attention's decoding from a recurrent cache: no keys kept, so no weights to keep or
// edit, and no dropout (generation runs in eval mode).
Tensor MultiHeadSelfAttention::forward_recurrent(Tensor q, Tensor k, Tensor v, KVCache& cache) {
  const bool hooked = hooks_ != nullptr && hooks_->attention_hooked();
  if (!options_.pattern.is_linear() || (is_training() && options_.dropout > 0.0) ||
      (hooked && hooks_->has(HookPoint::attn_pattern))) {
    throw ValueError(Operation("MultiHeadSelfAttention"),
                     fmt::format("a recurrent cache runs linear attention "
                                 "without dropout or an attn.pattern hook ({} attention{}{})",
                                 options_.pattern.str(),
                                 is_training() && options_.dropout > 0.0 ? ", dropout" : "",
                                 hooked && hooks_->has(HookPoint::attn_pattern) ? ", hook" : ""));
  }
  if (hooked) {
    q = hooks_->run(HookPoint::attn_q, q);
    k = hooks_->run(HookPoint::attn_k, k);
    v = hooks_->run(HookPoint::attn_v, v);
  }
  Tensor y = recurrent_feature_attention(phi(q, true), phi(k, false), v, cache);  // (B,H,T,d)
  if (hooked) y = hooks_->run(HookPoint::attn_z, y);
  return project_heads(y);
}

}  // namespace tinygpt::nn
