#!/usr/bin/env python3
"""Generation reference: a plain PyTorch KV-cache loop over a GPT-2-shaped tinygpt folder, for
side-by-side decode speed with `tinygpt sample` on the same weights and threads.

  torch_generate.py --write DIR    writes a GPT-2-small-shaped folder (12 layers, 12 heads, 768
                                   wide, 1,024 positions, 50,257 tokens; random weights drawn as
                                   GPT-2 initialises them) that `tinygpt sample --model DIR` reads:
                                   config.json, model.safetensors (Hugging Face's names) and a
                                   one-character-per-token tokenizer.json, so that a prompt of N
                                   ASCII characters is N tokens
  torch_generate.py --model DIR    reads DIR/model.safetensors (the file once, into memory), then
                                   continues --prompt-tokens tokens of PROMPT by --tokens new ones
                                   with a key/value cache, batch 1, and prints one JSON line: load
                                   seconds, time to the first token, decode tokens/s (the new
                                   tokens after the first over their time), peak RSS, the ids

The defaults are the fastest loop found for PyTorch 1.13 on OpenBLAS (docs/PERFORMANCE.md,
"Generation", has each variant's figures): torch.inference_mode, keys and values written into
buffers of the context's length, OpenBLAS on one thread beside PyTorch's, and in f32 a decode
step's products as matrix-vector products (addmv) on GPT-2's (in, out) weights and on a transposed
copy of the tied embedding; in bf16, F.linear on (out, in) weights. --products and --cache select
the other variants.

There is no `transformers` package here: the GPT-2 forward (pre-LayerNorm blocks, tanh GELU, tied
LM head) is written out below. --precision bf16 converts the weights to bfloat16 once, as a user of
`model.to(torch.bfloat16)` would. Needs Debian's python3-torch; run it with /usr/bin/python3.
"""
import argparse
import json
import math
import mmap
import os
import resource
import struct
import sys
import time

# OpenBLAS reads its thread count once, when torch loads it. One unless the caller sets it: its
# threads beside PyTorch's own (--threads) oversubscribe the cores.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

PROMPT = ("It was the best of times, it was the worst of times, it was the age of wisdom, it was the "
          "age of foolishness, it was the epoch of belief, it was the epoch of incredulity, it was "
          "the season of Light, it was the season of Darkness.")

GPT2_SMALL = {"vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12, "n_head": 12}


def vocabulary(size):
    """Newline, printable ASCII, then consecutive code points from U+0100 (below the surrogates)."""
    chars = ["\n"] + [chr(c) for c in range(32, 127)]
    return chars + [chr(0x100 + i) for i in range(size - len(chars))]


def write_safetensors(path, tensors):
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, t in tensors.items():
        size = t.numel() * 4
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for t in tensors.values():
            f.write(t.contiguous().numpy().tobytes())


def write_folder(folder, seed):
    c = GPT2_SMALL
    d, n = c["n_embd"], c["n_layer"]
    gen = torch.Generator().manual_seed(seed)

    def normal(*shape, std=0.02):
        return torch.randn(*shape, generator=gen) * std

    w = {"transformer.wte.weight": normal(c["vocab_size"], d),
         "transformer.wpe.weight": normal(c["n_positions"], d, std=0.01)}
    for i in range(n):
        p = f"transformer.h.{i}."
        for ln in ("ln_1", "ln_2"):
            w[p + ln + ".weight"], w[p + ln + ".bias"] = torch.ones(d), torch.zeros(d)
        # Conv1D layout (in, out), as GPT-2's files store it; residual projections scaled down.
        for name, shape, std in (("attn.c_attn", (d, 3 * d), 0.02), ("attn.c_proj", (d, d), 0.02 / math.sqrt(2 * n)),
                                 ("mlp.c_fc", (d, 4 * d), 0.02), ("mlp.c_proj", (4 * d, d), 0.02 / math.sqrt(2 * n))):
            w[p + name + ".weight"], w[p + name + ".bias"] = normal(*shape, std=std), torch.zeros(shape[1])
    w["transformer.ln_f.weight"], w["transformer.ln_f.bias"] = torch.ones(d), torch.zeros(d)
    os.makedirs(folder, exist_ok=True)
    write_safetensors(os.path.join(folder, "model.safetensors"), w)
    config = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", **c, "n_ctx": c["n_positions"],
              "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5, "tie_word_embeddings": True,
              "torch_dtype": "float32"}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump({"vocab": vocabulary(c["vocab_size"])}, f, ensure_ascii=False)


def read_safetensors(path):
    """The whole file read once into memory (as torch.load or safetensors' load_file do)."""
    with open(path, "rb") as f:
        data = bytearray(f.read())
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    base = 8 + length
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        begin, end = meta["data_offsets"]
        out[name] = torch.frombuffer(data, dtype=torch.float32, offset=base + begin,
                                     count=(end - begin) // 4).view(meta["shape"])
    return out


class GPT2:
    """The forward with its products and its key/value cache done one of several ways
    (--products, --cache), so that the comparison is against PyTorch's fastest."""

    def __init__(self, w, config, dtype, products, cache):
        self.w = {k.removeprefix("transformer."): v.to(dtype) for k, v in w.items()}
        self.n_layer, self.n_head = config["n_layer"], config["n_head"]
        self.eps = config.get("layer_norm_epsilon", 1e-5)
        self.products, self.preallocated = products, cache == "preallocated"
        self.positions = config["n_positions"]
        matrices = [k for k in self.w if k.endswith("_attn.weight") or k.endswith("c_proj.weight")
                    or k.endswith("c_fc.weight")]
        if products == "linear":  # nn.Linear's layout, (out, in), transposed once here
            for k in matrices:
                self.w[k] = self.w[k].t().contiguous()
        # The tied LM head as a product of the same kind: (V, C) is (out, in) already; the
        # (in, out) layouts keep a transposed copy (the gemv one reads it column by column).
        self.head = self.w["wte.weight"] if products == "linear" else self.w["wte.weight"].t().contiguous()
        self.zero_bias = torch.zeros(self.head.shape[0 if products == "linear" else 1], dtype=dtype)

    def ln(self, x, name):
        return F.layer_norm(x, x.shape[-1:], self.w[name + ".weight"], self.w[name + ".bias"], self.eps)

    def product(self, x, weight, bias):
        """x @ W + b for x of shape (T, in)."""
        if self.products == "linear":
            return F.linear(x, weight, bias)
        if self.products == "gemv" and x.shape[0] == 1:
            # OpenBLAS's sgemv on the (in, out) matrix read as column-major (out, in): its fastest
            # matrix-vector kernel, where a (1, in) matrix product runs as a general gemm.
            return torch.addmv(bias, weight.t(), x[0]).unsqueeze(0)
        return torch.addmm(bias, x, weight)

    def conv1d(self, x, name):  # GPT-2's Conv1D: x @ W + b with W stored (in, out)
        return self.product(x, self.w[name + ".weight"], self.w[name + ".bias"])

    def attend(self, i, k, v, past, cache):
        """Keys and values of positions [0, past + T) of layer i, the new ones (H,T,hd) stored."""
        if self.preallocated:
            if len(cache) == i:
                shape = (k.shape[0], self.positions, k.shape[2])
                cache.append((k.new_empty(shape), v.new_empty(shape)))
            keys, values = cache[i]
            keys[:, past:past + k.shape[1]] = k
            values[:, past:past + k.shape[1]] = v
            return keys[:, :past + k.shape[1]], values[:, :past + k.shape[1]]
        if len(cache) > i:
            k = torch.cat([cache[i][0], k], dim=1)
            v = torch.cat([cache[i][1], v], dim=1)
            cache[i] = (k, v)
        else:
            cache.append((k, v))
        return k, v

    def forward(self, ids, past, cache):
        """Logits of the last position of `ids` (T,) after `past` cached positions; extends the cache."""
        t = ids.shape[0]
        x = self.w["wte.weight"][ids] + self.w["wpe.weight"][past:past + t]  # (T,C)
        c = x.shape[1]
        hd = c // self.n_head
        for i in range(self.n_layer):
            p = f"h.{i}."
            q, k, v = self.conv1d(self.ln(x, p + "ln_1"), p + "attn.c_attn").split(c, dim=1)
            q, k, v = (z.view(t, self.n_head, hd).transpose(0, 1) for z in (q, k, v))  # (H,T,hd)
            k, v = self.attend(i, k, v, past, cache)
            att = (q @ k.transpose(1, 2)) / math.sqrt(hd)  # (H,T,past+T)
            if t > 1:
                mask = torch.ones(t, past + t, dtype=torch.bool).triu(past + 1)
                att = att.masked_fill(mask, float("-inf"))
            y = (att.softmax(-1) @ v).transpose(0, 1).reshape(t, c)
            x = x + self.conv1d(y, p + "attn.c_proj")
            hmid = F.gelu(self.conv1d(self.ln(x, p + "ln_2"), p + "mlp.c_fc"), approximate="tanh")
            x = x + self.conv1d(hmid, p + "mlp.c_proj")
        x = self.ln(x[-1:], "ln_f")
        return self.product(x, self.head, self.zero_bias).float()[0]  # (V,)


def next_token(logits, top_k, temperature, gen):
    if top_k <= 0:
        return int(logits.argmax())
    values, ids = logits.topk(top_k)
    probs = F.softmax(values / temperature, dim=-1)
    return int(ids[torch.multinomial(probs, 1, generator=gen)])


def generate(args):
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    weights = read_safetensors(os.path.join(args.model, "model.safetensors"))
    with open(os.path.join(args.model, "config.json")) as f:
        config = json.load(f)
    model = GPT2(weights, config, torch.bfloat16 if args.precision == "bf16" else torch.float32,
                 args.products, args.cache)
    load = time.perf_counter() - start
    index = {ch: i for i, ch in enumerate(vocabulary(config["vocab_size"]))}
    prompt = torch.tensor([index[ch] for ch in (PROMPT * 4)[:args.prompt_tokens]])
    gen = torch.Generator().manual_seed(args.seed)
    out = []
    with torch.inference_mode():
        start = time.perf_counter()
        cache = []
        out.append(next_token(model.forward(prompt, 0, cache), args.top_k, args.temperature, gen))
        first = time.perf_counter() - start
        for past in range(args.prompt_tokens, args.prompt_tokens + args.tokens - 1):
            logits = model.forward(torch.tensor(out[-1:]), past, cache)
            out.append(next_token(logits, args.top_k, args.temperature, gen))
        total = time.perf_counter() - start
    print(json.dumps({"load_s": round(load, 4), "first_token_s": round(first, 4),
                      "decode_tokens_per_s": round((args.tokens - 1) / (total - first), 2),
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                      "precision": args.precision, "products": args.products, "cache": args.cache,
                      "threads": args.threads, "blas_threads": int(os.environ["OPENBLAS_NUM_THREADS"]),
                      "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE", ""), "top_k": args.top_k,
                      "prompt_tokens": args.prompt_tokens, "tokens": args.tokens, "ids": out}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", metavar="DIR", help="write a GPT-2-small-shaped folder and exit")
    ap.add_argument("--model", metavar="DIR", help="the folder to generate from")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--top-k", type=int, default=0, help="0: greedy")
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--precision", choices=("f32", "bf16"), default="f32")
    ap.add_argument("--products", choices=("gemv", "addmm", "linear"),
                    help="gemv: a decode step's products as OpenBLAS matrix-vector products on GPT-2's "
                         "(in, out) weights (the fastest in f32, the default there); addmm: x @ W as "
                         "(1, in) matrix products; linear: F.linear on weights transposed to (out, in) "
                         "as nn.Linear keeps them (the fastest in bf16, the default there)")
    ap.add_argument("--cache", choices=("preallocated", "cat"), default="preallocated",
                    help="keys and values written into buffers of the context's length, or torch.cat "
                         "onto the cache at every step")
    args = ap.parse_args()
    args.products = args.products or ("linear" if args.precision == "bf16" else "gemv")
    if args.write:
        write_folder(args.write, args.seed)
    elif args.model:
        generate(args)
    else:
        ap.error("give --write DIR or --model DIR")


if __name__ == "__main__":
    sys.exit(main())
