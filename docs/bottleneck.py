#!/usr/bin/env python3
"""The bottleneck attention removes, measured: exact match against source length on reversal.

Writes 20,000 reversal pairs of 4-32 random lowercase letters (seed 1337) and, for each length
4, 8, ..., 32, 200 held-out pairs of that length; trains one encoder-decoder per variant with
build/tinygpt (--cross none: the decoder sees only the mean of the encoder output; the others:
cross-attention scored by --cross-score), evaluates each on every length with `tinygpt eval
--json`, prints a Markdown table and draws it as an SVG line chart.

  python3 docs/bottleneck.py --steps 600 --out runs/bottleneck --svg docs/images/bottleneck.svg
"""
import argparse
import json
import os
import random
import subprocess
import sys

LENGTHS = list(range(4, 33, 4))
VARIANTS = {"none": ["--cross", "none"], "dot": [], "general": ["--cross-score", "general"],
            "concat": ["--cross-score", "concat"], "additive": ["--cross-score", "additive"]}
COLOURS = {"none": "#d62728", "dot": "#1f77b4", "general": "#2ca02c", "concat": "#9467bd",
           "additive": "#ff7f0e"}


def word(rng, n):
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(n))


def write_pairs(path, sources):
    with open(path, "w") as f:
        f.writelines(f"{s}\t{s[::-1]}\n" for s in sources)


def write_data(folder):
    rng = random.Random(1337)
    seen, train = set(), []
    while len(train) < 20000:
        s = word(rng, rng.randint(4, 32))
        if s not in seen:
            seen.add(s)
            train.append(s)
    write_pairs(os.path.join(folder, "reverse32.tsv"), train)
    for n in LENGTHS:
        held = []
        while len(held) < 200:
            s = word(rng, n)
            if s not in seen:
                seen.add(s)
                held.append(s)
        write_pairs(os.path.join(folder, f"length{n}.tsv"), held)


def svg_chart(rows, path):
    w, h, left, top, right, bottom = 560, 320, 60, 20, 110, 50
    x = lambda n: left + (n - LENGTHS[0]) / (LENGTHS[-1] - LENGTHS[0]) * (w - left - right)
    y = lambda v: top + (1 - v) * (h - top - bottom)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>']
    for v in (0, 0.25, 0.5, 0.75, 1):
        out.append(f'<line x1="{left}" x2="{w - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 8}" y="{y(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
    for n in LENGTHS:
        out.append(f'<text x="{x(n):.1f}" y="{h - bottom + 18}" text-anchor="middle">{n}</text>')
    out.append(f'<text x="{(left + w - right) / 2}" y="{h - 10}" text-anchor="middle">source length (characters)</text>')
    out.append(f'<text x="14" y="{(top + h - bottom) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(top + h - bottom) / 2})">held-out exact match</text>')
    for i, (name, matches) in enumerate(rows.items()):
        points = " ".join(f"{x(n):.1f},{y(m):.1f}" for n, m in zip(LENGTHS, matches))
        colour = COLOURS[name]
        out.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{w - right + 10}" y="{top + 16 * i + 10}" fill="{colour}">'
                   f'{"no cross-attention" if name == "none" else name}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--out", default="runs/bottleneck")
    p.add_argument("--svg", default="")
    p.add_argument("--variants", default="none,dot,additive")
    p.add_argument("--tinygpt", default="build/tinygpt")
    p.add_argument("--model", default="--layers 2 --heads 4 --d-model 64 --batch 32",
                   help="the other train flags")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    write_data(a.out)
    names = a.variants.split(",")
    # The variants train side by side, one thread each.
    training = [subprocess.Popen([a.tinygpt, "train", "--arch", "encoder-decoder", "--data",
                                  os.path.join(a.out, "reverse32.tsv"), "--block", "33", "--steps", str(a.steps),
                                  "--eval-every", str(a.steps), "--eval-iters", "1", "--threads", "1", "--force",
                                  "--out", os.path.join(a.out, name)] + a.model.split() + VARIANTS[name],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for name in names]
    if any(t.wait() != 0 for t in training):
        sys.exit("a training run failed")
    rows = {}
    for name in names:
        run = os.path.join(a.out, name)
        rows[name] = []
        for n in LENGTHS:
            r = subprocess.run([a.tinygpt, "eval", "--model", run, "--data", os.path.join(a.out, f"length{n}.tsv"),
                                "--split", "all", "--json"], check=True, capture_output=True, text=True)
            rows[name].append(json.loads(r.stdout)["exact_match"])
    print("| source length | " + " | ".join(map(str, LENGTHS)) + " |")
    print("| --- |" + " ---: |" * len(LENGTHS))
    for name, matches in rows.items():
        label = "no cross-attention (`--cross none`)" if name == "none" else f"`--cross-score {name}`"
        print(f"| {label} | " + " | ".join(f"{m:.2f}" for m in matches) + " |")
    if a.svg:
        svg_chart(rows, a.svg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
