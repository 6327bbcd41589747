// Vocabulary training time of docs/TOKENIZERS.md, side by side in one sitting (not a test):
//
//   NODE_PATH=build/node/node_modules node tests/tokenizers/train_time.js \
//       --tinygpt build/tinygpt --text data/texts/tinyshakespeare.txt --work build/train-time
//
// tinygpt's byte-level BPE trainer (`tokenizer train`, the whole process: reading the text and
// writing tokenizer.json included) at 4,096 tokens, against npm `tokenizers`' BPE trainer on
// GPT-2's pre-tokenizer (in-process). npm `tokenizers` 0.23 trains only with a model's default
// trainer (30,000 tokens, every pair kept, so it stops when no pair is left), so tinygpt is also
// timed at the vocabulary that trainer reaches. Each figure is the median of three runs, taken
// in turn (one of each, three times) so that a change in the machine's load falls on all of them.
"use strict";

const childProcess = require("child_process");
const fs = require("fs");
const path = require("path");

function flag(name) {
  const at = process.argv.indexOf(name);
  if (at < 0 || at + 1 >= process.argv.length) throw new Error(`missing ${name}`);
  return process.argv[at + 1];
}

function seconds(f) {
  const start = process.hrtime.bigint();
  f();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// npm tokenizers' BPE trainer on the text; returns [seconds, vocabulary size reached].
function trainInTokenizers(textPath) {
  const { Tokenizer, BPE, byteLevelPreTokenizer } = require("tokenizers");
  const tokenizer = new Tokenizer(BPE.empty());
  tokenizer.setPreTokenizer(byteLevelPreTokenizer(false, true));
  return [seconds(() => tokenizer.train([textPath])), tokenizer.getVocabSize()];
}

function main() {
  const tinygpt = path.resolve(flag("--tinygpt"));
  const textPath = path.resolve(flag("--text"));
  const work = path.resolve(flag("--work"));
  fs.mkdirSync(work, { recursive: true });
  const train = (size) => seconds(() => childProcess.execFileSync(tinygpt, ["tokenizer", "train", "--data", textPath,
    "--vocab-size", String(size), "--out", path.join(work, `bpe${size}.json`)], { stdio: "ignore" }));

  const times = { ours4096: [], oursReached: [], theirs: [] };
  let reached = 0;
  for (let round = 0; round < 3; ++round) {
    const [theirs, size] = trainInTokenizers(textPath);
    times.theirs.push(theirs);
    reached = size;
    times.ours4096.push(train(4096));
    times.oursReached.push(train(reached));
  }
  const row = (name, xs) => console.log(`${name.padEnd(44)} median ${median(xs).toFixed(2)} s  (${xs.map((x) => x.toFixed(2)).join(", ")})`);
  row("tinygpt tokenizer train, 4,096 tokens", times.ours4096);
  row(`tinygpt tokenizer train, ${reached} tokens`, times.oursReached);
  row(`npm tokenizers BPE trainer (${reached} tokens)`, times.theirs);
}

main();
