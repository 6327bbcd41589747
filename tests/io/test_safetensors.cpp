#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include "scratch_dir.hpp"
#include "threads_scope.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/io/safetensors.hpp"
#include "tinygpt/io/sha256.hpp"

using namespace tinygpt;
using namespace tinygpt::io;
using Catch::Matchers::Contains;
using tinygpt::testing::ScratchDir;
using tinygpt::testing::ThreadsScope;

namespace {

// The 8-byte little-endian length prefix, then the header exactly as given (no padding), then
// the data buffer: how the malformed files below are made.
std::string file_with_header(const std::string& header, const std::string& data = "") {
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return bytes + header + data;
}

// The FormatError message `decode` gives; fails the test if it decodes or throws anything else.
template <class Decode>
std::string rejection_by(Decode&& decode) {
  try {
    decode();
  } catch (const FormatError& e) {
    return e.what();
  }
  FAIL("the bytes were accepted");
  return "";
}

// The FormatError message decoding `bytes` gives, the same whether they are decoded in memory or
// read from a file (load_safetensors, which reads the header first and then each tensor in place).
std::string rejection(const std::string& bytes) {
  ScratchDir dir;
  const std::string path = dir.file("bad.safetensors");
  write_file_synced(path, bytes);
  const std::string message = rejection_by([&] { decode_safetensors(bytes, path); });
  CHECK(rejection_by([&] { load_safetensors(path); }) == message);
  return message;
}

template <class T>
std::vector<T> elements(const Tensor& t) {
  return {t.data<T>(), t.data<T>() + t.numel()};
}

// Same dtype, same shape and bit-identical elements.
void check_same(const Tensor& actual, const Tensor& expected) {
  REQUIRE(actual.dtype() == expected.dtype());
  REQUIRE(actual.shape() == expected.shape());
  switch (expected.dtype()) {
    case DType::f32:
      CHECK(elements<float>(actual) == elements<float>(expected));
      break;
    case DType::f64:
      CHECK(elements<double>(actual) == elements<double>(expected));
      break;
    case DType::i64:
      CHECK(elements<int64_t>(actual) == elements<int64_t>(expected));
      break;
  }
}

void check_same(const NamedTensors& actual, const NamedTensors& expected) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    CHECK(actual[i].first == expected[i].first);
    check_same(actual[i].second, expected[i].second);
  }
}

NamedTensors sample_tensors() {
  return {
      {"wte", Tensor::from({0.1, -2.5, 1e-30, 3e38, -0.0, 7.0}, {3, 2}, DType::f32)},
      {"scale", Tensor::scalar(3.141592653589793, DType::f64)},
      {"ids", Tensor::from_ids({1, -7, 9007199254740993, std::numeric_limits<int64_t>::min()},
                               {4})},
      {"no_rows", Tensor::zeros({0, 3}, DType::f32)},
      {"h.0.attn.c_attn.weight", Tensor::from({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2}, DType::f64)},
  };
}

}  // namespace

// ---- Round trips ----------------------------------------------------------------------------

TEST_CASE("safetensors round trip keeps f32, f64, i64, 0-d and empty tensors and metadata",
          "[safetensors]") {
  const NamedTensors tensors = sample_tensors();
  const std::map<std::string, std::string> metadata{{"format", "pt"}, {"step", "1200"}};
  const SafetensorsFile file = decode_safetensors(encode_safetensors(tensors, metadata));
  check_same(file.tensors, tensors);
  CHECK(file.metadata == metadata);
  CHECK(file.source == "<memory>");
}

TEST_CASE("safetensors round trip through a file keeps the tensors and names the path",
          "[safetensors][io]") {
  ScratchDir dir;
  const std::string path = dir.file("model.safetensors");
  save_safetensors(path, sample_tensors(), {{"format", "pt"}});
  const SafetensorsFile file = load_safetensors(path);
  check_same(file.tensors, sample_tensors());
  CHECK(file.source == path);
  check_same(file.at("ids"), sample_tensors()[2].second);
  CHECK(dir.entries() == std::set<std::string>{"model.safetensors"});
}

TEST_CASE("safetensors read from a file on one or two threads gives what decoding its bytes does, "
          "and hashes every byte in order", "[safetensors][io]") {
  ScratchDir dir;
  const std::string path = dir.file("model.safetensors");
  // A tensor of several of the reader's pieces (4 MiB), half ones widened after the read, an empty
  // one; the data buffer has a length that is no multiple of anything.
  std::vector<float> many(1'500'001);
  for (size_t i = 0; i < many.size(); ++i) many[i] = std::sin(static_cast<float>(i));
  const std::string large_data(reinterpret_cast<const char*>(many.data()), many.size() * sizeof(float));
  const std::string half("\x00\x3c\x00\xc0\xff\x7b", 6);
  const std::string bytes = file_with_header(
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F16","shape":[3],"data_offsets":[0,6]},)"
      R"("none":{"dtype":"F32","shape":[0],"data_offsets":[6,6]},)"
      R"("large":{"dtype":"F32","shape":[1500001],"data_offsets":[6,6000010]}})",
      half + large_data);
  write_file_synced(path, bytes);
  const SafetensorsFile expected = decode_safetensors(bytes, path);
  for (int threads : {1, 2}) {
    INFO(threads << " threads");
    const ThreadsScope scope(threads);
    Sha256 hash;
    const SafetensorsFile file = read_safetensors(FileReader(path), path, &hash);
    check_same(file.tensors, expected.tensors);
    CHECK(file.metadata == expected.metadata);
    CHECK(file.source == path);
    CHECK(hash.hex_digest() == sha256_hex(bytes));
  }
}

TEST_CASE("safetensors read from a file refuses one cut short while it is read", "[safetensors][io]") {
  ScratchDir dir;
  const std::string path = dir.file("model.safetensors");
  save_safetensors(path, sample_tensors());
  const FileReader file(path);
  write_file_synced(path, read_file(path).substr(0, 100));  // the same file, truncated after it was opened
  CHECK_THAT(rejection_by([&] { read_safetensors(file, path); }),
             Contains(path) && Contains("truncated while it was read"));
}

TEST_CASE("safetensors round trip keeps the order of zero-byte tensors at one offset",
          "[safetensors]") {
  const NamedTensors tensors{{"b", Tensor::zeros({0}, DType::f32)},
                             {"a", Tensor::zeros({2, 0}, DType::i64)},
                             {"c", Tensor::scalar(1.0, DType::f32)}};
  check_same(decode_safetensors(encode_safetensors(tensors)).tensors, tensors);
}

TEST_CASE("safetensors reader returns tensors in data order whatever the header order",
          "[safetensors]") {
  const std::string data("\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00", 16);
  const SafetensorsFile file = decode_safetensors(file_with_header(
      R"( {"second":{"data_offsets":[8,16],"shape":[1],"dtype":"I64"},)"
      R"("first":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}} )",
      data));
  REQUIRE(file.tensors.size() == 2);
  CHECK(file.tensors[0].first == "first");
  CHECK(file.tensors[0].second.item() == 1.0);
  CHECK(file.tensors[1].first == "second");
  CHECK(file.tensors[1].second.item() == 2.0);
}

// ---- Byte layout ------------------------------------------------------------------------------

TEST_CASE("safetensors writer matches the reference library's own test vector byte for byte",
          "[safetensors]") {
  // From huggingface/safetensors' test_serialization_forced_alignement: one F32 tensor of shape
  // [1, 1, 2, 3] holding 0..5, a 65-byte header padded with 7 spaces to 72.
  const std::string expected =
      std::string("\x48\0\0\0\0\0\0\0", 8) +
      R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}})" + "       " +
      std::string("\0\0\0\0" "\0\0\x80\x3f" "\0\0\0\x40" "\0\0\x40\x40" "\0\0\x80\x40"
                  "\0\0\xa0\x40", 24);
  const NamedTensors tensors{{"attn0", reshape(Tensor::arange(6), {1, 1, 2, 3})}};
  CHECK(encode_safetensors(tensors) == expected);
}

TEST_CASE("safetensors writer pins header order, metadata, padding and offsets of a mixed file",
          "[safetensors]") {
  const std::string header =
      R"({"__metadata__":{"format":"pt"},)"
      R"("ids":{"dtype":"I64","shape":[2],"data_offsets":[0,16]},)"
      R"("w":{"dtype":"F32","shape":[],"data_offsets":[16,20]}})";  // 142 bytes
  const std::string expected = std::string("\x90\0\0\0\0\0\0\0", 8) + header + "  " +
                               std::string("\x01\0\0\0\0\0\0\0", 8) + std::string(8, '\xff') +
                               std::string("\0\0\xc0\x3f", 4);
  const NamedTensors tensors{{"ids", Tensor::from_ids({1, -1}, {2})},
                             {"w", Tensor::scalar(1.5, DType::f32)}};
  CHECK(encode_safetensors(tensors, {{"format", "pt"}}) == expected);
}

TEST_CASE("safetensors writer matches the reference for files without tensors", "[safetensors]") {
  // The reference's test_empty vectors: "{}" and a metadata-only header, space padded.
  CHECK(encode_safetensors({}) == std::string("\x08\0\0\0\0\0\0\0{}      ", 16));
  CHECK(encode_safetensors({}, {{"framework", "pt"}}) ==
        std::string("\x28\0\0\0\0\0\0\0", 8) + R"({"__metadata__":{"framework":"pt"}})" +
            "     ");
  CHECK(decode_safetensors(encode_safetensors({}, {{"framework", "pt"}})).tensors.empty());
}

// ---- Writer refusals ----------------------------------------------------------------------

TEST_CASE("safetensors writer refuses duplicate, reserved and non-UTF-8 names and undefined "
          "tensors",
          "[safetensors]") {
  const Tensor t = Tensor::ones({2});
  CHECK_THROWS_WITH(encode_safetensors({{"a", t}, {"a", t}}),
                    Contains("duplicate tensor name 'a'"));
  CHECK_THROWS_WITH(encode_safetensors({{"__metadata__", t}}), Contains("reserved"));
  CHECK_THROWS_WITH(encode_safetensors({{"bad\xff", t}}), Contains("not valid UTF-8"));
  CHECK_THROWS_WITH(encode_safetensors({{"a", t}}, {{"k", "\xc3"}}), Contains("not valid UTF-8"));
  CHECK_THROWS_WITH(encode_safetensors({{"u", Tensor()}}), Contains("tensor 'u' is undefined"));
}

// ---- Reader validation ------------------------------------------------------------------------

namespace {

// `"name":{"dtype":...,"shape":...,"data_offsets":...}` with the fields given as raw JSON.
std::string entry(const std::string& name, const std::string& dtype, const std::string& shape,
                  const std::string& offsets) {
  return "\"" + name + "\":{\"dtype\":" + dtype + ",\"shape\":" + shape +
         ",\"data_offsets\":" + offsets + "}";
}

// A file whose header holds `entries` and whose data buffer is `data_size` zero bytes.
std::string file_of(const std::vector<std::string>& entries, size_t data_size) {
  std::string header = "{";
  for (const std::string& e : entries) header += (header.size() > 1 ? "," : "") + e;
  return file_with_header(header + "}", std::string(data_size, '\0'));
}

}  // namespace

TEST_CASE("safetensors reader rejects a file shorter than the header length", "[safetensors]") {
  CHECK_THAT(rejection("\x08\0\0"), Contains("bad.safetensors") && Contains("truncated"));
}

TEST_CASE("safetensors reader rejects a header length past the end of the file",
          "[safetensors]") {
  const std::string cut = file_of({entry("a", "\"F32\"", "[]", "[0,4]")}, 4).substr(0, 20);
  CHECK_THAT(rejection(cut), Contains("truncated: the header length says"));
}

TEST_CASE("safetensors reader rejects a header length above 100,000,000 bytes", "[safetensors]") {
  const std::string huge("\x01\xe1\xf5\x05\0\0\0\0{}", 10);  // 100,000,001
  CHECK_THAT(rejection(huge), Contains("header length 100000001 is larger than the limit"));
}

TEST_CASE("safetensors reader rejects a header that is not a JSON object", "[safetensors]") {
  CHECK_THAT(rejection(file_with_header("{not json")), Contains("not valid UTF-8 JSON"));
  CHECK_THAT(rejection(file_with_header("[1, 2]")), Contains("header is not a JSON object"));
  CHECK_THAT(rejection(file_with_header("\xef\xbb\xbf{}")), Contains("not a JSON object"));
  CHECK_THAT(rejection(file_with_header(std::string("{}\0\0", 4))),
             Contains("not valid UTF-8 JSON: NUL byte at header offset 2"));
}

TEST_CASE("safetensors reader rejects a header that is not UTF-8", "[safetensors]") {
  CHECK_THAT(rejection(file_with_header("{\"\xff\":{}}")), Contains("not valid UTF-8 JSON"));
}

TEST_CASE("safetensors reader rejects malformed entries, naming the tensor and field",
          "[safetensors]") {
  CHECK_THAT(rejection(file_with_header(R"({"t":[1]})")),
             Contains("tensor 't': entry must be an object"));
  CHECK_THAT(rejection(file_with_header(R"({"t":{"dtype":"F32","data_offsets":[0,0]}})")),
             Contains("tensor 't': missing \"shape\""));
  CHECK_THAT(rejection(file_with_header(
                 R"({"t":{"dtype":"F32","shape":[],"data_offsets":[0,4],"extra":1}})",
                 std::string(4, '\0'))),
             Contains("tensor 't': unknown key 'extra'"));
  CHECK_THAT(rejection(file_of({entry("t", "32", "[]", "[0,4]")}, 4)),
             Contains("tensor 't': dtype must be a string"));
  CHECK_THAT(rejection(file_of({entry("t", "\"F32\"", "3", "[0,4]")}, 4)),
             Contains("tensor 't': shape must be an array"));
  CHECK_THAT(rejection(file_of({entry("t", "\"F32\"", "[[1]]", "[0,4]")}, 4)),
             Contains("nests deeper"));
}

TEST_CASE("safetensors reader rejects an unknown dtype", "[safetensors]") {
  CHECK_THAT(rejection(file_of({entry("t", "\"F17\"", "[]", "[0,4]")}, 4)),
             Contains("tensor 't': unknown dtype \"F17\""));
}

TEST_CASE("safetensors reader rejects negative and non-integer shape entries", "[safetensors]") {
  CHECK_THAT(rejection(file_of({entry("t", "\"F32\"", "[2,-1]", "[0,0]")}, 0)),
             Contains("tensor 't': shape[1] must be a non-negative integer") && Contains("-1"));
  CHECK_THAT(rejection(file_of({entry("t", "\"F32\"", "[2.5]", "[0,0]")}, 0)),
             Contains("shape[0] must be a non-negative integer") && Contains("2.5"));
  CHECK_THAT(rejection(file_of({entry("t", "\"F32\"", "[\"2\"]", "[0,0]")}, 0)),
             Contains("shape[0] must be a non-negative integer"));
}

TEST_CASE("safetensors reader rejects shapes whose element or byte count overflows",
          "[safetensors]") {
  CHECK_THAT(rejection(file_of({entry("t", "\"F32\"", "[4294967296,4294967296]", "[0,0]")}, 0)),
             Contains("tensor 't': the element count") && Contains("overflows"));
  CHECK_THAT(rejection(file_of({entry("t", "\"F64\"", "[4611686018427387904]", "[0,0]")}, 0)),
             Contains("tensor 't': the byte size") && Contains("overflows"));
  CHECK_THAT(rejection(file_of({entry("t", "\"F32\"", "[0,18446744073709551615]", "[0,0]")}, 0)),
             Contains("shape[1] must be a non-negative integer below 2^63"));
}

TEST_CASE("safetensors reader rejects malformed data_offsets", "[safetensors]") {
  for (const char* offsets : {"[0]", "[0,4,8]", "[-1,3]", "[0,\"4\"]", "{}", "[8,4]"}) {
    CHECK_THAT(rejection(file_of({entry("t", "\"F32\"", "[1]", offsets)}, 8)),
               Contains("tensor 't': data_offsets must be [begin, end]"));
  }
}

TEST_CASE("safetensors reader rejects offsets past the end of the data buffer", "[safetensors]") {
  CHECK_THAT(rejection(file_of({entry("t", "\"F32\"", "[2]", "[0,8]")}, 4)),
             Contains("tensor 't': data_offsets [0, 8] run past the end of the 4-byte data "
                      "buffer"));
}

TEST_CASE("safetensors reader rejects offsets that disagree with dtype and shape",
          "[safetensors]") {
  CHECK_THAT(rejection(file_of({entry("t", "\"F32\"", "[3]", "[0,8]")}, 8)),
             Contains("tensor 't': data_offsets [0, 8] hold 8 bytes, but dtype F32 and shape [3] "
                      "need 12"));
}

TEST_CASE("safetensors reader rejects a gap between tensors", "[safetensors]") {
  CHECK_THAT(rejection(file_of({entry("a", "\"F32\"", "[1]", "[0,4]"),
                                entry("b", "\"F32\"", "[1]", "[8,12]")},
                               12)),
             Contains("gap in the data buffer: bytes [4, 8) before tensor 'b'"));
  CHECK_THAT(rejection(file_of({entry("b", "\"F32\"", "[1]", "[4,8]")}, 8)),
             Contains("bytes [0, 4) before tensor 'b'"));
}

TEST_CASE("safetensors reader rejects overlapping tensors", "[safetensors]") {
  CHECK_THAT(rejection(file_of({entry("a", "\"F32\"", "[2]", "[0,8]"),
                                entry("b", "\"F32\"", "[1]", "[4,8]")},
                               8)),
             Contains("tensor 'b' at data_offsets [4, 8] overlaps tensor 'a' at [0, 8]"));
}

TEST_CASE("safetensors reader rejects bytes after the last tensor", "[safetensors]") {
  CHECK_THAT(rejection(file_of({entry("a", "\"F32\"", "[1]", "[0,4]")}, 5)),
             Contains("bytes [4, 5) at the end of the data buffer belong to no tensor"));
  CHECK_THAT(rejection(file_of({}, 1)), Contains("bytes [0, 1) at the end"));
}

TEST_CASE("safetensors reader rejects duplicate tensor names and duplicate keys",
          "[safetensors]") {
  CHECK_THAT(rejection(file_of({entry("a", "\"F32\"", "[1]", "[0,4]"),
                                entry("a", "\"F32\"", "[1]", "[4,8]")},
                               8)),
             Contains("duplicate tensor name 'a'"));
  CHECK_THAT(rejection(file_with_header(
                 R"({"a":{"dtype":"F32","dtype":"F64","shape":[],"data_offsets":[0,4]}})")),
             Contains("duplicate key 'dtype' in the header entry 'a'"));
}

TEST_CASE("safetensors reader rejects metadata that is not strings", "[safetensors]") {
  CHECK_THAT(rejection(file_with_header(R"({"__metadata__":{"step":100}})")),
             Contains("__metadata__['step'] must be a string, got 100"));
  CHECK_THAT(rejection(file_with_header(R"({"__metadata__":"pt"})")),
             Contains("__metadata__ must be an object of strings"));
}

TEST_CASE("safetensors reader reports known dtypes tinygpt does not hold as unsupported",
          "[safetensors]") {
  CHECK_THAT(rejection(file_of({entry("h", "\"I32\"", "[1]", "[0,4]")}, 4)),
             Contains("unsupported dtype I32 for tensor 'h'"));
}

TEST_CASE("safetensors reader widens F16 and BF16 tensors to exact float32", "[safetensors]") {
  // Little-endian halves: 1.0, -2.0, 65504 (the largest), 2^-24 (the smallest subnormal), -0, inf.
  const std::string f16("\x00\x3c\x00\xc0\xff\x7b\x01\x00\x00\x80\x00\x7c", 12);
  // bfloat16: 1.0, -2.0, 3.140625, 1e-40 as far as bf16 holds it (a subnormal), -0, inf.
  const std::string bf16("\x80\x3f\x00\xc0\x49\x40\x01\x00\x00\x80\x80\x7f", 12);
  const SafetensorsFile file = decode_safetensors(
      file_with_header(R"({"a":{"dtype":"F16","shape":[6],"data_offsets":[0,12]},)"
                       R"("b":{"dtype":"BF16","shape":[2,3],"data_offsets":[12,24]}})",
                       f16 + bf16));
  const Tensor& a = file.at("a");
  REQUIRE(a.dtype() == DType::f32);
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(elements<float>(a) == std::vector<float>{1.0f, -2.0f, 65504.0f, std::ldexp(1.0f, -24), -0.0f, inf});
  CHECK(std::signbit(elements<float>(a)[4]));
  const Tensor& b = file.at("b");
  REQUIRE(b.dtype() == DType::f32);
  CHECK(b.shape() == Shape({2, 3}));
  CHECK(elements<float>(b) == std::vector<float>{1.0f, -2.0f, 3.140625f, std::ldexp(1.0f, -133), -0.0f, inf});
}

TEST_CASE("safetensors reader reports tensors of more than 8 dimensions as unsupported",
          "[safetensors]") {
  CHECK_THAT(rejection(file_of({entry("t", "\"F32\"", "[1,1,1,1,1,1,1,1,1]", "[0,4]")}, 4)),
             Contains("tensor 't' has 9 dimensions; tinygpt tensors have at most 8"));
}

TEST_CASE("SafetensorsFile::at names the missing tensor and the file", "[safetensors]") {
  const SafetensorsFile file = decode_safetensors(encode_safetensors(sample_tensors()), "m.st");
  CHECK_THROWS_AS(file.at("lm_head.weight"), FormatError);
  CHECK_THROWS_WITH(file.at("lm_head.weight"),
                    Contains("'m.st' has no tensor 'lm_head.weight'"));
}
