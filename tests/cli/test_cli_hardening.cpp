// Hostile but realistic use of the real binary (issue 15): damaged or foreign checkpoints,
// endless data streams, wrapped seeds, read-only commands on a folder mid-commit, and the
// tokenizer.json a Hugging Face `tokenizers` client reads.
#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <tuple>
#include <functional>

#include <cstdlib>
#include <filesystem>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "scratch_dir.hpp"

using namespace tinygpt::testing;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Every file below `dir` with its bytes and modification time.
std::map<std::string, std::pair<std::string, fs::file_time_type>> with_times(const std::string& dir) {
  std::map<std::string, std::pair<std::string, fs::file_time_type>> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    files[fs::relative(entry.path(), dir).string()] = {
        entry.is_regular_file() ? read_bytes(entry.path().string()) : "<dir>", entry.last_write_time()};
  }
  return files;
}

}  // namespace

TEST_CASE("a flipped byte in the weights is refused by sample, naming the file", "[cli][hardening]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  train_tiny_model(model);
  std::string bytes = read_bytes(model + "/model.safetensors");
  bytes[bytes.size() - 7] ^= 0x01;
  write_bytes(model + "/model.safetensors", bytes);
  check_one_line_error(run_cli({"sample", "--model", model, "--tokens", "5"}),
                       {model + "/model.safetensors", "damaged"});
}

TEST_CASE("read-only commands read a folder mid-commit without changing it", "[cli][hardening]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  train_tiny_model(model);
  const std::string expected = run_ok({"sample", "--model", model, "--tokens", "30", "--seed", "3"}).out;
  // A save killed after its commit record, with every file still staged; a .partial of the user's.
  fs::create_directory(model + "/.tinygpt-staging");
  for (const char* name : {"model.safetensors", "config.json", "tokenizer.json", "trainer_state.json",
                           "optimizer.safetensors", "log.jsonl"}) {
    fs::rename(model + "/" + name, model + "/.tinygpt-staging/" + name);
  }
  fs::rename(model + "/checkpoint.json", model + "/.tinygpt-commit.json");
  write_bytes(model + "/notes.partial", "the user's");
  fs::permissions(model, fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                  fs::perm_options::remove);
  const auto before = with_times(model);
  CHECK(run_ok({"sample", "--model", model, "--tokens", "30", "--seed", "3"}).out == expected);
  run_ok({"eval", "--model", model, "--data", "builtin:toy", "--threads", "1"});
  run_ok({"heads", "--model", model, "--threads", "1", "--json", "--out", dir.file("pictures")});
  CHECK(with_times(model) == before);
  fs::permissions(model, fs::perms::owner_write, fs::perm_options::add);
}

TEST_CASE("endless and non-regular data files are refused before reading", "[cli][hardening]") {
  ScratchDir dir;
  const std::string fifo = dir.file("pipe");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (const std::string& data : {std::string("/dev/zero"), fifo}) {
    INFO(data);
    check_one_line_error(run_cli(tiny_train_args(dir.file("out"), {"--data", data}), {{}, false, std::chrono::milliseconds(20'000)}),
                         {data, "not a text file"});
    check_one_line_error(run_cli({"bench", "--data", data, "--steps", "1"}, {{}, false, std::chrono::milliseconds(20'000)}),
                         {data, "not a text file"});
  }
  CHECK_FALSE(fs::exists(dir.file("out")));
  const std::string model = dir.file("model");
  train_tiny_model(model);
  check_one_line_error(run_cli({"eval", "--model", model, "--data", "/dev/zero"}), {"/dev/zero", "not a text file"});
}

TEST_CASE("seeds beyond 64 bits or negative are refused, not wrapped", "[cli][hardening]") {
  ScratchDir dir;
  for (const char* seed : {"-1", "18446744073709551616", "99999999999999999999999", "1.5"}) {
    INFO(seed);
    check_one_line_error(run_cli(tiny_train_args(dir.file("out"), {"--seed", seed})), {"--seed"});
  }
  CHECK_FALSE(fs::exists(dir.file("out")));
  train_tiny_model(dir.file("out"), {"--seed", "18446744073709551615", "--steps", "2", "--eval-every", "2"});
}

TEST_CASE("config keys the model does not honour are refused by name", "[cli][hardening]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  train_tiny_model(model);
  fs::remove(model + "/checkpoint.json");  // as another tool would write it
  const json original = json::parse(read_bytes(model + "/config.json"));
  const std::vector<std::pair<std::string, json>> cases = {
      {"activation_function", "relu"}, {"activation_function", "gelu"}, {"n_inner", 100},
      {"scale_attn_weights", false},   {"scale_attn_by_inverse_layer_idx", true},
      {"n_embd", 16.5},                {"n_layer", "1"},   {"n_ctx", 8},
      {"add_cross_attention", true},   {"model_type", "gpt_neo"}, {"rotary_dim", 64}};
  for (const auto& [key, value] : cases) {
    INFO(key << " = " << value.dump());
    json config = original;
    config[key] = value;
    write_bytes(model + "/config.json", config.dump(2));
    check_one_line_error(run_cli({"sample", "--model", model, "--tokens", "3"}),
                         {model + "/config.json", key});
  }
}

TEST_CASE("trainer_state.json numbers out of range or of an unknown format are refused",
          "[cli][hardening]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run);
  fs::remove(run + "/checkpoint.json");
  const json original = json::parse(read_bytes(run + "/trainer_state.json"));
  const std::vector<std::pair<json::json_pointer, json>> cases = {
      {json::json_pointer("/step"), json::parse("18446744073709551615")},
      {json::json_pointer("/step"), 1e30},
      {json::json_pointer("/step"), 10.5},
      {json::json_pointer("/format_version"), 2},
      {json::json_pointer("/options/seed"), -1},
      {json::json_pointer("/options/batch"), "4"},
      // The command line's bounds hold for a file too: past them a run could only fail to
      // allocate (a batch, an evaluation's batches) or overflow.
      {json::json_pointer("/options/batch"), 1048577},
      {json::json_pointer("/options/grad_accum"), 1048577},
      {json::json_pointer("/options/eval_iters"), 123456789012},
      {json::json_pointer("/options/eval_every"), 1099511627777}};
  for (const auto& [pointer, value] : cases) {
    INFO(pointer.to_string() << " = " << value.dump());
    json state = original;
    state[pointer] = value;
    write_bytes(run + "/trainer_state.json", state.dump(2));
    check_one_line_error(run_cli({"train", "--resume", run, "--steps", "40"}),
                         {run + "/trainer_state.json", pointer.back()});
  }
}

TEST_CASE("resume refuses a saved batch too large for the machine by its size, on both architectures",
          "[cli][hardening][resume]") {
  ScratchDir dir;
  // A run saved with a context of 256, resumed with the largest batch the command line takes:
  // terabytes of activations.
  const std::string gpt = dir.file("gpt"), pairs = dir.file("pairs");
  const std::vector<std::string> one_step = {"--block", "256", "--batch", "1", "--steps", "1",
                                             "--eval-every", "1", "--eval-iters", "1"};
  run_ok(tiny_train_args(gpt, one_step));
  run_ok(tiny_seq2seq_args(pairs, one_step));
  for (const std::string& run : {gpt, pairs}) {
    CAPTURE(run);
    fs::remove(run + "/checkpoint.json");
    json state = json::parse(read_bytes(run + "/trainer_state.json"));
    state["options"]["batch"] = 1048576;
    write_bytes(run + "/trainer_state.json", state.dump(2));
    const DirSnapshot before = snapshot(run);
    const CliResult r = run_cli({"train", "--resume", run, "--steps", "2"});
    check_one_line_error(r, {"this run needs about", "--batch"});
    CHECK(r.exited_with(1));
    CHECK(snapshot(run) == before);
  }
}

TEST_CASE("a checkpoint as Hugging Face tools write it loads", "[cli][hardening]") {
  ScratchDir dir;
  const std::string model = dir.file("model");
  train_tiny_model(model);
  const std::string expected = run_ok({"sample", "--model", model, "--tokens", "20", "--seed", "1"}).out;
  // Names without "transformer.", the causal-mask buffers, the tied head stored, BF16 weights.
  const std::string bytes = read_bytes(model + "/model.safetensors");
  const uint64_t header_size = *reinterpret_cast<const uint64_t*>(bytes.data());
  const json header = json::parse(bytes.substr(8, header_size));
  const std::string data = bytes.substr(8 + header_size);
  json out_header = json::object();
  std::string out_data;
  const auto add = [&](const std::string& name, const std::string& dtype, const json& shape,
                       const std::string& raw) {
    out_header[name] = {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {out_data.size(), out_data.size() + raw.size()}}};
    out_data += raw;
  };
  std::string wte_raw;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string raw = data.substr(entry["data_offsets"][0], entry["data_offsets"][1].get<size_t>() - entry["data_offsets"][0].get<size_t>());
    std::string bf16;  // the upper half of each little-endian float
    for (size_t at = 0; at < raw.size(); at += 4) bf16 += raw.substr(at + 2, 2);
    add(name.substr(std::string("transformer.").size()), "BF16", entry["shape"], bf16);
    if (name == "transformer.wte.weight") add("lm_head.weight", "BF16", entry["shape"], bf16);
  }
  add("h.0.attn.bias", "F32", {1, 1, 16, 16}, std::string(16 * 16 * 4, '\0'));
  add("h.0.attn.masked_bias", "F32", json::array(), std::string(4, '\0'));
  std::string text = out_header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t n = text.size();
  write_bytes(model + "/model.safetensors", std::string(reinterpret_cast<const char*>(&n), 8) + text + out_data);
  fs::remove(model + "/checkpoint.json");
  const std::string hf = run_ok({"sample", "--model", model, "--tokens", "20", "--seed", "1"}).out;
  CHECK(hf.size() == expected.size());
}

TEST_CASE("tokenizer.json encodes to the same ids in the Hugging Face tokenizers client",
          "[cli][hardening][tokenizers]") {
  const char* modules = std::getenv("TINYGPT_NODE_MODULES");
  const std::string node_modules = modules != nullptr ? modules : TINYGPT_BINARY_DIR "/node/node_modules";
  if (std::system("node --version > /dev/null 2>&1") != 0 || !fs::exists(node_modules + "/tokenizers")) {
    WARN("skipped: node or the npm tokenizers package is absent (./setup.sh test installs them)");
    return;
  }
  ScratchDir dir;
  const std::string model = dir.file("model");
  const std::string text = "h\xC3\xA9llo w\xC3\xB6rld \xF0\x9F\x98\x80 tabs\tand\nnewlines  (x) [y].\n";
  write_bytes(dir.file("text.txt"), std::string(text) + text + text + text + text + text);
  train_tiny_model(model, {"--data", dir.file("text.txt"), "--block", "8", "--val-fraction", "0"});
  const json vocab = json::parse(read_bytes(model + "/tokenizer.json"))["model"]["vocab"];
  write_bytes(dir.file("encode.js"),
              "const {Tokenizer} = require('tokenizers');\n"
              "const fs = require('fs');\n"
              "const tok = Tokenizer.fromFile(process.argv[2]);\n"
              "tok.encode(fs.readFileSync(process.argv[3], 'utf8')).then(e => {\n"
              "  console.log(JSON.stringify(e.getIds()));\n"
              "  return tok.decode(e.getIds(), false);\n"
              "}).then(d => console.log(JSON.stringify(d)));\n");
  const std::string command = "NODE_PATH='" + node_modules + "' node '" + dir.file("encode.js") + "' '" +
                              model + "/tokenizer.json' '" + dir.file("text.txt") + "' > '" + dir.file("ids.txt") + "'";
  REQUIRE(std::system(command.c_str()) == 0);
  std::istringstream lines(read_bytes(dir.file("ids.txt")));
  std::string ids_line, decoded_line;
  std::getline(lines, ids_line);
  std::getline(lines, decoded_line);
  const json ids = json::parse(ids_line);
  // Our ids, character by character, from the vocabulary the file holds.
  std::vector<int64_t> expected;
  const std::string all = read_bytes(dir.file("text.txt"));
  for (size_t at = 0; at < all.size();) {
    const unsigned char lead = static_cast<unsigned char>(all[at]);
    const size_t len = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    expected.push_back(vocab.at(all.substr(at, len)).get<int64_t>());
    at += len;
  }
  CHECK(ids.get<std::vector<int64_t>>() == expected);
  CHECK(json::parse(decoded_line).get<std::string>() == all);
}

TEST_CASE("a refused resume leaves no lock file behind in a folder that had none",
          "[cli][hardening][lock]") {
  ScratchDir dir;
  const std::string folder = dir.file("not-a-run"), run = dir.file("run");
  fs::create_directories(folder);
  write_bytes(folder + "/notes.txt", "mine\n");
  const DirSnapshot before = snapshot(folder);
  check_one_line_error(run_cli({"train", "--resume", folder, "--steps", "10"}), {folder});
  CHECK(snapshot(folder) == before);
  CHECK_FALSE(fs::exists(folder + "/.tinygpt-run.lock"));
  // A run refused after its lock was taken: the lock it created goes too.
  train_tiny_model(run);
  fs::remove(run + "/.tinygpt-run.lock");
  fs::create_directories(dir.file("elsewhere"));
  fs::create_symlink(dir.file("elsewhere"), run + "/best");
  check_one_line_error(run_cli({"train", "--resume", run, "--steps", "30", "--keep-best"}), {"symbolic link"});
  CHECK_FALSE(fs::exists(run + "/.tinygpt-run.lock"));
}

TEST_CASE("a huge value in a checkpoint file makes a short error line that names the file",
          "[cli][hardening][errors]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run);
  fs::remove(run + "/checkpoint.json");  // no checksums: the parsers meet the values themselves
  const std::string huge(8 << 20, 'x');
  const json tokenizer = json::parse(read_bytes(run + "/tokenizer.json"));
  const json config = json::parse(read_bytes(run + "/config.json"));
  const std::string weights = read_bytes(run + "/model.safetensors");
  const auto restore = [&] {
    write_bytes(run + "/tokenizer.json", tokenizer.dump());
    write_bytes(run + "/config.json", config.dump());
    write_bytes(run + "/model.safetensors", weights);
  };
  std::vector<std::pair<std::string, std::function<void()>>> cases;
  cases.emplace_back("tokenizer.json", [&] {  // a vocabulary entry of 8 MB
    json t = tokenizer;
    t["model"]["vocab"][huge] = 99;
    write_bytes(run + "/tokenizer.json", t.dump());
  });
  cases.emplace_back("config.json", [&] {  // an unknown key of 8 MB
    json c = config;
    c[huge] = 1;
    write_bytes(run + "/config.json", c.dump());
  });
  cases.emplace_back("model.safetensors", [&] {  // a duplicate tensor name of 8 MB
    const std::string header = "{\"" + huge + "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"" + huge +
                               "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    std::string file(8, '\0');
    const uint64_t size = header.size();
    std::memcpy(file.data(), &size, 8);
    write_bytes(run + "/model.safetensors", file + header + std::string(4, '\0'));
  });
  for (const auto& [file, damage] : cases) {
    CAPTURE(file);
    restore();
    damage();
    const CliResult r = run_cli({"sample", "--model", run, "--tokens", "3"});
    check_one_line_error(r, {file});
    CHECK(r.err.size() < 2000);
  }
}

TEST_CASE("resume refuses optimiser moments training cannot produce, naming the tensor", "[cli][hardening][resume]") {
  ScratchDir dir;
  const std::string run = dir.file("run");
  train_tiny_model(run);
  fs::remove(run + "/checkpoint.json");  // no checksums: the loader meets the values themselves
  const std::string state = read_bytes(run + "/optimizer.safetensors");
  uint64_t header_size = 0;
  std::memcpy(&header_size, state.data(), 8);
  const json header = json::parse(state.substr(8, header_size));
  const auto with_value = [&](const std::string& tensor, float value) {
    std::string edited = state;
    const uint64_t at = 8 + header_size + header.at(tensor).at("data_offsets")[0].get<uint64_t>();
    std::memcpy(&edited[at], &value, 4);
    return edited;
  };
  const std::string second = "exp_avg_sq.transformer.h.0.attn.c_attn.weight";
  const std::string first = "exp_avg.transformer.wte.weight";
  REQUIRE(header.contains(second));
  REQUIRE(header.contains(first));
  for (const auto& [tensor, value, said] :
       std::vector<std::tuple<std::string, float, std::string>>{
           {second, -1.0f, "holds -1 at element 0 (a second moment is never negative)"},
           {first, std::nanf(""), "holds nan at element 0"},
           {second, INFINITY, "holds inf at element 0"}}) {
    CAPTURE(tensor, value);
    write_bytes(run + "/optimizer.safetensors", with_value(tensor, value));
    const DirSnapshot before = snapshot(run);
    check_one_line_error(run_cli({"train", "--resume", run, "--steps", "30"}),
                         {"optimizer.safetensors", "'" + tensor + "' " + said});
    CHECK(snapshot(run) == before);
  }
  write_bytes(run + "/optimizer.safetensors", state);
  run_ok({"train", "--resume", run, "--steps", "30"});
}
