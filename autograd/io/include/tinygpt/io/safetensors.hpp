#pragma once
// The safetensors checkpoint format (https://github.com/huggingface/safetensors), as Hugging Face
// GPT-2 checkpoints use it:
//
//   8 bytes    N, the header length, an unsigned 64-bit little-endian integer
//   N bytes    a UTF-8 JSON object: tensor name -> {"dtype": "F32", "shape": [2, 3],
//              "data_offsets": [begin, end]}, plus an optional "__metadata__": {string: string};
//              the writer pads it with spaces to a multiple of 8 bytes
//   the rest   the data buffer: every tensor's row-major little-endian elements at
//              [begin, end) relative to the buffer's start, tiling it with no gaps or overlaps
//
// The reader checks all of that before it copies any tensor data, so a truncated or hostile file
// gives a FormatError naming the file and the field at fault, never a crash or a huge allocation.
// Tensor data is copied with memcpy: this code assumes a little-endian host (checked at compile
// time), as every platform tinygpt builds on is.
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/autograd/tensor.hpp"

namespace tinygpt::io {

// Bytes that are not a valid safetensors file. The message names the source (file path or
// "<memory>") and the tensor or header field at fault.
class FormatError : public Error {
 public:
  using Error::Error;
};

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// A decoded file: the tensors in file order (by data offset) and the "__metadata__" strings.
struct SafetensorsFile {
  std::string source;  // where it was read from, for error messages
  NamedTensors tensors;
  std::map<std::string, std::string> metadata;

  // The tensor called `name`; FormatError naming it and the source if there is none.
  const Tensor& at(const std::string& name) const;
};

// The file's bytes, tensors stored in the order given and contiguously from offset 0. Throws
// ValueError for an undefined tensor, a duplicate or reserved ("__metadata__") name, or a name or
// metadata string that is not valid UTF-8. Empty metadata writes no "__metadata__" entry.
std::string encode_safetensors(const NamedTensors& tensors,
                               const std::map<std::string, std::string>& metadata = {});

// encode_safetensors, then write_file_atomic: `path` is either replaced whole or left untouched.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// Validates and decodes a whole file. F32, F64 and I64 tensors become Tensors of dtype f32, f64
// and i64; F16 and BF16 ones become f32 (exactly: every half value is a float); any other
// (valid) safetensors dtype is a FormatError saying it is unsupported.
SafetensorsFile decode_safetensors(std::string_view bytes, const std::string& source = "<memory>");

class FileReader;
class Sha256;

// decode_safetensors of the bytes `file` held when it was opened, read once: the header first,
// then each tensor's bytes straight into its own buffer (no copy of the whole file), by every
// thread of the OpenMP team. `hash`, when given, is fed every byte of the file in order. A file
// that ends sooner than it did when opened is a FormatError; one that grew is read as it was.
SafetensorsFile read_safetensors(const FileReader& file, const std::string& source, Sha256* hash = nullptr);

// read_safetensors of the regular file `path`, with the path as the source.
SafetensorsFile load_safetensors(const std::string& path);

}  // namespace tinygpt::io
