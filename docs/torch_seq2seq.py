#!/usr/bin/env python3
"""torch.nn.Transformer at tinygpt's encoder-decoder shapes: pre-LN (norm_first), final LayerNorm
on each stack, shared token embedding tied to the output head, learned positions, GELU (tanh),
dropout 0, AdamW with gradient clipping; random pairs whose source (S) and target (T = S + 1)
fill the positions, as `tinygpt bench --arch encoder-decoder` (docs/SEQ2SEQ.md). Prints one JSON
line: ms_per_step (median of timed steps), tokens_per_s,
peak RSS. Thread settings as ../shared/bench/torch_gpt_ref.py: OPENBLAS_NUM_THREADS=2, --threads 1."""
import argparse, json, os, resource, statistics, time
os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")
import torch, torch.nn as nn, torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--layers", type=int, default=2); p.add_argument("--heads", type=int, default=4)
p.add_argument("--d-model", type=int, default=128); p.add_argument("--block", type=int, default=17)
p.add_argument("--batch", type=int, default=64); p.add_argument("--vocab", type=int, default=29)
p.add_argument("--steps", type=int, default=20); p.add_argument("--warmup", type=int, default=3)
p.add_argument("--threads", type=int, default=1)
a = p.parse_args()
torch.set_num_threads(a.threads); torch.manual_seed(0)
S, T = a.block - 1, a.block

class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.shared = nn.Embedding(a.vocab, a.d_model)
        self.enc_pos = nn.Embedding(a.block, a.d_model); self.dec_pos = nn.Embedding(a.block, a.d_model)
        self.t = nn.Transformer(a.d_model, a.heads, a.layers, a.layers, 4 * a.d_model, dropout=0.0,
                                activation=lambda x: F.gelu(x, approximate="tanh"),
                                batch_first=True, norm_first=True)
    def forward(self, src, tgt):
        x = self.shared(src) + self.enc_pos(torch.arange(src.size(1)))
        y = self.shared(tgt) + self.dec_pos(torch.arange(tgt.size(1)))
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
        h = self.t(x, y, tgt_mask=mask)
        return h @ self.shared.weight.t()

m = Seq2Seq()
opt = torch.optim.AdamW(m.parameters(), lr=2e-3, betas=(0.9, 0.98), weight_decay=0.1)
times = []
for i in range(a.warmup + a.steps):
    src = torch.randint(3, a.vocab, (a.batch, S)); tgt = torch.randint(3, a.vocab, (a.batch, T))
    t0 = time.perf_counter()
    tgt_in = torch.cat([torch.ones(a.batch, 1, dtype=torch.long), tgt[:, :-1]], 1)  # <s>, then the target
    loss = F.cross_entropy(m(src, tgt_in).view(-1, a.vocab), tgt.view(-1))
    opt.zero_grad(set_to_none=True); loss.backward()
    torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0); opt.step()
    if i >= a.warmup: times.append(time.perf_counter() - t0)
ms = 1000 * statistics.median(times)
print(json.dumps({"ms_per_step": ms, "tokens_per_s": a.batch * (S + T) / (ms / 1000),
                  "params": sum(p.numel() for p in m.parameters()),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "threads": a.threads, "torch": torch.__version__, "final_loss": loss.item()}))
