// Tensor basics: creation, the seeded generator, queries, printing, copies, the allocator cache.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "autograd_test_utils.hpp"
#include "tinygpt/autograd/memory.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

using Values = std::vector<double>;

TEST_CASE("zeros, ones and full fill every element in every dtype", "[tensor]") {
  for (DType dtype : {DType::f32, DType::f64, DType::i64}) {
    CAPTURE(dtype_name(dtype));
    REQUIRE(Tensor::zeros({2, 3}, dtype).to_vector() == Values(6, 0.0));
    REQUIRE(Tensor::ones({4}, dtype).to_vector() == Values(4, 1.0));
    REQUIRE(Tensor::full({3, 1}, 7.0, dtype).to_vector() == Values(3, 7.0));
    REQUIRE(Tensor::full({2}, 7.0, dtype).dtype() == dtype);
  }
  REQUIRE(Tensor::full({2}, 2.5, DType::f32).to_vector() == Values{2.5, 2.5});
  const Tensor s = Tensor::scalar(3.25, DType::f64);
  REQUIRE(s.ndim() == 0);
  REQUIRE(s.numel() == 1);
  REQUIRE(s.item() == 3.25);
}

TEST_CASE("from keeps row-major order and converts to the dtype", "[tensor]") {
  const Tensor t = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f64);
  REQUIRE(t.at({0, 2}) == 3.0);
  REQUIRE(t.at({1, 0}) == 4.0);
  REQUIRE(Tensor::from({1.75, -2.5}, {2}, DType::i64).to_vector() == Values{1, -2});
  REQUIRE(Tensor::from({0.1}, {1}, DType::f32).item() == static_cast<double>(0.1f));
  const Tensor ids = Tensor::from_ids({5, 0, 9}, {3});
  REQUIRE(ids.dtype() == DType::i64);
  REQUIRE(ids.data<int64_t>()[2] == 9);
  REQUIRE_THROWS_AS(Tensor::from({1, 2, 3}, {2, 2}), ShapeError);
  REQUIRE_THROWS_AS(Tensor::from_ids({1, 2, 3}, {2}), ShapeError);
}

// GCC 12.2 with AVX-512 turned {1, 1, 0, 0} into {1, 1, 1, 1}; CMakeLists.txt probes for it and
// drops AVX-512 from -march=native. This pins the symptom in case that probe goes away.
TEST_CASE("constant vectors with a repeated low half and a zero high half survive codegen",
          "[tensor]") {
  REQUIRE(Tensor::from_ids({1, 1, 0, 0}, {4}).to_vector() == Values{1, 1, 0, 0});
  REQUIRE(Tensor::from({2, 2, 2, 2, 0, 0, 0, 0}, {8}, DType::f32).to_vector() ==
          Values{2, 2, 2, 2, 0, 0, 0, 0});
  const std::vector<int32_t> words{1, 1, 1, 1, 0, 0, 0, 0};
  REQUIRE(words[4] == 0);
}

TEST_CASE("arange counts from zero in every dtype", "[tensor]") {
  for (DType dtype : {DType::f32, DType::f64, DType::i64}) {
    const Tensor t = Tensor::arange(5, dtype);
    REQUIRE(t.shape() == Shape{5});
    REQUIRE(t.dtype() == dtype);
    REQUIRE(t.to_vector() == Values{0, 1, 2, 3, 4});
  }
  REQUIRE(Tensor::arange(0).numel() == 0);
}

TEST_CASE("randn and uniform repeat with the same seed and differ with another", "[tensor]") {
  Generator g1(7), g2(7), g3(8);
  const Values a = Tensor::randn({50}, g1, DType::f64, 1.0, 2.0).to_vector();
  REQUIRE(a == Tensor::randn({50}, g2, DType::f64, 1.0, 2.0).to_vector());
  REQUIRE(a != Tensor::randn({50}, g3, DType::f64, 1.0, 2.0).to_vector());
  // The generator moved on: the next draw differs from the first.
  REQUIRE(a != Tensor::randn({50}, g1, DType::f64, 1.0, 2.0).to_vector());

  Generator u1(3), u2(3);
  const Values u = Tensor::uniform({1000}, u1, -2.0, 5.0, DType::f64).to_vector();
  REQUIRE(u == Tensor::uniform({1000}, u2, -2.0, 5.0, DType::f64).to_vector());
  for (double v : u) REQUIRE((v >= -2.0 && v < 5.0));
  // f32 draws are the f64 stream rounded.
  Generator f1(3), f2(3);
  const Values single = Tensor::randn({4}, f1, DType::f32).to_vector();
  const Values dbl = Tensor::randn({4}, f2, DType::f64).to_vector();
  for (size_t i = 0; i < 4; ++i) {
    REQUIRE(single[i] == static_cast<double>(static_cast<float>(dbl[i])));
  }
}

TEST_CASE("randn has roughly the requested mean and std", "[tensor]") {
  Generator gen(11);
  const Tensor t = Tensor::randn({20000}, gen, DType::f64, 3.0, 0.5);
  const double m = mean(t).item();
  const double var = mean(pow(t - m, 2.0)).item();
  REQUIRE(m == Approx(3.0).margin(0.02));
  REQUIRE(std::sqrt(var) == Approx(0.5).margin(0.02));
}

// Reference values from an independent implementation of splitmix64 + xoshiro256** and
// Box-Muller with u1 = 1 - uniform(): any change of the stream breaks every seeded run.
TEST_CASE("Generator(42) stream is pinned: next_u64, uniform and normal", "[tensor]") {
  Generator g(42);
  REQUIRE(g.next_u64() == 0x15780b2e0c2ec716ULL);
  REQUIRE(g.next_u64() == 0x6104d9866d113a7eULL);
  REQUIRE(g.next_u64() == 0xae17533239e499a1ULL);
  Generator zero(0);
  REQUIRE(zero.next_u64() == 0x99ec5f36cb75f2b4ULL);
  REQUIRE(zero.next_u64() == 0xbf6e1f784956452aULL);
  Generator n(42);
  REQUIRE(n.normal() == Approx(-0.303263064678738).epsilon(1e-14));
  REQUIRE(n.normal() == Approx(1.3438117634372806).epsilon(1e-14));
  REQUIRE(n.normal() == Approx(0.3834617912676943).epsilon(1e-14));
  Generator u(7);
  REQUIRE(u.uniform() == 0.7005764821796896);
  REQUIRE(u.uniform() == 0.2787512294737843);
}

TEST_CASE("Generator state round-trips and randint stays in range", "[tensor]") {
  Generator g(5);
  g.next_u64();
  const Generator::State saved = g.state();
  const uint64_t next = g.next_u64();
  Generator h(999);
  h.set_state(saved);
  REQUIRE(h.next_u64() == next);

  std::vector<int> seen(7, 0);
  for (int i = 0; i < 700; ++i) {
    const int64_t r = g.randint(7);
    REQUIRE((r >= 0 && r < 7));
    ++seen[static_cast<size_t>(r)];
  }
  for (int count : seen) REQUIRE(count > 0);
  REQUIRE_THROWS_AS(g.randint(0), ValueError);
}

TEST_CASE("Generator shuffle_front draws distinct items, one randint each, in draw order",
          "[tensor]") {
  std::vector<int> items = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  Generator g(3), reference(3);
  g.shuffle_front(items, 4);
  std::vector<int> expected = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  for (int64_t i = 0; i < 4; ++i) {
    std::swap(expected[static_cast<size_t>(i)], expected[static_cast<size_t>(i + reference.randint(10 - i))]);
  }
  CHECK(items == expected);
  CHECK(g.state() == reference.state());
  std::vector<int> sorted = items;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});  // a permutation
  CHECK_THROWS_WITH(g.shuffle_front(items, 11), Catch::Contains("cannot draw 11 of 10"));
  CHECK_THROWS_AS(g.shuffle_front(items, -1), ValueError);
}

TEST_CASE("shape, size, ndim and numel queries", "[tensor]") {
  const Tensor t = Tensor::zeros({2, 3, 4});
  REQUIRE(t.ndim() == 3);
  REQUIRE(t.numel() == 24);
  REQUIRE(t.size(0) == 2);
  REQUIRE(t.size(-1) == 4);
  REQUIRE(t.size(-3) == 2);
  REQUIRE(t.shape().str() == "(2, 3, 4)");
  REQUIRE(t.shape().strides() == Shape{12, 4, 1});
  REQUIRE(Shape{5}.str() == "(5,)");
  REQUIRE(Shape{}.str() == "()");
  REQUIRE(Shape{}.numel() == 1);
  REQUIRE(Shape{3, 0}.numel() == 0);
  REQUIRE(t.dtype() == DType::f32);
  REQUIRE_THROWS_AS(t.size(3), ShapeError);
  REQUIRE_THROWS_AS(t.size(-4), ShapeError);
  REQUIRE_THROWS_AS(Shape({1, 1, 1, 1, 1, 1, 1, 1, 1}), ShapeError);
  REQUIRE_THROWS_AS(Shape({2, -1}), ShapeError);
}

TEST_CASE("item and at reject a wrong element count or index", "[tensor][errors]") {
  const Tensor t = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f64);
  REQUIRE_THROWS_NAMING(t.item(), ShapeError, Contains("item") && Contains("(2, 3)"));
  REQUIRE_THROWS_NAMING(t.at({2, 0}), IndexError,
                        Contains("at") && Contains("index 2") && Contains("(2, 3)"));
  REQUIRE_THROWS_NAMING(t.at({0, -1}), IndexError, Contains("at") && Contains("(2, 3)"));
  REQUIRE_THROWS_NAMING(t.at({1}), IndexError, Contains("1 indices") && Contains("(2, 3)"));
  REQUIRE(Tensor::from({9}, {1, 1}).item() == 9.0);
  REQUIRE(t.at({1, 2}) == 6.0);
}

TEST_CASE("data<T> checks the element type", "[tensor][errors]") {
  Tensor t = Tensor::zeros({2, 2}, DType::f32);
  REQUIRE(t.data<float>() != nullptr);
  REQUIRE_THROWS_NAMING(t.data<double>(), ValueError,
                        Contains("(2, 2)") && Contains("f32") && Contains("f64"));
  REQUIRE_THROWS_AS(t.data<int64_t>(), ValueError);
}

TEST_CASE("an undefined tensor prints as such and throws on use", "[tensor][errors]") {
  const Tensor t;
  REQUIRE_FALSE(t.defined());
  REQUIRE(t.str() == "tensor(undefined)");
  REQUIRE_THROWS_AS(t.shape(), ValueError);
  REQUIRE_THROWS_AS(t.item(), ValueError);
  REQUIRE_THROWS_AS(Tensor::ones({2}) + t, ValueError);
}

TEST_CASE("printing through fmt shows values, shape, dtype and grad_fn", "[tensor]") {
  const Tensor t = Tensor::from({1, 2.5, -3, 4}, {2, 2}, DType::f64);
  REQUIRE(fmt::format("{}", t) ==
          "tensor([[1.0000, 2.5000],\n        [-3.0000, 4.0000]], shape=(2, 2), dtype=f64)");
  REQUIRE(fmt::format("{}", Tensor::from_ids({3, -1}, {2})) ==
          "tensor([3, -1], shape=(2,), dtype=i64)");
  REQUIRE(fmt::format("{}", Tensor::scalar(0.5)) == "tensor(0.5000, shape=(), dtype=f32)");
  // Long axes show their three first and three last elements.
  REQUIRE(fmt::format("{}", Tensor::arange(10, DType::i64)) ==
          "tensor([0, 1, 2, ..., 7, 8, 9], shape=(10,), dtype=i64)");
  REQUIRE(fmt::format("{}", Tensor::zeros({0})) == "tensor([], shape=(0,), dtype=f32)");
  const Tensor x = Tensor::ones({2}, DType::f64).set_requires_grad();
  REQUIRE(fmt::format("{}", exp(x)) ==
          "tensor([2.7183, 2.7183], shape=(2,), dtype=f64, grad_fn=exp)");
  REQUIRE(fmt::format("{:>12}", Shape{2, 3}) == "      (2, 3)");
}

TEST_CASE("to(DType) converts into a detached copy", "[tensor]") {
  const Tensor x = Tensor::from({1.5, -2.75, 3}, {3}, DType::f64).set_requires_grad();
  const Tensor single = x.to(DType::f32);
  REQUIRE(single.dtype() == DType::f32);
  REQUIRE(single.to_vector() == Values{1.5, -2.75, 3});
  REQUIRE_FALSE(single.requires_grad());
  REQUIRE(x.to(DType::i64).to_vector() == Values{1, -2, 3});  // truncates toward zero
  REQUIRE(Tensor::from_ids({4, 5}, {2}).to(DType::f64).to_vector() == Values{4, 5});
}

TEST_CASE("clone is a deep, detached copy and detach shares the data", "[tensor]") {
  Tensor x = Tensor::from({1, 2, 3}, {3}, DType::f64).set_requires_grad();
  Tensor c = x.clone();
  Tensor d = x.detach();
  REQUIRE_FALSE(c.requires_grad());
  REQUIRE_FALSE(d.requires_grad());
  REQUIRE(d.is_leaf());
  x.data<double>()[0] = 10.0;
  REQUIRE(c.to_vector() == Values{1, 2, 3});
  REQUIRE(d.to_vector() == Values{10, 2, 3});
}

TEST_CASE("copy_ and fill_ write in place, converting the dtype", "[tensor]") {
  Tensor dst = Tensor::zeros({2, 2}, DType::f32);
  const float* before = dst.data<float>();
  dst.copy_(Tensor::from({1, 2, 3, 4.5}, {2, 2}, DType::f64));
  REQUIRE(dst.data<float>() == before);
  REQUIRE(dst.to_vector() == Values{1, 2, 3, 4.5});
  dst.copy_(Tensor::from_ids({7, 8, 9, 10}, {2, 2}));
  REQUIRE(dst.to_vector() == Values{7, 8, 9, 10});
  dst.fill_(-1.5);
  REQUIRE(dst.to_vector() == Values(4, -1.5));
  dst.copy_(dst);  // copying onto itself changes nothing
  REQUIRE(dst.to_vector() == Values(4, -1.5));
  Tensor empty = Tensor::zeros({0, 3});
  empty.copy_(Tensor::zeros({0, 3}, DType::f64));
  REQUIRE(empty.clone().numel() == 0);
  REQUIRE_THROWS_NAMING(dst.copy_(Tensor::zeros({4})), ShapeError,
                        Contains("copy_") && Contains("(4,)") && Contains("(2, 2)"));
}

TEST_CASE("set_requires_grad only marks floating-point leaves", "[tensor][errors]") {
  Tensor ids = Tensor::from_ids({1, 2}, {2});
  REQUIRE_THROWS_NAMING(ids.set_requires_grad(), ValueError, Contains("i64"));
  Tensor x = Tensor::ones({2}, DType::f64).set_requires_grad();
  REQUIRE(x.requires_grad());
  REQUIRE(x.is_leaf());
  Tensor y = x * 2.0;
  REQUIRE_FALSE(y.is_leaf());
  REQUIRE(std::string(y.grad_fn_name()) == "mul_scalar");
  REQUIRE(std::string(x.grad_fn_name()).empty());
  REQUIRE_THROWS_NAMING(y.set_requires_grad(false), GraphError,
                        Contains("set_requires_grad") && Contains("mul_scalar"));
  x.set_requires_grad(false);
  REQUIRE_FALSE(x.requires_grad());
}

TEST_CASE("memory_stats shows cache hits when the same shapes are allocated again",
          "[tensor]") {
  // A size no other tensor in this process uses.
  const Shape shape{1237, 3};
  { const Tensor warm = Tensor::empty(shape, DType::f64); }
  const MemoryStats before = memory_stats();
  for (int i = 0; i < 5; ++i) {
    const Tensor t = Tensor::zeros(shape, DType::f64);
    REQUIRE(memory_stats().bytes_in_use >= before.bytes_in_use + 1237 * 3 * 8);
  }
  const MemoryStats after = memory_stats();
  REQUIRE(after.cache_hits - before.cache_hits == 5);
  REQUIRE(after.system_allocations == before.system_allocations);
  REQUIRE(after.bytes_in_use == before.bytes_in_use);
  REQUIRE(after.peak_bytes_in_use >= before.bytes_in_use + 1237 * 3 * 8);

  empty_cache();
  REQUIRE(memory_stats().bytes_cached == 0);
  { const Tensor fresh = Tensor::empty(shape, DType::f64); }
  REQUIRE(memory_stats().system_allocations == after.system_allocations + 1);
  reset_peak_memory();
  REQUIRE(memory_stats().peak_bytes_in_use == memory_stats().bytes_in_use);
}

TEST_CASE("a tensor buffer of 4 MiB or more starts on a 2 MiB boundary, for huge pages", "[tensor]") {
  const Tensor large = Tensor::full({int64_t{1} << 20}, 1.5f);  // 4 MiB of f32
  CHECK(reinterpret_cast<std::uintptr_t>(large.data<float>()) % (std::uintptr_t{2} << 20) == 0);
  CHECK(large.data<float>()[(int64_t{1} << 20) - 1] == 1.5f);
  const int64_t bytes = int64_t{5} << 20;
  std::vector<char> plain(static_cast<size_t>(bytes), 'x');
  advise_huge_pages(plain.data(), plain.size());  // an unaligned range: its whole 2 MiB pages only
  CHECK(std::count(plain.begin(), plain.end(), 'x') == bytes);
}

TEST_CASE("shapes that never repeat keep the cache bounded, not every freed block",
          "[tensor]") {
  // As generation's growing key/value cache does: each step frees a block one size larger than
  // the last. 600 blocks from 1 to 3 MB would cache ~1.2 GB if every one stayed.
  empty_cache();
  reset_peak_memory();
  for (int64_t i = 0; i < 600; ++i) {
    const Tensor t = Tensor::empty({(int64_t{1} << 20) / 8 + i * 512, 8}, DType::f32);  // ~4 MB
  }
  const MemoryStats stats = memory_stats();
  INFO("cached bytes " << stats.bytes_cached << ", peak in use " << stats.peak_bytes_in_use);
  REQUIRE(stats.bytes_cached <= std::max<int64_t>(int64_t{256} << 20, 2 * stats.peak_bytes_in_use));
  empty_cache();
}
