#include "tinygpt/io/safetensors.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinygpt/autograd/memory.hpp"
#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/io/sha256.hpp"

// Tensor data and the header length go between file and memory by memcpy, which is only right
// where the host byte order is the file's.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors files are little-endian and this code assumes a little-endian host");

namespace tinygpt::io {
namespace {

using Json = nlohmann::json;

constexpr size_t kHeaderLengthBytes = 8;
// The reference implementation refuses larger headers, which no real checkpoint needs.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr const char* kMetadataKey = "__metadata__";
constexpr uint64_t kMaxDimension = std::numeric_limits<int64_t>::max();  // Shape holds int64_t

struct KnownDType {
  std::string_view name;
  uint64_t size;  // bytes per element
};
// Every dtype the safetensors format defines.
constexpr std::array<KnownDType, 15> kKnownDTypes{{{"BOOL", 1},
                                                   {"U8", 1},
                                                   {"I8", 1},
                                                   {"F8_E5M2", 1},
                                                   {"F8_E4M3", 1},
                                                   {"I16", 2},
                                                   {"U16", 2},
                                                   {"F16", 2},
                                                   {"BF16", 2},
                                                   {"I32", 4},
                                                   {"U32", 4},
                                                   {"F32", 4},
                                                   {"F64", 8},
                                                   {"I64", 8},
                                                   {"U64", 8}}};

// The safetensors name of each dtype a Tensor can hold.
const char* safetensors_name(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return "F32";
    case DType::f64:
      return "F64";
    case DType::i64:
      return "I64";
  }
  return "?";
}

std::optional<DType> tinygpt_dtype(std::string_view safetensors_dtype) {
  for (DType dtype : {DType::f32, DType::f64, DType::i64}) {
    if (safetensors_dtype == safetensors_name(dtype)) return dtype;
  }
  return std::nullopt;
}

// Calls f(T{}) with T the element type of `dtype`, so f can reach Tensor::data<T>().
template <class F>
void with_element_type(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32:
      return f(float{});
    case DType::f64:
      return f(double{});
    case DType::i64:
      return f(int64_t{});
  }
}

// ---------------------------------------------------------------------------------------------
// Writing

// nlohmann refuses to dump invalid UTF-8; checking each string alone lets the error name it.
void require_utf8(const std::string& text, std::string_view what) {
  try {
    (void)Json(text).dump();
  } catch (const Json::type_error&) {
    throw ValueError(Operation("encode_safetensors"), fmt::format("{} is not valid UTF-8", what));
  }
}

// ---------------------------------------------------------------------------------------------
// Reading

template <class... Args>
[[noreturn]] void format_error(const std::string& source, fmt::format_string<Args...> what,
                               Args&&... args) {
  throw FormatError(fmt::format("safetensors file '{}': {}", source,
                                fmt::format(what, std::forward<Args>(args)...)));
}

// A JSON value for an error message, cut short: a hostile header can hold a 100 MB string.
std::string describe(const Json& value) { return excerpt(value.dump()); }

std::optional<uint64_t> as_unsigned(const Json& value) {
  if (!value.is_number_unsigned()) return std::nullopt;
  return value.get<uint64_t>();
}

// One tensor of the header, valid as far as the format goes (tinygpt may still not hold it).
struct Entry {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

// The header length from the first bytes of a file of `file_size` bytes (`prefix` holds at least
// the first 8 of them, or all when it is shorter).
uint64_t read_header_length(std::string_view prefix, uint64_t file_size, const std::string& source) {
  if (file_size < kHeaderLengthBytes) {
    format_error(source, "truncated: {} bytes, too short for the 8-byte header length",
                 file_size);
  }
  uint64_t length = 0;
  std::memcpy(&length, prefix.data(), kHeaderLengthBytes);
  if (length > kMaxHeaderBytes) {
    format_error(source, "header length {} is larger than the limit of {} bytes", length,
                 kMaxHeaderBytes);
  }
  if (length > file_size - kHeaderLengthBytes) {
    format_error(source, "truncated: the header length says {} bytes, but only {} follow it",
                 length, file_size - kHeaderLengthBytes);
  }
  return length;
}

// Parses the header JSON. nlohmann silently keeps the last of duplicate keys and accepts any
// nesting, so a parse callback rejects both as they are read. Returns the top-level keys in
// header order through `keys_in_order` (the parsed object itself is sorted by key).
Json parse_header(std::string_view header, const std::string& source,
                  std::vector<std::string>& keys_in_order) {
  // Also refuses a byte-order mark, which nlohmann would skip but the format does not allow.
  const size_t first = header.find_first_not_of(" \t\n\r");
  if (first == std::string_view::npos || header[first] != '{') {
    format_error(source, "header is not a JSON object");
  }
  // nlohmann's lexer takes a NUL byte for the end of its input and would ignore what follows;
  // JSON text never holds a raw NUL, so refuse it here.
  if (const size_t nul = header.find('\0'); nul != std::string_view::npos) {
    format_error(source, "header is not valid UTF-8 JSON: NUL byte at header offset {}", nul);
  }
  std::vector<std::set<std::string>> keys_of_open_objects;
  const auto check_event = [&](int depth, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        // Depth 0 is the header, 1 an entry, 2 a shape or data_offsets array of numbers.
        if (depth >= 3) format_error(source, "header nests deeper than any valid header");
        if (event == Json::parse_event_t::object_start) keys_of_open_objects.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        keys_of_open_objects.pop_back();
        break;
      case Json::parse_event_t::key: {
        const auto& key = parsed.get_ref<const std::string&>();
        if (!keys_of_open_objects.back().insert(key).second) {
          if (depth == 1) format_error(source, "duplicate tensor name '{}' in the header", excerpt(key));
          format_error(source, "duplicate key '{}' in the header entry '{}'", excerpt(key),
                       excerpt(keys_in_order.back()));
        }
        if (depth == 1) keys_in_order.push_back(key);
        break;
      }
      default:
        break;
    }
    return true;
  };
  try {
    return Json::parse(header.begin(), header.end(), check_event);
  } catch (const Json::exception& e) {
    format_error(source, "header is not valid UTF-8 JSON: {}", e.what());
  }
}

const Json& required_field(const Json& entry, const char* key, const std::string& name,
                           const std::string& source) {
  const auto it = entry.find(key);
  if (it == entry.end()) format_error(source, "tensor '{}': missing \"{}\"", name, key);
  return *it;
}

// Checks one tensor entry against the format: known keys of the right types, a known dtype,
// a shape whose byte size fits the offsets, and offsets inside the data buffer.
Entry parse_entry(const std::string& name, const Json& value, uint64_t data_size,
                  const std::string& source) {
  if (!value.is_object()) {
    format_error(source, "tensor '{}': entry must be an object, got {}", name, describe(value));
  }
  for (const auto& field : value.items()) {
    if (field.key() != "dtype" && field.key() != "shape" && field.key() != "data_offsets") {
      format_error(source, "tensor '{}': unknown key '{}' (expected dtype, shape, data_offsets)",
                   name, field.key());
    }
  }
  Entry entry{name, {}, {}, 0, 0};

  const Json& dtype = required_field(value, "dtype", name, source);
  if (!dtype.is_string()) {
    format_error(source, "tensor '{}': dtype must be a string, got {}", name, describe(dtype));
  }
  entry.dtype = dtype.get<std::string>();
  const auto known = std::find_if(kKnownDTypes.begin(), kKnownDTypes.end(),
                                  [&](const KnownDType& d) { return d.name == entry.dtype; });
  if (known == kKnownDTypes.end()) {
    format_error(source, "tensor '{}': unknown dtype {}", name, describe(dtype));
  }

  const Json& shape = required_field(value, "shape", name, source);
  if (!shape.is_array()) {
    format_error(source, "tensor '{}': shape must be an array, got {}", name, describe(shape));
  }
  // Overflow-checked element count. The bound is int64_t's, not uint64_t's, because Shape
  // multiplies in int64_t; only absurd files (> 2^63 elements before a zero dim) notice.
  uint64_t numel = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    const std::optional<uint64_t> dim = as_unsigned(shape[i]);
    if (!dim || *dim > kMaxDimension) {
      format_error(source,
                   "tensor '{}': shape[{}] must be a non-negative integer below 2^63, got {}", name,
                   i, describe(shape[i]));
    }
    if (__builtin_mul_overflow(numel, *dim, &numel) || numel > kMaxDimension) {
      format_error(source, "tensor '{}': the element count of shape {} overflows", name,
                   describe(shape));
    }
    entry.shape.push_back(static_cast<int64_t>(*dim));
  }
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(numel, known->size, &nbytes)) {
    format_error(source, "tensor '{}': the byte size of shape {} overflows", name,
                 describe(shape));
  }

  const Json& offsets = required_field(value, "data_offsets", name, source);
  const std::optional<uint64_t> begin = offsets.is_array() && offsets.size() == 2
                                            ? as_unsigned(offsets[0])
                                            : std::nullopt;
  const std::optional<uint64_t> end =
      begin ? as_unsigned(offsets[1]) : std::optional<uint64_t>{};
  if (!begin || !end || *begin > *end) {
    format_error(source, "tensor '{}': data_offsets must be [begin, end] with integers "
                 "0 <= begin <= end, got {}", name, describe(offsets));
  }
  if (*end > data_size) {
    format_error(source, "tensor '{}': data_offsets [{}, {}] run past the end of the {}-byte "
                 "data buffer", name, *begin, *end, data_size);
  }
  if (*end - *begin != nbytes) {
    format_error(source, "tensor '{}': data_offsets [{}, {}] hold {} bytes, but dtype {} and "
                 "shape {} need {}", name, *begin, *end, *end - *begin, entry.dtype,
                 describe(shape), nbytes);
  }
  entry.begin = *begin;
  entry.end = *end;
  return entry;
}

// Sorts the entries by offset and checks that they tile [0, data_size) exactly.
void check_tiling(std::vector<Entry>& entries, uint64_t data_size, const std::string& source) {
  // Stable, so zero-byte tensors at one offset keep their header order.
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  uint64_t covered = 0;  // bytes [0, covered) belong to the tensors seen so far
  const Entry* previous = nullptr;
  for (const Entry& entry : entries) {
    if (entry.begin > covered) {
      format_error(source, "gap in the data buffer: bytes [{}, {}) before tensor '{}' belong to "
                   "no tensor", covered, entry.begin, entry.name);
    }
    if (entry.begin < covered) {
      format_error(source, "tensor '{}' at data_offsets [{}, {}] overlaps tensor '{}' at [{}, {}]",
                   entry.name, entry.begin, entry.end, previous->name, previous->begin,
                   previous->end);
    }
    covered = entry.end;
    previous = &entry;
  }
  if (covered != data_size) {
    format_error(source, "bytes [{}, {}) at the end of the data buffer belong to no tensor",
                 covered, data_size);
  }
}

std::map<std::string, std::string> parse_metadata(const Json& value, const std::string& source) {
  if (!value.is_object()) {
    format_error(source, "{} must be an object of strings, got {}", kMetadataKey,
                 describe(value));
  }
  std::map<std::string, std::string> metadata;
  for (const auto& item : value.items()) {
    if (!item.value().is_string()) {
      format_error(source, "{}['{}'] must be a string, got {}", kMetadataKey, item.key(),
                   describe(item.value()));
    }
    metadata.emplace(item.key(), item.value().get<std::string>());
  }
  return metadata;
}

// IEEE half precision (F16) and bfloat16 (BF16), the dtypes Hugging Face checkpoints are often
// shared in, widened exactly to float32.
float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exponent = (h >> 10) & 0x1f;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  const uint32_t bits = exponent == 0x1f ? sign | 0x7f800000u | (mantissa << 13)  // inf, NaN
                                         : sign | ((exponent + 112) << 23) | (mantissa << 13);
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

float bf16_to_f32(uint16_t b) {
  const uint32_t bits = uint32_t{b} << 16;  // bfloat16 is float32's top half
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

bool is_half(const std::string& dtype) { return dtype == "F16" || dtype == "BF16"; }

// Refuses what the format allows but a tinygpt Tensor cannot hold; F16 and BF16 become f32.
DType check_supported(const Entry& entry, const std::string& source) {
  const std::optional<DType> dtype = is_half(entry.dtype) ? DType::f32 : tinygpt_dtype(entry.dtype);
  if (!dtype) {
    format_error(source, "unsupported dtype {} for tensor '{}' (tinygpt reads F32, F64, I64, and "
                 "F16 and BF16 as F32)", entry.dtype, entry.name);
  }
  if (entry.shape.size() > static_cast<size_t>(Shape::kMaxDims)) {
    format_error(source, "tensor '{}' has {} dimensions; tinygpt tensors have at most {}",
                 entry.name, entry.shape.size(), Shape::kMaxDims);
  }
  return *dtype;
}

// Bytes [begin, begin + size) of the data buffer and where they go.
struct Span {
  uint64_t begin;
  char* out;
  uint64_t size;
};

// What a header says, checked against a data buffer of its size: the tensors in data order, the
// dtype each becomes, the metadata.
struct Layout {
  std::vector<Entry> entries;
  std::vector<DType> dtypes;
  std::map<std::string, std::string> metadata;
};

Layout check_header(std::string_view header, uint64_t data_size, const std::string& source) {
  std::vector<std::string> keys_in_order;
  const Json root = parse_header(header, source, keys_in_order);
  Layout layout;
  for (const std::string& key : keys_in_order) {
    if (key == kMetadataKey) {
      layout.metadata = parse_metadata(root.at(key), source);
    } else {
      layout.entries.push_back(parse_entry(key, root.at(key), data_size, source));
    }
  }
  check_tiling(layout.entries, data_size, source);
  for (const Entry& entry : layout.entries) layout.dtypes.push_back(check_supported(entry, source));
  return layout;
}

// Checks the header against a data buffer of `data_size` bytes, makes every tensor it lists, has
// `fill` copy the raw bytes of each (in data order, together tiling the buffer) and widens the
// half-precision ones. Nothing is allocated before every check has passed.
template <class Fill>
SafetensorsFile decode_tensors(std::string_view header, uint64_t data_size, const std::string& source,
                               Fill&& fill) {
  const Layout layout = check_header(header, data_size, source);
  const std::vector<Entry>& entries = layout.entries;
  const std::vector<DType>& dtypes = layout.dtypes;
  SafetensorsFile file{source, {}, layout.metadata};
  std::vector<Span> spans;
  // A half tensor's raw bytes, until they are widened into its f32 buffer.
  std::vector<std::unique_ptr<char[]>> halves(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& entry = entries[i];
    Tensor tensor = Tensor::empty(Shape(entry.shape), dtypes[i]);
    // An empty tensor has no buffer (its data() is null), which memcpy must not be given.
    if (entry.end > entry.begin) {
      if (is_half(entry.dtype)) halves[i].reset(new char[entry.end - entry.begin]);
      char* out = halves[i].get();
      if (!out) {
        with_element_type(dtypes[i], [&](auto element) {
          out = reinterpret_cast<char*>(tensor.data<decltype(element)>());
        });
      }
      spans.push_back({entry.begin, out, entry.end - entry.begin});
    }
    file.tensors.emplace_back(entry.name, std::move(tensor));
  }
  fill(spans);
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!halves[i]) continue;
    const auto convert = entries[i].dtype == "F16" ? f16_to_f32 : bf16_to_f32;
    float* out = file.tensors[i].second.data<float>();
    for (uint64_t k = 0; k < (entries[i].end - entries[i].begin) / 2; ++k) {
      uint16_t half;
      std::memcpy(&half, halves[i].get() + 2 * k, 2);
      out[k] = convert(half);
    }
  }
  return file;
}

[[noreturn]] void truncated_while_read(const FileReader& file, const std::string& source) {
  format_error(source, "truncated while it was read: it held {} bytes when it was opened",
               file.size());
}

// The spans cut into pieces of at most kPieceBytes: the reading threads share them out, and the
// hash follows the reads closely enough to find each piece still in the cache.
constexpr uint64_t kPieceBytes = uint64_t{1} << 22;

std::vector<Span> pieces_of(const std::vector<Span>& spans) {
  std::vector<Span> pieces;
  for (const Span& span : spans) {
    for (uint64_t at = 0; at < span.size; at += kPieceBytes) {
      pieces.push_back({span.begin + at, span.out + at, std::min(kPieceBytes, span.size - at)});
    }
  }
  return pieces;
}

// Reads each piece of the data buffer (at `data_start` in the file) into place, on every thread of
// the team: a fresh buffer's first touch is what costs (the kernel zeroes each page), and the
// threads take it in parallel. One thread at a time feeds `hash` the pieces read, in order.
void read_spans(const FileReader& file, uint64_t data_start, const std::vector<Span>& pieces,
                Sha256* hash, const std::string& source) {
  const size_t count = pieces.size();
  std::unique_ptr<std::atomic<bool>[]> read(new std::atomic<bool>[count]);
  for (size_t i = 0; i < count; ++i) read[i].store(false, std::memory_order_relaxed);
  std::atomic<size_t> next_to_read{0};
  std::atomic<size_t> hashed{hash == nullptr ? count : 0};
  std::atomic_flag hashing = ATOMIC_FLAG_INIT;
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;
#pragma omp parallel
  {
    try {
      while (!failed.load(std::memory_order_relaxed)) {
        if (hashed.load(std::memory_order_acquire) < count && !hashing.test_and_set(std::memory_order_acquire)) {
          size_t h = hashed.load(std::memory_order_relaxed);
          for (; h < count && read[h].load(std::memory_order_acquire); ++h) {
            hash->update({pieces[h].out, static_cast<size_t>(pieces[h].size)});
          }
          hashed.store(h, std::memory_order_release);
          hashing.clear(std::memory_order_release);
        }
        const size_t i = next_to_read.fetch_add(1, std::memory_order_relaxed);
        if (i < count) {
          const Span& piece = pieces[i];
          if (file.read_at(data_start + piece.begin, piece.out, piece.size) != piece.size) {
            truncated_while_read(file, source);
          }
          read[i].store(true, std::memory_order_release);
        } else if (hashed.load(std::memory_order_acquire) == count) {
          break;
        } else {
          std::this_thread::yield();  // the other thread is still reading what is to be hashed next
        }
      }
    } catch (...) {
      const std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      failed.store(true, std::memory_order_relaxed);
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace

const Tensor& SafetensorsFile::at(const std::string& name) const {
  for (const auto& [tensor_name, tensor] : tensors) {
    if (tensor_name == name) return tensor;
  }
  throw FormatError(fmt::format("safetensors file '{}' has no tensor '{}' (it has {} tensors)",
                                source, name, tensors.size()));
}

std::string encode_safetensors(const NamedTensors& tensors,
                               const std::map<std::string, std::string>& metadata) {
  // ordered_json keeps insertion order, so the header lists the tensors in the order given and
  // each entry's keys in the reference's order: dtype, shape, data_offsets.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    for (const auto& [key, value] : metadata) {
      require_utf8(key, fmt::format("metadata key '{}'", key));
      require_utf8(value, fmt::format("the metadata value of '{}'", key));
    }
    header[kMetadataKey] = metadata;
  }
  std::set<std::string_view> names;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    require_utf8(name, fmt::format("tensor name '{}'", name));
    if (name == kMetadataKey) {
      throw ValueError(Operation("encode_safetensors"), fmt::format("'{}' is reserved for the metadata and "
                                   "cannot name a tensor", kMetadataKey));
    }
    if (!names.insert(name).second) {
      throw ValueError(Operation("encode_safetensors"), fmt::format("duplicate tensor name '{}'", name));
    }
    if (!tensor.defined()) {
      throw ValueError(Operation("encode_safetensors"), fmt::format("tensor '{}' is undefined", name));
    }
    const auto nbytes = static_cast<uint64_t>(tensor.numel() * dtype_size(tensor.dtype()));
    header[name] = {{"dtype", safetensors_name(tensor.dtype())},
                    {"shape", tensor.shape().to_vector()},
                    {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
  }

  std::string header_text = header.dump();
  // Spaces up to a multiple of 8, as the reference writes, so the data buffer starts aligned.
  header_text.append((8 - header_text.size() % 8) % 8, ' ');
  const uint64_t header_length = header_text.size();

  std::string bytes;
  bytes.reserve(kHeaderLengthBytes + header_text.size() + offset);
  bytes.append(reinterpret_cast<const char*>(&header_length), kHeaderLengthBytes);
  bytes += header_text;
  for (const auto& [name, tensor] : tensors) {
    with_element_type(tensor.dtype(), [&, &tensor = tensor](auto element) {
      using T = decltype(element);
      bytes.append(reinterpret_cast<const char*>(tensor.data<T>()),
                   static_cast<size_t>(tensor.numel()) * sizeof(T));
    });
  }
  return bytes;
}

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  write_file_atomic(path, encode_safetensors(tensors, metadata));
}

SafetensorsFile decode_safetensors(std::string_view bytes, const std::string& source) {
  const uint64_t header_length = read_header_length(bytes, bytes.size(), source);
  const std::string_view data = bytes.substr(kHeaderLengthBytes + header_length);
  return decode_tensors(bytes.substr(kHeaderLengthBytes, header_length), data.size(), source,
                        [&](const std::vector<Span>& spans) {
                          for (const Span& span : spans) std::memcpy(span.out, data.data() + span.begin, span.size);
                        });
}

SafetensorsFile read_safetensors(const FileReader& file, const std::string& source, Sha256* hash) {
  char prefix[kHeaderLengthBytes] = {};
  const size_t prefix_bytes = file.read_at(0, prefix, sizeof prefix);
  const uint64_t header_length = read_header_length({prefix, prefix_bytes}, file.size(), source);
  std::string header(static_cast<size_t>(header_length), '\0');
  if (file.read_at(kHeaderLengthBytes, header.data(), header.size()) != header.size()) {
    truncated_while_read(file, source);
  }
  if (hash != nullptr) {
    hash->update({prefix, prefix_bytes});
    hash->update(header);
  }
  const uint64_t data_start = kHeaderLengthBytes + header_length;
  return decode_tensors(header, file.size() - data_start, source, [&](const std::vector<Span>& spans) {
    for (const Span& span : spans) advise_small_pages(span.out, span.size);
    read_spans(file, data_start, pieces_of(spans), hash, source);
  });
}

SafetensorsFile load_safetensors(const std::string& path) {
  const FileReader file(path);
  return read_safetensors(file, path);
}

}  // namespace tinygpt::io
