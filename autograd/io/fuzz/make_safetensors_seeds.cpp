// Writes a few valid safetensors files into the directory given, as the fuzzer's seed corpus:
// generated at test time from the real writer, so no binary blobs live in the repository.
#include <cstdio>
#include <filesystem>
#include <string>

#include "tinygpt/io/safetensors.hpp"

int main(int argc, char** argv) {
  using namespace tinygpt;
  using tinygpt::io::save_safetensors;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir(argv[1]);
  std::filesystem::create_directories(dir);
  save_safetensors((dir / "seed-empty").string(), {});
  save_safetensors((dir / "seed-metadata-only").string(), {}, {{"format", "pt"}});
  save_safetensors((dir / "seed-mixed").string(),
                   {{"wte", Tensor::from({0.5, -1, 2, 3e-8, 4, 5}, {2, 3}, DType::f32)},
                    {"scale", Tensor::scalar(2.0, DType::f64)},
                    {"ids", Tensor::from_ids({0, 7, -1}, {3})},
                    {"none", Tensor::zeros({0, 2}, DType::f32)}},
                   {{"format", "pt"}, {"step", "10"}});
  return 0;
}
