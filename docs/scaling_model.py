#!/usr/bin/env python3
"""The on-paper model of docs/SCALING.md: a data-parallel step on P machines.

step = compute + all-reduce (no overlap), where
  compute    = sequences per node x T / (one node's measured tokens/s)
  all-reduce = 2 (P-1)/P x bytes / bandwidth            (reduce-scatter + all-gather, like a ring)
             + 2 (P-1) x buckets x latency               (one message per peer and bucket, each way)
efficiency = compute / step; 80 % needs compute >= 4 x all-reduce.

usage: docs/scaling_model.py NAME TOKENS_PER_S BYTES_PER_STEP T BATCH_PER_NODE [NAME ...]
(the figures a quiet `tinygpt train` and `mpirun -np 2 tinygpt train` print; see SCALING.md)
"""
import math
import sys

BUCKET = 4 << 20   # train/dist's all-reduce bucket, bytes
LATENCY = 20e-6    # seconds per message on a commodity cluster link
LINKS = {"10 Gb/s": 10e9 / 8, "100 Gb/s": 100e9 / 8}
NODES = [2, 4, 8, 16, 32, 64]


def allreduce_seconds(p, nbytes, bandwidth):
    buckets = math.ceil(nbytes / BUCKET)
    return 2 * (p - 1) / p * nbytes / bandwidth + 2 * (p - 1) * buckets * LATENCY


def main(argv):
    if len(argv) % 5 != 0 or not argv:
        sys.exit(__doc__)
    print("| config | link | P | all-reduce ms | step s | efficiency | seqs/node for 80% | global batch for 80% |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for i in range(0, len(argv), 5):
        name, tps, nbytes, t, batch = argv[i], float(argv[i + 1]), float(argv[i + 2]), int(argv[i + 3]), int(argv[i + 4])
        for link, bandwidth in LINKS.items():
            for p in NODES:
                ar = allreduce_seconds(p, nbytes, bandwidth)
                compute = batch * t / tps
                step = compute + ar
                need = max(1, math.ceil(4 * ar * tps / t))
                print(f"| {name} | {link} | {p} | {1e3 * ar:.2f} | {step:.3f} | {100 * compute / step:.1f}% | {need} | {need * p} |")


if __name__ == "__main__":
    main(sys.argv[1:])
