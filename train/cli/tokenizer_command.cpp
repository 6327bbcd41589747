// tinygpt tokenizer: train a byte-level BPE vocabulary on a text, and encode or decode with any
// tokenizer tinygpt reads (a trained one, GPT-2's files, a run's character tokenizer).
#include <chrono>
#include <cstdlib>
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tinygpt/autograd/threads.hpp"
#include "tinygpt/data/bpe.hpp"
#include "tinygpt/data/text_file.hpp"
#include "tinygpt/io/atomic_file.hpp"

namespace tinygpt::cli {
namespace {

using nlohmann::json;

struct TokenizerFlags {
  std::string action;
  std::string data, text, out, tokenizer;
  int64_t vocab_size = 0;
  bool json = false;
  int threads = 0;
};

// The bytes to encode: --text as given, or --data's file as it is (any bytes).
std::string input_bytes(const TokenizerFlags& f) {
  if (f.text.empty() == f.data.empty()) throw UsageError(f.action + ": give one of --text or --data");
  return f.data.empty() ? f.text : io::read_file(f.data, data::kMaxTextBytes);
}

// Ids written as a JSON list or separated by white space.
std::vector<int64_t> parse_ids(const std::string& text, const char* flag) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '[') {
    const json ids = json::parse(text, nullptr, false);
    if (ids.is_array() && std::all_of(ids.begin(), ids.end(), [](const json& id) { return id.is_number_integer(); })) {
      return ids.get<std::vector<int64_t>>();
    }
    throw UsageError(fmt::format("{}: not a JSON list of integer ids", flag));
  }
  std::vector<int64_t> ids;
  for (size_t at = first; at != std::string::npos; at = text.find_first_not_of(" \t\r\n", at)) {
    const size_t end = std::min(text.find_first_of(" \t\r\n", at), text.size());
    const std::string word = text.substr(at, end - at);
    char* stop = nullptr;
    errno = 0;
    const long long id = std::strtoll(word.c_str(), &stop, 10);
    if (*stop != '\0' || errno == ERANGE) {
      throw UsageError(fmt::format("{}: '{}' (id {}) is not an integer", flag, excerpt(word), ids.size()));
    }
    ids.push_back(id);
    at = end;
  }
  return ids;
}

// --out: never a file of a checkpoint, nor the text it is trained on.
void check_out(const TokenizerFlags& f) {
  check_out_file(f.out, f.data, "the --data text");
  io::refuse_in_the_way(f.out, io::EntryKind::file, "the tokenizer");
}

void run_train(const TokenizerFlags& f) {
  if (f.data.empty() || f.out.empty() || f.vocab_size == 0) {
    throw UsageError("train: give --data FILE, --vocab-size N and --out FILE");
  }
  check_out(f);
  const std::string text = data::read_text_file(f.data);
  const auto start = std::chrono::steady_clock::now();
  const data::BpeTokenizer tokenizer = data::train_bpe(text, f.vocab_size);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  io::write_file_atomic(f.out, tokenizer.to_json());
  fmt::print("{}: {} tokens (256 bytes, {} merges) trained on {} bytes of {} in {:.2f} s\n", f.out,
             tokenizer.vocab_size(), tokenizer.merges().size(), text.size(), f.data, seconds);
}

void run_encode(const TokenizerFlags& f) {
  const data::TokenizerPtr tokenizer = load_tokenizer(f.tokenizer);
  const std::vector<int64_t> ids = tokenizer->encode(input_bytes(f));
  if (f.json) {
    fmt::print("{}\n", json_text(json{{"ids", ids}}));
  } else {
    fmt::print("{}\n", fmt::join(ids, " "));
  }
}

void run_decode(const TokenizerFlags& f) {
  const data::TokenizerPtr tokenizer = load_tokenizer(f.tokenizer);
  const std::string text = tokenizer->decode(parse_ids(input_bytes(f), f.data.empty() ? "--text" : "--data"));
  if (f.json) {
    fmt::print("{}\n", json_text(json{{"text", text}}));
  } else {
    std::fwrite(text.data(), 1, text.size(), stdout);  // the exact bytes, invalid UTF-8 included
  }
}

void run_tokenizer(const TokenizerFlags& f) {
  set_num_threads(f.threads);
  if (f.action == "train") {
    if (!f.tokenizer.empty() || !f.text.empty() || f.json) throw UsageError("train takes --data, --vocab-size and --out only");
    return run_train(f);
  }
  if (f.tokenizer.empty()) throw UsageError(f.action + ": give --tokenizer FILE");
  if (!f.out.empty() || f.vocab_size != 0) throw UsageError("--out and --vocab-size are train's");
  if (f.action == "encode") return run_encode(f);
  run_decode(f);
}

}  // namespace

void add_tokenizer_command(CLI::App& app) {
  auto flags = std::make_shared<TokenizerFlags>();
  CLI::App* cmd = app.add_subcommand("tokenizer", "Train a byte-level BPE vocabulary; encode or decode text with a tokenizer");
  cmd->add_option("action", flags->action, "train, encode or decode")
      ->check(CLI::IsMember({"train", "encode", "decode"}))->required();
  cmd->add_option("--data", flags->data,
                  "train: the text to learn the vocabulary from; encode: the bytes to encode; decode: the ids "
                  "(a JSON list or separated by white space)")->type_name("FILE");
  cmd->add_option("--text", flags->text, "encode: the text; decode: the ids");
  cmd->add_option("--vocab-size", flags->vocab_size, "train: tokens in the vocabulary, the 256 bytes included")
      ->check(integer_in(256, kMaxBpeVocab));
  cmd->add_option("--out", flags->out, "train: the tokenizer.json to write")->type_name("FILE");
  cmd->add_option("--tokenizer", flags->tokenizer,
                  "encode, decode: a tokenizer.json (byte-level BPE or a run's), or a folder with one or with "
                  "GPT-2's vocab.json and merges.txt")->type_name("FILE");
  cmd->add_flag("--json", flags->json, "encode: print {\"ids\": [...]}; decode: print {\"text\": ...}");
  add_threads_flag(*cmd, flags->threads, "encode splits the text among them");
  cmd->footer(wrap_words("The vocabulary: byte-level BPE with GPT-2's pre-tokenizer; each merge takes the most frequent "
                         "pair, ties to the smallest pair of ids (docs/TOKENIZERS.md).", 100));
  cmd->callback([flags] { run_tokenizer(*flags); });
}

}  // namespace tinygpt::cli
