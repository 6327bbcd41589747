// What a checkpoint reader reads (issue 57): only regular files, never past the size the manifest
// records or a stated cap, and only tensors of the kind the model holds, from one save.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <functional>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Long enough for a load, far too short for one that reads /dev/zero or waits on a FIFO.
const CliOptions kQuick{{}, false, std::chrono::milliseconds(20'000)};

// A socket file at `path`, as a bound AF_UNIX socket leaves it.
void make_socket(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  REQUIRE(path.size() < sizeof address.sun_path);
  std::strcpy(address.sun_path, path.c_str());
  const int bound = ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
  ::close(fd);
  REQUIRE(bound == 0);
}

// Each kind of file that is not a regular one, put in place of `path`.
const std::vector<std::pair<std::string, std::function<void(const std::string&)>>>& non_regular_files() {
  static const std::vector<std::pair<std::string, std::function<void(const std::string&)>>> kinds = {
      {"a FIFO", [](const std::string& path) { REQUIRE(::mkfifo(path.c_str(), 0600) == 0); }},
      {"a link to /dev/zero", [](const std::string& path) { fs::create_symlink("/dev/zero", path); }},
      {"a link to /dev/urandom", [](const std::string& path) { fs::create_symlink("/dev/urandom", path); }},
      {"a directory", [](const std::string& path) { fs::create_directory(path); }},
      {"a socket", make_socket}};
  return kinds;
}

// The commands that read `name` of a run folder, with the run's path in place of "RUN".
std::vector<std::vector<std::string>> readers_of(const std::string& name, const std::string& run) {
  const std::vector<std::string> sample = {"sample", "--model", run, "--tokens", "3"};
  const std::vector<std::string> eval = {"eval", "--model", run, "--data", "builtin:toy", "--threads", "1"};
  const std::vector<std::string> heads = {"heads", "--model", run, "--threads", "1", "--json"};
  const std::vector<std::string> resume = {"train", "--resume", run, "--steps", "30"};
  if (name == "trainer_state.json" || name == "optimizer.safetensors") return {resume};
  if (name == "log.jsonl") return {resume, {"heads", "--model", run, "--threads", "1", "--html", run + ".html"}};
  return {sample, eval, heads, resume};
}

// `name` of `run`, restored from `pristine` first, replaced by `make`.
void replace_file(const std::string& run, const std::string& pristine, const std::string& name,
                  const std::function<void(const std::string&)>& make) {
  fs::remove_all(run);
  fs::copy(pristine, run, fs::copy_options::recursive);
  fs::remove(run + "/" + name);
  make(run + "/" + name);
}

// Every pair of a file and a command that reads it meets some kind of non-regular file, and every
// kind meets every file (through its first reader): the pairs cover what each reader and each
// kind can get wrong at a fraction of the full product's runs.
void check_refused_by_readers(const std::string& run, const std::string& pristine,
                              const std::vector<std::string>& names) {
  const auto& kinds = non_regular_files();
  for (size_t n = 0; n < names.size(); ++n) {
    const std::vector<std::vector<std::string>> readers = readers_of(names[n], run);
    for (size_t r = 0; r < readers.size(); ++r) {
      for (size_t k = 0; k < kinds.size(); ++k) {
        if (r > 0 && k != (n + r) % kinds.size()) continue;
        const auto& [kind, make] = kinds[k];
        CAPTURE(names[n], kind, readers[r]);
        replace_file(run, pristine, names[n], make);
        const CliResult result = run_cli(readers[r], kQuick);
        check_one_line_error(result, {run + "/" + names[n]});
        CHECK(result.exit_code == 1);
      }
    }
  }
}

// The header and data of a safetensors file.
struct Safetensors {
  json header;
  std::string data;
};

Safetensors read_safetensors(const std::string& path) {
  const std::string bytes = read_bytes(path);
  uint64_t size = 0;
  std::memcpy(&size, bytes.data(), 8);
  return {json::parse(bytes.substr(8, size)), bytes.substr(8 + size)};
}

void write_safetensors(const std::string& path, const Safetensors& file) {
  std::string text = file.header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t size = text.size();
  write_bytes(path, std::string(reinterpret_cast<const char*>(&size), 8) + text + file.data);
}

// `file` with the tensor `name` added, holding `raw`.
Safetensors with_tensor(Safetensors file, const std::string& name, const json& shape, const std::string& raw) {
  file.header[name] = {{"dtype", "F32"}, {"shape", shape},
                       {"data_offsets", {file.data.size(), file.data.size() + raw.size()}}};
  file.data += raw;
  return file;
}

// `file` with the tensor `name` stored as zeros of `dtype` (`bytes` each), its shape kept.
Safetensors retyped(const Safetensors& file, const std::string& name, const std::string& dtype, size_t bytes) {
  Safetensors out{json::object(), ""};
  if (file.header.contains("__metadata__")) out.header["__metadata__"] = file.header["__metadata__"];
  for (const auto& [tensor, entry] : file.header.items()) {
    if (tensor == "__metadata__") continue;
    const size_t begin = entry["data_offsets"][0], end = entry["data_offsets"][1];
    size_t count = 1;
    for (const json& dim : entry["shape"]) count *= dim.get<size_t>();
    const std::string raw = tensor == name ? std::string(count * bytes, '\0') : file.data.substr(begin, end - begin);
    out.header[tensor] = {{"dtype", tensor == name ? dtype : entry["dtype"].get<std::string>()},
                          {"shape", entry["shape"]},
                          {"data_offsets", {out.data.size(), out.data.size() + raw.size()}}};
    out.data += raw;
  }
  return out;
}

}  // namespace

TEST_CASE("checkpoint files that are not regular files are refused at once, naming the file",
          "[cli][readers]") {
  ScratchDir dir;
  const std::string pristine = dir.file("pristine"), run = dir.file("run");
  train_tiny_model(pristine);
  check_refused_by_readers(run, pristine,
                           {"checkpoint.json", "config.json", "tokenizer.json", "model.safetensors",
                            "trainer_state.json", "optimizer.safetensors", "log.jsonl"});
}

TEST_CASE("a folder without checkpoint.json (as Hugging Face's tools write it) refuses files that "
          "are not regular files too", "[cli][readers]") {
  ScratchDir dir;
  const std::string pristine = dir.file("pristine"), run = dir.file("run");
  train_tiny_model(pristine);
  fs::remove(pristine + "/checkpoint.json");
  check_refused_by_readers(run, pristine, {"config.json", "tokenizer.json", "model.safetensors"});
}

TEST_CASE("a checkpoint file larger than recorded, or than the cap for its kind, is refused "
          "without being read", "[cli][readers]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run);
  // Sparse: reading them whole would take seconds and gigabytes; refusing them takes nothing.
  for (const char* name : {"model.safetensors", "config.json", "tokenizer.json"}) {
    CAPTURE(name);
    const std::string path = run + "/" + name;
    const std::string bytes = read_bytes(path);
    fs::resize_file(path, uint64_t{8} << 30);
    check_one_line_error(run_cli({"sample", "--model", run, "--tokens", "3"}, kQuick),
                         {path, "damaged", "8589934592 bytes", std::to_string(bytes.size())});
    write_bytes(path, bytes);
  }
  fs::remove(run + "/checkpoint.json");
  for (const char* name : {"config.json", "tokenizer.json"}) {
    CAPTURE(name);
    const std::string path = run + "/" + name;
    const std::string bytes = read_bytes(path);
    fs::resize_file(path, (uint64_t{64} << 20) + 1);
    check_one_line_error(run_cli({"sample", "--model", run, "--tokens", "3"}, kQuick),
                         {path, "67108865 bytes", "limit of 67108864"});
    write_bytes(path, bytes);
  }
  run_ok({"sample", "--model", run, "--tokens", "3"});
}

TEST_CASE("integer tensors in place of float weights or moments are refused naming the tensor",
          "[cli][readers]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run);
  fs::remove(run + "/checkpoint.json");  // no checksums: the loader meets the tensors themselves
  const std::string model = run + "/model.safetensors", optimizer = run + "/optimizer.safetensors";
  const Safetensors weights = read_safetensors(model), moments = read_safetensors(optimizer);
  // I64 is read as integers; I32, U8 and BOOL are not read at all: each names the tensor.
  for (const auto& [tensor, dtype, bytes] : std::vector<std::tuple<std::string, std::string, size_t>>{
           {"transformer.wte.weight", "I32", 4},
           {"transformer.ln_f.bias", "I64", 8},
           {"transformer.h.0.ln_1.weight", "U8", 1},
           {"transformer.h.0.mlp.c_fc.bias", "BOOL", 1}}) {
    CAPTURE(tensor, dtype);
    write_safetensors(model, retyped(weights, tensor, dtype, bytes));
    check_one_line_error(run_cli({"sample", "--model", run, "--tokens", "3"}),
                         {model, "'" + tensor + "'", dtype == "I64" ? "integers (i64)" : dtype});
  }
  write_safetensors(model, weights);
  for (const std::string moment : {"exp_avg.transformer.ln_f.bias", "exp_avg_sq.transformer.wte.weight"}) {
    CAPTURE(moment);
    write_safetensors(optimizer, retyped(moments, moment, "I64", 8));
    const DirSnapshot before = snapshot(run);
    check_one_line_error(run_cli({"train", "--resume", run, "--steps", "30"}),
                         {optimizer, "'" + moment + "'", "integers (i64)"});
    CHECK(snapshot(run) == before);
  }
}

TEST_CASE("resume refuses moments of a parameter the model lacks and a steps_taken that is not "
          "the run's step", "[cli][readers]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run);
  fs::remove(run + "/checkpoint.json");
  const std::string optimizer = run + "/optimizer.safetensors";
  const Safetensors moments = read_safetensors(optimizer);
  REQUIRE(moments.header["__metadata__"]["steps_taken"] == "20");
  for (const std::string extra : {"exp_avg.transformer.h.1.ln_1.weight", "exp_avg_sq.lm_head.bias",
                                  "momentum.transformer.wte.weight"}) {
    CAPTURE(extra);
    write_safetensors(optimizer, with_tensor(moments, extra, json::array({16}), std::string(64, '\0')));
    check_one_line_error(run_cli({"train", "--resume", run, "--steps", "30"}), {optimizer, "'" + extra + "'"});
  }
  for (const std::string steps : {"19", "21", "0", "twenty"}) {
    CAPTURE(steps);
    Safetensors edited = moments;
    edited.header["__metadata__"]["steps_taken"] = steps;
    write_safetensors(optimizer, edited);
    const DirSnapshot before = snapshot(run);
    check_one_line_error(run_cli({"train", "--resume", run, "--steps", "30"}),
                         {optimizer, "steps_taken " + steps, "step 20", run + "/trainer_state.json"});
    CHECK(snapshot(run) == before);
  }
  Safetensors without = moments;
  without.header["__metadata__"].erase("steps_taken");
  write_safetensors(optimizer, without);
  check_one_line_error(run_cli({"train", "--resume", run, "--steps", "30"}), {optimizer, "steps_taken"});
  write_safetensors(optimizer, moments);
  run_ok({"train", "--resume", run, "--steps", "30"});
}
