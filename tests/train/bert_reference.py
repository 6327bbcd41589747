"""An independent BERT masked-LM forward in PyTorch, written from Hugging Face's BertForMaskedLM
layout alone (config.json keys, model.safetensors names, (out, in) Linear weights), for the
parity test of tinygpt's encoder. Usage: bert_reference.py FOLDER ID ID ...  (ids framed with
[CLS] ... [SEP] already). Prints {"probs": [[p_0 .. p_V-1] per position]} as JSON."""
import json
import math
import struct
import sys

import torch


def load_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    buffer = data[8 + n:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", info["dtype"]
        begin, end = info["data_offsets"]
        values = torch.frombuffer(bytearray(buffer[begin:end]), dtype=torch.float32)
        tensors[name] = values.reshape(info["shape"]).double()
    return tensors


def main():
    folder, ids = sys.argv[1], [int(i) for i in sys.argv[2:]]
    config = json.load(open(folder + "/config.json"))
    w = load_safetensors(folder + "/model.safetensors")
    w = {(k if k.startswith(("bert.", "cls.")) else "bert." + k): v for k, v in w.items()}
    eps = config["layer_norm_eps"]
    heads = config["num_attention_heads"]
    hidden = config["hidden_size"]
    d = hidden // heads

    def ln(x, prefix):
        return torch.nn.functional.layer_norm(x, (hidden,), w[prefix + ".weight"], w[prefix + ".bias"], eps)

    def dense(x, prefix):
        return x @ w[prefix + ".weight"].T + w[prefix + ".bias"]

    def gelu(x):  # exact erf form
        return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))

    tokens = torch.tensor(ids)
    t = len(ids)
    e = "bert.embeddings."
    x = (w[e + "word_embeddings.weight"][tokens] + w[e + "position_embeddings.weight"][:t]
         + w[e + "token_type_embeddings.weight"][0])
    x = ln(x, e + "LayerNorm")
    for i in range(config["num_hidden_layers"]):
        p = "bert.encoder.layer.%d." % i
        q = dense(x, p + "attention.self.query").reshape(t, heads, d).transpose(0, 1)
        k = dense(x, p + "attention.self.key").reshape(t, heads, d).transpose(0, 1)
        v = dense(x, p + "attention.self.value").reshape(t, heads, d).transpose(0, 1)
        weights = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(d), dim=-1)
        context = (weights @ v).transpose(0, 1).reshape(t, hidden)
        x = ln(x + dense(context, p + "attention.output.dense"), p + "attention.output.LayerNorm")
        inner = gelu(dense(x, p + "intermediate.dense"))
        x = ln(x + dense(inner, p + "output.dense"), p + "output.LayerNorm")
    c = "cls.predictions."
    h = ln(gelu(dense(x, c + "transform.dense")), c + "transform.LayerNorm")
    logits = h @ w[e + "word_embeddings.weight"].T + w[c + "bias"]
    print(json.dumps({"probs": torch.softmax(logits, dim=-1).tolist()}))


if __name__ == "__main__":
    main()
