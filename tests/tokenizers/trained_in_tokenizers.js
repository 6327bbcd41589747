// A tokenizer.json that `tinygpt tokenizer train` writes, read by Hugging Face's tokenizers (npm):
// the same ids as `tinygpt tokenizer encode` on texts of every kind, and the same text decoded.
//
//   node trained_in_tokenizers.js --tinygpt build/tinygpt --work DIR
//
// Exit codes: 0 passed, 1 failed, 77 skipped (the tokenizers package is not installed).
"use strict";

const childProcess = require("child_process");
const fs = require("fs");
const path = require("path");

const SKIP = 77;

// The training text: English with contractions and numbers, accents, CJK, emoji, code, spaces.
const TRAINING = [
  "First Citizen: Before we proceed any further, hear me speak. We're all resolved; it's 1,000 to 1.\n",
  "Caf\u00e9 cr\u00e8me, na\u00efve r\u00e9sum\u00e9s and \u00c6r\u00f8 Stra\u00dfe.  Twice  spaced.\n\n",
  "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 \ud83d\ude00\ud83d\ude00 def f(x):\n    return x**2  # done\n\t\ttabs\r\n",
].join("").repeat(40);

const PROBES = [
  "First Citizen: we are accounted poor citizens, they'll say; I'd rather not.",
  "Hello, world!  Two spaces,   three, \n\n\nnewlines\t\ttabs\r\n",
  "r\u00e9sum\u00e9 \u00e9t\u00e9 \u65e5\u672c \ud83d\ude00\ud83d\udc4d 12345 3.14 x**2 {a: [1, 2]}",
  "unseen words: xylophone quagmire zephyr \u00f1and\u00fa \u0416\u0443\u043a",
  "   ",
];

function parseArgs() {
  const args = {};
  for (let i = 2; i + 1 < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
  if (!args.tinygpt || !args.work) throw new Error("usage: node trained_in_tokenizers.js --tinygpt BIN --work DIR");
  return args;
}

async function main() {
  const args = parseArgs();
  let Tokenizer;
  try {
    ({ Tokenizer } = require("tokenizers"));
  } catch (e) {
    console.log(`SKIP: the npm tokenizers package is not installed (./setup.sh test installs it): ${e.message}`);
    process.exit(SKIP);
  }
  fs.rmSync(args.work, { recursive: true, force: true });
  fs.mkdirSync(args.work, { recursive: true });
  const data = path.join(args.work, "train.txt"), out = path.join(args.work, "tokenizer.json");
  fs.writeFileSync(data, TRAINING);
  const tinygpt = (...rest) => childProcess.execFileSync(args.tinygpt, ["tokenizer", ...rest]).toString();
  tinygpt("train", "--data", data, "--vocab-size", "400", "--out", out);
  const hf = Tokenizer.fromFile(out);
  let failures = 0;
  for (const text of PROBES) {
    const ours = JSON.parse(tinygpt("encode", "--tokenizer", out, "--text", text, "--json")).ids;
    const encoding = await hf.encode(text);
    const theirs = Array.from(encoding.getIds());
    const decoded = await hf.decode(theirs, false);
    if (JSON.stringify(ours) !== JSON.stringify(theirs) || decoded !== text) {
      failures++;
      console.log(`${JSON.stringify(text)}: tinygpt ${JSON.stringify(ours)}, tokenizers ${JSON.stringify(theirs)} ` +
                  `decoding to ${JSON.stringify(decoded)}`);
    }
  }
  console.log(`${PROBES.length} texts: ${PROBES.length - failures} encode to the same ids in tokenizers and decode back`);
  process.exit(failures === 0 ? 0 : 1);
}

main().catch((e) => {
  console.log(e.stack);
  process.exit(1);
});
