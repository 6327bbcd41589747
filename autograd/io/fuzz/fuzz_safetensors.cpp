// libFuzzer target for the checkpoint reader. decode_safetensors must answer any byte string with
// either a file or a tinygpt::Error. A crash, a sanitizer report, any other exception, or an
// accepted file that does not survive being written back is a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "tinygpt/io/safetensors.hpp"

namespace {

using tinygpt::io::decode_safetensors;
using tinygpt::io::encode_safetensors;
using tinygpt::io::SafetensorsFile;

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "fuzz_safetensors: %s\n", what);
  std::abort();
}

uint64_t header_length(std::string_view bytes) {
  uint64_t length = 0;
  std::memcpy(&length, bytes.data(), sizeof length);
  return length;
}

// Size of the data buffer, for bytes that decoded, so the header length is known to be sane.
uint64_t data_buffer_size(std::string_view bytes) {
  return bytes.size() - sizeof(uint64_t) - header_length(bytes);
}

// Whether the header declares a half-precision tensor, which the reader widens to F32.
bool has_half_precision(std::string_view bytes) {
  const std::string_view header = bytes.substr(sizeof(uint64_t), header_length(bytes));
  return header.find("\"F16\"") != std::string_view::npos || header.find("\"BF16\"") != std::string_view::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  SafetensorsFile file;
  try {
    file = decode_safetensors(bytes, "fuzz input");
  } catch (const tinygpt::Error&) {
    return 0;  // rejected with a message: what almost every input should get
  }
  // An accepted file must re-encode (errors here escape and count as findings), keep every data
  // byte (F16/BF16 tensors come back widened to F32, so then at least as many), and be a fixed
  // point: decoding the re-encoding and encoding again changes nothing.
  const std::string encoded = encode_safetensors(file.tensors, file.metadata);
  const bool widened = has_half_precision(bytes);
  if (widened ? data_buffer_size(encoded) < data_buffer_size(bytes)
              : data_buffer_size(encoded) != data_buffer_size(bytes)) {
    finding("re-encoding changed the size of the data buffer");
  }
  const SafetensorsFile again = decode_safetensors(encoded, "re-encoded fuzz input");
  if (encode_safetensors(again.tensors, again.metadata) != encoded) {
    finding("decode(encode(file)) differs from file");
  }
  return 0;
}
