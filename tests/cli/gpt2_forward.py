#!/usr/bin/env python3
"""An independent GPT-2 forward in PyTorch, written from GPT-2's definition rather than from
tinygpt's code: it reads a model folder (config.json, model.safetensors, tokenizer.json), takes
each layer's head count from its c_attn's width (a folder written by `tinygpt prune` has fewer
heads in some layers, as config.json's "pruned_heads" records), and prints one JSON line with the
mean next-token loss of --text (one window: the text's characters as the tokenizer's vocabulary
numbers them, inputs all but the last, targets all but the first).
Exits 3 when torch is missing, so that a test can skip."""
import argparse, json, math, struct, sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("torch is not installed", file=sys.stderr)
    sys.exit(3)

DTYPES = {"F32": torch.float32, "F64": torch.float64, "F16": torch.float16, "BF16": torch.bfloat16}


def read_safetensors(path):
    with open(path, "rb") as f:
        header_len = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(header_len))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = bytearray(data[begin:end])
        t = torch.frombuffer(raw, dtype=DTYPES[info["dtype"]]) if raw else torch.zeros(0)
        tensors[name.removeprefix("transformer.")] = t.reshape(info["shape"]).to(torch.float64)
    return tensors


def block(x, w, layer, d_head, eps):
    p = f"h.{layer}."
    get = lambda name: w.get(p + name)
    h = F.layer_norm(x, (x.size(-1),), get("ln_1.weight"), get("ln_1.bias"), eps)
    qkv = h @ get("attn.c_attn.weight")  # Conv1D: (in, out)
    if get("attn.c_attn.bias") is not None:
        qkv = qkv + get("attn.c_attn.bias")
    width = qkv.size(-1) // 3
    heads = width // d_head  # this layer's heads, fewer when pruned
    t = x.size(0)
    q, k, v = (qkv[:, i * width:(i + 1) * width].reshape(t, heads, d_head).transpose(0, 1) for i in range(3))
    scores = q @ k.transpose(-1, -2) / math.sqrt(d_head)
    scores = scores.masked_fill(torch.triu(torch.ones(t, t, dtype=torch.bool), 1), float("-inf"))
    z = (scores.softmax(-1) @ v).transpose(0, 1).reshape(t, width)
    out = z @ get("attn.c_proj.weight")
    if get("attn.c_proj.bias") is not None:
        out = out + get("attn.c_proj.bias")
    x = x + out
    h = F.layer_norm(x, (x.size(-1),), get("ln_2.weight"), get("ln_2.bias"), eps)
    h = h @ get("mlp.c_fc.weight") + (get("mlp.c_fc.bias") if get("mlp.c_fc.bias") is not None else 0)
    h = F.gelu(h, approximate="tanh") @ get("mlp.c_proj.weight")
    if get("mlp.c_proj.bias") is not None:
        h = h + get("mlp.c_proj.bias")
    return x + h, heads


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--text", required=True)
    a = p.parse_args()
    config = json.load(open(f"{a.model}/config.json"))
    vocab = json.load(open(f"{a.model}/tokenizer.json", encoding="utf-8"))["model"]["vocab"]
    w = read_safetensors(f"{a.model}/model.safetensors")
    ids = torch.tensor([vocab[c] for c in a.text])
    d_head = config["n_embd"] // config["n_head"]
    eps = config["layer_norm_epsilon"]
    x = w["wte.weight"][ids[:-1]] + w["wpe.weight"][: len(ids) - 1]
    heads = []
    for layer in range(config["n_layer"]):
        x, n = block(x, w, layer, d_head, eps)
        heads.append(n)
    x = F.layer_norm(x, (x.size(-1),), w.get("ln_f.weight"), w.get("ln_f.bias"), eps)
    logits = x @ w.get("lm_head.weight", w["wte.weight"]).T
    loss = F.cross_entropy(logits, ids[1:]).item()
    print(json.dumps({"loss": loss, "layer_heads": heads}))


main()
