#!/usr/bin/env python3
"""A BERT masked-LM training step in PyTorch at tinygpt's encoder shapes, as `tinygpt bench --arch
encoder` times it (docs/ENCODER.md): torch.nn.TransformerEncoder with norm_first=False (BERT's
post-LN blocks), exact-erf GELU, feed-forward 4 d_model, learned positions plus token type 0 and an
embedding LayerNorm, BERT's MLM head (dense, GELU, LayerNorm, decoder tied to the word embeddings,
output bias), dropout 0, AdamW with gradient clipping; random characters in windows of --block,
framed [CLS] ... [SEP], 15% of positions predicted. Prints one JSON line: ms_per_step (median of
timed steps), tokens_per_s, peak RSS. Thread settings as docs/torch_seq2seq.py."""
import argparse, json, os, resource, statistics, time
os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")
import torch, torch.nn as nn, torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--layers", type=int, default=2); p.add_argument("--heads", type=int, default=8)
p.add_argument("--d-model", type=int, default=64); p.add_argument("--block", type=int, default=64)
p.add_argument("--batch", type=int, default=16); p.add_argument("--vocab", type=int, default=65)
p.add_argument("--steps", type=int, default=20); p.add_argument("--warmup", type=int, default=3)
p.add_argument("--threads", type=int, default=1)
a = p.parse_args()
torch.set_num_threads(a.threads); torch.manual_seed(0)
T, V = a.block + 2, a.vocab + 5  # [CLS] and [SEP]; the five specials before the characters

class MaskedLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.words = nn.Embedding(V, a.d_model); self.positions = nn.Embedding(T, a.d_model)
        self.types = nn.Embedding(2, a.d_model); self.norm = nn.LayerNorm(a.d_model, eps=1e-12)
        layer = nn.TransformerEncoderLayer(a.d_model, a.heads, 4 * a.d_model, dropout=0.0, activation="gelu",
                                           layer_norm_eps=1e-12, batch_first=True, norm_first=False)
        self.encoder = nn.TransformerEncoder(layer, a.layers, enable_nested_tensor=False)
        self.transform = nn.Linear(a.d_model, a.d_model); self.head_norm = nn.LayerNorm(a.d_model, eps=1e-12)
        self.bias = nn.Parameter(torch.zeros(V))
    def forward(self, tokens):
        x = self.words(tokens) + self.positions(torch.arange(tokens.size(1))) + self.types.weight[0]
        h = self.encoder(self.norm(x))
        return self.head_norm(F.gelu(self.transform(h))) @ self.words.weight.t() + self.bias

m = MaskedLM()
opt = torch.optim.AdamW(m.parameters(), lr=2e-3, betas=(0.9, 0.98), weight_decay=0.1)
times = []
for i in range(a.warmup + a.steps):
    chars = torch.randint(5, V, (a.batch, a.block))
    t0 = time.perf_counter()
    tokens = torch.cat([torch.full((a.batch, 1), 2), chars, torch.full((a.batch, 1), 3)], 1)
    chosen = torch.rand(a.batch, T) < 0.15
    chosen[:, 0] = chosen[:, -1] = False
    labels = torch.where(chosen, tokens, torch.full_like(tokens, -100))
    inputs = torch.where(chosen, torch.full_like(tokens, 4), tokens)
    loss = F.cross_entropy(m(inputs).view(-1, V), labels.view(-1), ignore_index=-100)
    opt.zero_grad(set_to_none=True); loss.backward()
    torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0); opt.step()
    if i >= a.warmup: times.append(time.perf_counter() - t0)
ms = 1000 * statistics.median(times)
print(json.dumps({"ms_per_step": ms, "tokens_per_s": a.batch * T / (ms / 1000),
                  "params": sum(p.numel() for p in m.parameters()),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "threads": a.threads, "torch": torch.__version__, "final_loss": loss.item()}))
