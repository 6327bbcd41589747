#!/usr/bin/env python3
"""The bottleneck attention removes, measured: exact match against source length on reversal.

Writes 20,000 reversal pairs of 4-32 random lowercase letters (seed 1337) and, for each length
4, 8, ..., 32, 200 held-out pairs of that length; trains one encoder-decoder per variant with
build/tinygpt (--cross none: the decoder sees only the mean of the encoder output; the others:
cross-attention scored by --cross-score), evaluates each on every length with `tinygpt eval
--json`, prints a Markdown table and draws it as a PNG line chart with `tinygpt chart`.

  python3 docs/bottleneck.py --steps 600 --out runs/bottleneck --png docs/images/bottleneck.png
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


def draw_chart(rows, folder, png, tinygpt):
    """The table as `tinygpt chart` reads it (tab-separated, one column per model), drawn to png."""
    table = os.path.join(folder, "exact_match.tsv")
    names = ["no cross-attention" if name == "none" else name for name in rows]
    with open(table, "w") as f:
        f.write("\t".join(["source length (characters)"] + names) + "\n")
        for i, n in enumerate(LENGTHS):
            f.write("\t".join([str(n)] + [f"{matches[i]:.3f}" for matches in rows.values()]) + "\n")
    subprocess.run([tinygpt, "chart", "--table", table, "--out", png, "--y-name", "held-out exact match",
                    "--title", "reversal: exact match against source length"], check=True, stdout=subprocess.DEVNULL)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--out", default="runs/bottleneck")
    p.add_argument("--png", default="", help="the chart to write")
    p.add_argument("--variants", default="none,dot,general,concat,additive")
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
    if a.png:
        draw_chart(rows, a.out, a.png, a.tinygpt)
    return 0


if __name__ == "__main__":
    sys.exit(main())
