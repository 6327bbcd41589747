#!/usr/bin/env python3
"""Trains a BERT masked LM in PyTorch on a text file with `tinygpt train --arch encoder`'s recipe, an
independent check of its training curve (docs/ENCODER.md, "Training against PyTorch"): the same
model (post-LN, or --pre-ln; learned positions, exact-erf GELU, feed-forward 4 d_model, BERT's MLM
head tied to the word embeddings), weights N(0, --init-std) as BERT's _init_weights, the same
masking (windows of --block characters at random offsets of the first 90% of the text, framed
[CLS] ... [SEP]; --mask-prob of the characters chosen, 80% [MASK], 10% a random character, 10%
kept; the loss on the chosen ones), AdamW with weight decay 0.1 on matrices only, linear warmup
then cosine to --lr / 10, gradient clipping at 1. Prints the training loss and the mean loss of 4
held-out batches every --every steps."""
import argparse, math
import torch, torch.nn as nn, torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("text")
for flag, kind, default in [("--steps", int, 2000), ("--lr", float, 2e-3), ("--warmup", int, 100),
                            ("--beta2", float, 0.98), ("--batch", int, 32), ("--block", int, 64),
                            ("--d-model", int, 64), ("--heads", int, 4), ("--layers", int, 2),
                            ("--mask-prob", float, 0.15), ("--init-std", float, 0.02),
                            ("--every", int, 100), ("--seed", int, 0)]:
    p.add_argument(flag, type=kind, default=default)
p.add_argument("--pre-ln", action="store_true")
a = p.parse_args()
torch.manual_seed(a.seed); torch.set_num_threads(1)
PAD, UNK, CLS, SEP, MASK = range(5)

text = open(a.text, encoding="utf-8").read()
ids = {c: 5 + i for i, c in enumerate(sorted(set(text)))}
V = 5 + len(ids)
data = torch.tensor([ids[c] for c in text])
train_split, val_split = data[:int(0.9 * len(data))], data[int(0.9 * len(data)):]


class Layer(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.qkv, self.out = heads, nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.attention_norm, self.ffn_norm = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(d, eps=1e-12)

    def attend(self, x):
        b, t, c = x.shape
        q, k, v = (y.view(b, t, self.heads, -1).transpose(1, 2) for y in self.qkv(x).split(c, 2))
        weights = (q @ k.transpose(-1, -2) / math.sqrt(c // self.heads)).softmax(-1)
        return self.out((weights @ v).transpose(1, 2).reshape(b, t, c))

    def feed_forward(self, x):
        return self.down(F.gelu(self.up(x)))

    def forward(self, x):
        if a.pre_ln:
            x = x + self.attend(self.attention_norm(x))
            return x + self.feed_forward(self.ffn_norm(x))
        x = self.attention_norm(x + self.attend(x))
        return self.ffn_norm(x + self.feed_forward(x))


class MaskedLM(nn.Module):
    def __init__(self):
        super().__init__()
        d = a.d_model
        self.words, self.positions = nn.Embedding(V, d), nn.Embedding(a.block + 2, d)
        self.types, self.norm = nn.Embedding(2, d), nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList(Layer(d, a.heads) for _ in range(a.layers))
        self.final_norm = nn.LayerNorm(d, eps=1e-12) if a.pre_ln else nn.Identity()
        self.transform, self.head_norm = nn.Linear(d, d), nn.LayerNorm(d, eps=1e-12)
        self.bias = nn.Parameter(torch.zeros(V))
        for name, w in self.named_parameters():
            if w.dim() == 2:
                nn.init.normal_(w, 0.0, a.init_std)
            else:
                nn.init.constant_(w, 1.0 if "norm" in name and name.endswith("weight") else 0.0)

    def forward(self, tokens):
        x = self.words(tokens) + self.positions(torch.arange(tokens.size(1))) + self.types.weight[0]
        x = self.norm(x)
        for layer in self.layers:
            x = layer(x)
        h = self.head_norm(F.gelu(self.transform(self.final_norm(x))))
        return h @ self.words.weight.t() + self.bias


def masked_batch(split):
    starts = torch.randint(len(split) - a.block, (a.batch,))
    windows = torch.stack([split[s:s + a.block] for s in starts])
    tokens = torch.cat([torch.full((a.batch, 1), CLS), windows, torch.full((a.batch, 1), SEP)], 1)
    chosen = torch.rand(tokens.shape) < a.mask_prob
    chosen[:, 0] = chosen[:, -1] = False
    how = torch.rand(tokens.shape)
    inputs = torch.where(chosen & (how < 0.8), torch.full_like(tokens, MASK), tokens)
    randomised = chosen & (how >= 0.8) & (how < 0.9)
    inputs[randomised] = torch.randint(5, V, (int(randomised.sum()),))
    return inputs, torch.where(chosen, tokens, torch.full_like(tokens, -100))


def masked_loss(model, split):
    inputs, labels = masked_batch(split)
    return F.cross_entropy(model(inputs).view(-1, V), labels.view(-1), ignore_index=-100)


def lr_at(step):
    if step < a.warmup:
        return a.lr * (step + 1) / a.warmup
    progress = (step - a.warmup) / max(1, a.steps - a.warmup)
    return a.lr / 10 + 0.5 * (a.lr - a.lr / 10) * (1 + math.cos(math.pi * progress))


model = MaskedLM()
matrices = [w for w in model.parameters() if w.dim() >= 2]
others = [w for w in model.parameters() if w.dim() < 2]
opt = torch.optim.AdamW([{"params": matrices, "weight_decay": 0.1}, {"params": others, "weight_decay": 0.0}],
                        lr=a.lr, betas=(0.9, a.beta2))
for step in range(1, a.steps + 1):
    for group in opt.param_groups:
        group["lr"] = lr_at(step - 1)
    loss = masked_loss(model, train_split)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if step % a.every == 0:
        with torch.no_grad():
            val = sum(masked_loss(model, val_split).item() for _ in range(4)) / 4
        print(f"step {step}  loss {loss.item():.4f}  val loss {val:.4f}", flush=True)
