#include <cmath>
#include <numeric>
#include <set>

#include <catch2/catch.hpp>

#include "data/message_contains.hpp"
#include "tinygpt/autograd/error.hpp"
#include "tinygpt/data/dataset.hpp"

using namespace tinygpt;
using namespace tinygpt::data;
using tinygpt::testing::MessageContains;

namespace {

// Token i is `first + i`, so a batch shows exactly which positions it read.
std::vector<int64_t> counting_tokens(int64_t n, int64_t first = 0) {
  std::vector<int64_t> tokens(static_cast<size_t>(n));
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

std::vector<int64_t> ids(const Tensor& t) {
  const int64_t* p = t.data<int64_t>();
  return {p, p + t.numel()};
}

}  // namespace

TEST_CASE("dataset splits the first part for train and the rest for val", "[data][dataset]") {
  const TextDataset ds(counting_tokens(100), 4, 0.1);
  CHECK(ds.size(Split::train) == 90);
  CHECK(ds.size(Split::val) == 10);
  CHECK(ds.size(Split::all) == 100);
  CHECK(ds.window_batch(Split::val, 0, 1).inputs.at({0, 0}) == 90);

  const TextDataset no_val(counting_tokens(100), 4, 0.0);
  CHECK(no_val.size(Split::train) == 100);
  CHECK(no_val.size(Split::val) == 0);
  CHECK(no_val.num_windows(Split::val) == 0);
}

TEST_CASE("dataset says which ids occur in either split", "[data][dataset]") {
  std::vector<int64_t> tokens(100, 1);
  tokens.back() = 4;  // in the val split only
  const TextDataset ds(tokens, 4, 0.1);
  CHECK(ds.occurring_ids(6) == std::vector<bool>{false, true, false, false, true, false});
  CHECK(ds.occurring_ids(3) == std::vector<bool>{false, true, false});  // ids past it are left out
}

TEST_CASE("dataset batches are (B, T) i64 with targets the inputs shifted by one",
          "[data][dataset]") {
  const TextDataset ds(counting_tokens(200, 1000), 8, 0.25);
  Generator gen(3);
  for (Split split : {Split::train, Split::val, Split::all}) {
    const Batch batch = ds.sample_batch(split, 5, gen);
    CHECK(batch.inputs.shape() == Shape{5, 8});
    CHECK(batch.targets.shape() == Shape{5, 8});
    CHECK(batch.inputs.dtype() == DType::i64);
    CHECK(batch.targets.dtype() == DType::i64);
    const std::vector<int64_t> in = ids(batch.inputs), out = ids(batch.targets);
    for (size_t i = 0; i < in.size(); ++i) CHECK(out[i] == in[i] + 1);
  }
}

TEST_CASE("dataset sample_batch draws one randint per row in row order", "[data][dataset]") {
  const TextDataset ds(counting_tokens(100), 10, 0.2);  // train 80 tokens, val 20
  Generator gen(42), replay(42);
  const Batch train = ds.sample_batch(Split::train, 6, gen);
  const Batch val = ds.sample_batch(Split::val, 3, gen);
  for (int64_t b = 0; b < 6; ++b) CHECK(train.inputs.at({b, 0}) == replay.randint(80 - 10));
  for (int64_t b = 0; b < 3; ++b) CHECK(val.inputs.at({b, 0}) == 80 + replay.randint(20 - 10));
  CHECK(gen.state() == replay.state());
}

TEST_CASE("dataset sample_batch is the same for the same generator state", "[data][dataset]") {
  const TextDataset ds(counting_tokens(500), 16);
  Generator a(9), b(9);
  CHECK(ids(ds.sample_batch(Split::train, 4, a).inputs) ==
        ids(ds.sample_batch(Split::train, 4, b).inputs));
  Generator resumed;
  resumed.set_state(a.state());
  CHECK(ids(ds.sample_batch(Split::train, 4, a).inputs) ==
        ids(ds.sample_batch(Split::train, 4, resumed).inputs));
}

TEST_CASE("dataset sample_batch reaches every valid start and nothing beyond", "[data][dataset]") {
  const int64_t n = 8, T = 5;  // starts 0, 1, 2: the last window predicts the last token
  const TextDataset ds(counting_tokens(n), T, 0.0);
  Generator gen(1);
  std::set<int64_t> starts;
  for (int i = 0; i < 50; ++i) {
    const Batch batch = ds.sample_batch(Split::train, 4, gen);
    for (int64_t b = 0; b < 4; ++b) starts.insert(static_cast<int64_t>(batch.inputs.at({b, 0})));
    for (int64_t target : ids(batch.targets)) CHECK(target < n);
  }
  CHECK(starts == std::set<int64_t>{0, 1, 2});
}

TEST_CASE("dataset windows are non-overlapping and drop the last partial one", "[data][dataset]") {
  const TextDataset ds(counting_tokens(11, 10), 3, 0.0);  // tokens 10..20
  REQUIRE(ds.num_windows(Split::train) == 3);             // floor((11 - 1) / 3)
  const Batch all = ds.window_batch(Split::train, 0, 3);
  CHECK(ids(all.inputs) == std::vector<int64_t>{10, 11, 12, 13, 14, 15, 16, 17, 18});
  CHECK(ids(all.targets) == std::vector<int64_t>{11, 12, 13, 14, 15, 16, 17, 18, 19});
  const Batch tail = ds.window_batch(Split::train, 1, 2);
  CHECK(tail.inputs.shape() == Shape{2, 3});
  CHECK(ids(tail.inputs) == std::vector<int64_t>{13, 14, 15, 16, 17, 18});
}

TEST_CASE("dataset windows of the val split and of the whole stream", "[data][dataset]") {
  const TextDataset ds(counting_tokens(20), 2, 0.25);  // train 0..14, val 15..19
  REQUIRE(ds.num_windows(Split::val) == 2);
  const Batch val = ds.window_batch(Split::val, 0, 2);
  CHECK(ids(val.inputs) == std::vector<int64_t>{15, 16, 17, 18});
  CHECK(ids(val.targets) == std::vector<int64_t>{16, 17, 18, 19});
  CHECK(ds.num_windows(Split::train) == 7);
  CHECK(ds.num_windows(Split::all) == 9);
  CHECK(ids(ds.window_batch(Split::all, 8, 1).targets) == std::vector<int64_t>{17, 18});
}

TEST_CASE("dataset window_batch rejects ranges outside the windows", "[data][dataset]") {
  const TextDataset ds(counting_tokens(11), 3, 0.0);  // 3 windows
  CHECK_THROWS_MATCHES(
      ds.window_batch(Split::train, 2, 2), IndexError,
      MessageContains("windows [2, 4)") && MessageContains("3 windows of the train split"));
  CHECK_THROWS_AS(ds.window_batch(Split::train, -1, 1), IndexError);
  CHECK_THROWS_AS(ds.window_batch(Split::train, 0, 0), IndexError);
  CHECK_THROWS_AS(ds.window_batch(Split::val, 0, 1), IndexError);
}

TEST_CASE("dataset rejects a bad block_size, val_fraction or batch_size", "[data][dataset]") {
  CHECK_THROWS_MATCHES(TextDataset(counting_tokens(100), 0), ValueError,
                       MessageContains("block_size must be >= 1, got 0"));
  for (double bad : {-0.1, 1.0, std::nan("")}) {
    CHECK_THROWS_MATCHES(TextDataset(counting_tokens(100), 4, bad), ValueError,
                         MessageContains("val_fraction must be in [0, 1)"));
  }
  const TextDataset ds(counting_tokens(100), 4);
  Generator gen;
  CHECK_THROWS_MATCHES(ds.sample_batch(Split::train, 0, gen), ValueError,
                       MessageContains("batch_size must be >= 1"));
}

TEST_CASE("dataset says which split is too short for the block size", "[data][dataset]") {
  CHECK_NOTHROW(TextDataset(counting_tokens(10), 9, 0.0));
  CHECK_THROWS_MATCHES(TextDataset(counting_tokens(10), 10, 0.0), ValueError,
                       MessageContains("the train split has 10 tokens but block_size 10 needs at "
                                       "least 11"));
  CHECK_THROWS_MATCHES(TextDataset(counting_tokens(100), 16, 0.1), ValueError,
                       MessageContains("the val split has 10 tokens but block_size 16 needs at "
                                       "least 17"));
}

TEST_CASE("dataset without a val split cannot sample from it", "[data][dataset]") {
  const TextDataset ds(counting_tokens(50), 4, 0.0);
  Generator gen;
  CHECK_THROWS_MATCHES(ds.sample_batch(Split::val, 1, gen), ValueError,
                       MessageContains("the val split has 0 tokens"));
}

TEST_CASE("split names parse back and unknown names are rejected", "[data][dataset]") {
  for (Split split : {Split::train, Split::val, Split::all}) {
    CHECK(parse_split(split_name(split)) == split);
  }
  CHECK_THROWS_MATCHES(parse_split("test"), ValueError,
                       MessageContains("unknown split 'test' (expected train, val or all)"));
}
